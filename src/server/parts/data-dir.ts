import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DataDirLock } from '../../store/dir-lock.js';
import type { Part } from './part.js';

/** The data directory, made if missing, and its lock: first, so that two starts on a new directory cannot both make its secrets. */
export function dataDirPart(dir: string): Part<DataDirLock> {
  return {
    name: 'data directory',
    start: () => {
      makeDataDir(dir);
      const lock = DataDirLock.acquire(dir);
      return { value: lock, base: true, stop: async () => lock.release() };
    },
  };
}

/** A secret given in the environment, or kept in a 0600 file of the data directory (made on first start). */
export function secretOf(dataDir: string, given: string | undefined, envName: string, fileName: string): { token: string; source: string } {
  if (given) {
    if (given.length < 16) throw new Error(`${envName} must be at least 16 characters`);
    return { token: given, source: envName };
  }
  const file = join(dataDir, fileName);
  try {
    const t = readFileSync(file, 'utf8').trim();
    if (t.length >= 16) return { token: t, source: file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // Hex, so the token never starts with '-' and can be passed as a command-line value.
  const t = randomBytes(32).toString('hex');
  return { token: t, source: keepSecret(dataDir, fileName, t) };
}

/** Writes a secret into its 0600 file of the data directory; returns the file's path. */
export function keepSecret(dataDir: string, fileName: string, secret: string): string {
  const file = join(dataDir, fileName);
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/**
 * Makes the data directory and any missing parents (0700), one level at a
 * time, each tried once. Node's recursive mkdirSync never returns where
 * mkdir answers ENOENT under a parent that exists (/proc, some FUSE mounts):
 * it retries the parent forever, at full CPU, deaf to signals. Here a level
 * that cannot be made is an error naming the data directory.
 */
export function makeDataDir(dir: string): void {
  const abs = resolve(dir);
  const missing: string[] = [];
  // Up to the first that exists: at most one step per component of the path.
  for (let d = abs; !existsSync(d);) {
    missing.push(d);
    const parent = dirname(d);
    if (parent === d) break;
    d = parent;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      // Made by someone else meanwhile: fine, if it is a directory.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && existsSync(d) && statSync(d).isDirectory()) continue;
      throw new Error(`cannot create the data directory ${abs}: ${(err as Error).message}`);
    }
  }
  if (!statSync(abs).isDirectory()) throw new Error(`the data directory ${abs} is not a directory`);
}
