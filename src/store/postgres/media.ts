import { open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { TempFiles } from '../../core/media/media.js';
import type { AcceptedMedia, LocalMediaFile } from '../../core/ports/media.js';
import type { Db, Queryable } from './db.js';

/**
 * Accepted media on PostgreSQL: any node may send a queued message, so its
 * bytes are kept in the `medios` table, in chunks of 256 KB written and read
 * one statement at a time (memory stays at a chunk whatever the file's size,
 * and no transaction holds a pooled connection for a whole file). The
 * reference is `medios:<msg_id>`; the sending node copies the chunks into a
 * file of its tmp/ for the gateway. Staged uploads (and the files of direct
 * sends, which never leave their node) are paths in tmp/, as beside SQLite.
 */
const CHUNK = 256 * 1024;
const PREFIX = 'medios:';

/** The reference a message's payload holds for bytes kept in `medios`. */
export const mediosRef = (msgId: string): string => PREFIX + msgId;

/**
 * Copies a file into `medios`, a chunk per statement through `q` (the pool,
 * or `pasarela migrate`'s transaction); returns how many chunks.
 */
export async function copyIntoMedios(q: Queryable, msgId: string, path: string, now: number): Promise<number> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(CHUNK);
    for (let n = 0; ; n++) {
      const { bytesRead } = await fh.read(buf, 0, CHUNK, null);
      if (bytesRead === 0) return n;
      await q.query('INSERT INTO medios (msg_id, n, data, creado_at) VALUES ($1, $2, $3, $4)', [msgId, n, buf.subarray(0, bytesRead), now]);
    }
  } finally {
    await fh.close();
  }
}

export class PgMedia implements AcceptedMedia {
  constructor(
    private readonly db: Db,
    private readonly tmp: TempFiles,
  ) {}

  async keep(msgId: string, stagedPath: string, now: number): Promise<string> {
    const ref = mediosRef(msgId);
    try {
      await copyIntoMedios(this.db, msgId, stagedPath, now);
    } catch (err) {
      // The chunks written so far; if the database is gone for this too, a later sweep takes them.
      await this.remove(ref).catch(() => undefined);
      throw err;
    }
    await this.tmp.remove(stagedPath);
    return ref;
  }

  async open(ref: string): Promise<LocalMediaFile> {
    const msgId = idOf(ref);
    if (msgId === null) return { path: ref, release: async () => {} };
    const file = await this.tmp.scratch('send');
    try {
      let n = 0;
      for (; ; n++) {
        const row = await this.db.one<{ data: Buffer }>('SELECT data FROM medios WHERE msg_id = $1 AND n = $2', [msgId, n]);
        if (!row) break;
        await file.write(row.data);
      }
      await file.close();
      // None left (removed by a sweep, or by hand): no file, as a lost temp file.
      if (n === 0) await file.discard();
    } catch (err) {
      await file.discard();
      throw err;
    }
    return { path: file.path, release: () => file.discard() };
  }

  async remove(ref: string): Promise<void> {
    const msgId = idOf(ref);
    if (msgId !== null) {
      await this.db.query('DELETE FROM medios WHERE msg_id = $1', [msgId]);
      return;
    }
    // Another node's staged file (a direct send it left, resolved here) is for that node's own sweep.
    if (dirname(resolve(ref)) === this.tmp.dir) await this.tmp.remove(ref);
  }

  async sweep(keep: Iterable<string>, before: number): Promise<number> {
    const ids: string[] = [];
    const paths: string[] = [];
    for (const k of keep) {
      const id = idOf(k);
      if (id === null) paths.push(k);
      else ids.push(id);
    }
    // tmp/ is this node's alone (one process per data directory) and nothing in it is in flight before it serves.
    const local = await this.tmp.sweep(paths);
    const gone = await this.db.one<{ n: number }>(
      `WITH d AS (DELETE FROM medios WHERE creado_at < $1 AND NOT (msg_id = ANY($2::text[])) RETURNING msg_id)
       SELECT COUNT(DISTINCT msg_id)::bigint AS n FROM d`,
      [before, ids],
    );
    return local + (gone?.n ?? 0);
  }
}

function idOf(ref: string): string | null {
  return ref.startsWith(PREFIX) ? ref.slice(PREFIX.length) : null;
}
