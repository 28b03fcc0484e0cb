import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { DB_FILE } from '../../paths.js';
import { DataDirLock } from '../dir-lock.js';
import { MIGRATIONS } from '../sqlite/migrations.js';
import { openSqliteStore } from '../sqlite/store.js';

/**
 * The source side of `pasarela migrate`: the SQLite store named by a data
 * directory or its database file, copied into a private snapshot that nothing
 * else writes, at the current schema.
 */

/** A refusal about the source: what to say, never a stack trace. */
export class SourceError extends Error {}

export interface SqliteSource {
  /** The live database file. */
  file: string;
  /** The directory that holds it (the data directory, when PATH was one). */
  dataDir: string;
}

/** PATH is a data directory (its pasarela.db, as `serve` keeps it) or the database file itself. */
export function locateSqlite(path: string): SqliteSource {
  const p = resolve(path);
  if (!existsSync(p)) throw new SourceError(`${p} does not exist: --from sqlite:PATH names a pasarela data directory or its ${DB_FILE}`);
  if (statSync(p).isDirectory()) {
    const file = join(p, DB_FILE);
    if (!existsSync(file)) throw new SourceError(`${p} holds no ${DB_FILE}: not a pasarela data directory (or nothing was ever stored there)`);
    return { file, dataDir: p };
  }
  return { file: p, dataDir: dirname(p) };
}

/** Who holds the data directory's serve lock, or null when no `serve` runs on it. */
export function runningServe(dataDir: string): string | null {
  return DataDirLock.holder(dataDir);
}

export interface Snapshot {
  db: Database.Database;
  /** The source's schema version; the snapshot is brought to the latest. */
  sourceVersion: number;
  version: number;
  takenAt: number;
  /** Removes the snapshot's files. */
  discard(): void;
}

/**
 * `VACUUM INTO` a temporary file: one read transaction on the live database,
 * as long as the copy takes on local disk, gives a consistent snapshot while
 * `serve` goes on writing. Reading the live file for the whole load into
 * PostgreSQL instead would hold that read transaction for minutes, and the
 * WAL could not be checkpointed past it meanwhile; the backup API restarts
 * whenever another process writes, so it may never finish under load. The
 * snapshot is ours, so an older schema is migrated there, never in the
 * source, which is only ever opened read-only.
 */
export async function takeSnapshot(src: SqliteSource): Promise<Snapshot> {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-migrate-'));
  const file = join(dir, 'snapshot.db');
  const discard = () => rmSync(dir, { recursive: true, force: true });
  try {
    const takenAt = Date.now();
    const live = open(src.file, true);
    try {
      if (!live.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()) {
        throw new SourceError(`${src.file} is an SQLite database but not a pasarela store (no schema_migrations table)`);
      }
      live.prepare('VACUUM INTO ?').run(file);
    } finally {
      live.close();
    }
    const sourceVersion = versionOf(file);
    const latest = MIGRATIONS[MIGRATIONS.length - 1]!.version;
    if (sourceVersion > latest) {
      throw new SourceError(
        `${src.file} is at schema version ${sourceVersion}, newer than this pasarela knows (${latest}): migrate with the pasarela that wrote it`,
      );
    }
    if (sourceVersion < latest) await openSqliteStore(file).close();
    const db = open(file, true);
    return { db, sourceVersion, version: latest, takenAt, discard: () => (db.close(), discard()) };
  } catch (err) {
    discard();
    throw err;
  }
}

function open(file: string, readonly: boolean): Database.Database {
  try {
    const db = new Database(file, { readonly, fileMustExist: true });
    // A file that is not SQLite fails on its first read, not on open.
    db.prepare('SELECT COUNT(*) FROM sqlite_master').get();
    return db;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_NOTADB') throw new SourceError(`${file} is not an SQLite database`);
    if (code?.startsWith('SQLITE_')) throw new SourceError(`cannot read ${file}: ${(err as Error).message}`);
    throw err;
  }
}

function versionOf(file: string): number {
  const db = open(file, true);
  try {
    return (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
  } finally {
    db.close();
  }
}

export interface QueuedMedia {
  /** Pending messages whose media bytes are in a local file. */
  messages: number;
  /** Of those, the files that exist on this machine now. */
  present: number;
  /** The directories those files are in. */
  dirs: string[];
}

/**
 * Pending messages whose base64 media wait in `<data-dir>/tmp/<msg_id>.bin`.
 * The rows name the file by its absolute path, so only a node on this
 * machine with the same data directory can still send them.
 */
export function queuedMedia(db: Database.Database): QueuedMedia {
  const files = (
    db
      .prepare("SELECT json_extract(payload, '$.file') AS f FROM mensajes WHERE estado = 'pendiente' AND json_extract(payload, '$.file') IS NOT NULL")
      .all() as Array<{
      f: string;
    }>
  ).map((r) => r.f);
  return {
    messages: files.length,
    present: files.filter((f) => existsSync(f)).length,
    dirs: [...new Set(files.map((f) => dirname(f)))].sort(),
  };
}
