import type { Command } from 'commander';
import { createWriteStream, existsSync } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { API } from '../../core/api/api-routes.js';
import type { Ctx } from '../context.js';
import { CliError, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { CtxOf } from '../main.js';
import { emit, printFields } from '../output.js';

export interface BackupOptions {
  file: string;
  force?: boolean;
}

/** `admin backup FILE`: the server's snapshot, checked against its SHA-256, on disk before it takes FILE's name. */
export async function runBackup(o: BackupOptions, ctx: Ctx): Promise<void> {
  const { file } = o;
  const dest = resolve(file);
  if (!o.force && existsSync(dest)) throw usage(`${file} exists; give --force to replace it`);
  const partial = `${dest}.partial`;
  const cred = ctx.adminCredential();
  const sink = createWriteStream(partial, { mode: 0o600 });
  let got;
  try {
    got = await ctx.client().download('POST', API.adminBackup, sink, { key: cred.token, timeoutMs: 10 * 60_000 });
  } catch (err) {
    sink.destroy();
    await unlink(partial).catch(() => {});
    if (err instanceof CliError) {
      if (err.exitCode === EXIT.AUTH) throw new CliError(`${err.message} (${cred.from})`, EXIT.AUTH, err.body);
      throw err;
    }
    throw new CliError(`cannot write ${partial}: ${(err as Error).message}`, EXIT.ERROR);
  }
  const want = String(got.headers['x-pasarela-sha256'] ?? '');
  const length = Number(got.headers['content-length'] ?? NaN);
  if (want !== got.sha256 || (Number.isFinite(length) && length !== got.bytes)) {
    await unlink(partial).catch(() => {});
    throw new CliError(
      `the backup arrived damaged (${got.bytes} bytes, SHA-256 ${got.sha256}; the server sent ${want || 'no SHA-256'}); nothing was written`,
      EXIT.SERVER,
    );
  }
  // On disk before it takes the name.
  const fh = await open(partial, 'r+');
  await fh.sync();
  await fh.close();
  if (o.force) await rename(partial, dest);
  else {
    // A hard link fails if FILE appeared meanwhile: never replaced without --force.
    try {
      await link(partial, dest);
    } catch (err) {
      await unlink(partial).catch(() => {});
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw usage(`${file} exists; give --force to replace it`);
      throw err;
    }
    await unlink(partial);
  }
  const schema = Number(got.headers['x-pasarela-schema'] ?? NaN);
  const b = { ok: true, file: dest, bytes: got.bytes, sha256: got.sha256, schema_version: Number.isFinite(schema) ? schema : null };
  emit(ctx, b, () =>
    printFields(ctx.term, [
      ['file', b.file],
      ['bytes', b.bytes],
      ['sha256', b.sha256],
      ['schema_version', b.schema_version],
    ]),
  );
}

/** `admin backup`. */
export function registerAdminBackup(admin: Command, ctxOf: CtxOf): void {
  admin
    .command('backup <file>')
    .description('a consistent copy of the SQLite store, taken while the server serves; see docs/operations.md "Backups and restore"')
    .option('--force', 'replace FILE if it exists')
    .action((file: string, o: { force?: boolean }, cmd: Command) => runBackup({ file, ...o }, ctxOf(cmd)));
}
