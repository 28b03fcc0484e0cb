import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT_MARGIN_MS, sweepAcceptedMedia } from '../../src/core/media/accepted-media.js';
import { TempFiles } from '../../src/core/media/media.js';
import type { AcceptedMedia } from '../../src/core/ports/media.js';
import { LocalMedia } from '../../src/store/sqlite/media.js';
import type { Db } from '../../src/store/postgres/db.js';
import { PgMedia } from '../../src/store/postgres/media.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { tempDir } from '../helpers/server.js';
import { describeWith, postgres } from '../helpers/services.js';
import { celular, messages, newCliente, openPg, pgSchema } from './adapters.js';

/**
 * The AcceptedMedia port's contract, run against both adapters (this node's
 * tmp/ beside SQLite, chunks in PostgreSQL): what is kept reads back exactly,
 * remove and sweep take what they should and nothing else. Then what only
 * PostgreSQL promises: another node (another tmp/) reads the bytes, chunks
 * stay small, a failed copy leaves nothing, the sweep spares recent orphans.
 */

const CHUNK = 256 * 1024;
const T0 = Date.UTC(2026, 5, 1);

interface Subject {
  media: AcceptedMedia;
  tmp: TempFiles;
  close(): Promise<void>;
}

/** A staged upload of `bytes` in `tmp`, as the body parser leaves it. */
async function stage(tmp: TempFiles, bytes: Buffer): Promise<{ msgId: string; path: string }> {
  const msgId = randomUUID();
  return { msgId, path: await tmp.write(msgId, bytes) };
}

/** The bytes `ref` opens to, or null when they are gone; the local copy is released after reading. */
async function read(media: AcceptedMedia, ref: string): Promise<Buffer | null> {
  const f = await media.open(ref);
  try {
    return existsSync(f.path) ? readFileSync(f.path) : null;
  } finally {
    await f.release();
  }
}

function contract(name: string, open: () => Promise<Subject>): void {
  describe(`AcceptedMedia contract: ${name}`, () => {
    let s: Subject;
    beforeEach(async () => {
      s = await open();
    });
    afterEach(async () => {
      await s.close();
    });

    it('what is kept reads back exactly, on every open, small or of several chunks', async () => {
      for (const bytes of [randomBytes(70), randomBytes(2 * CHUNK + 12_345), randomBytes(CHUNK)]) {
        const staged = await stage(s.tmp, bytes);
        const ref = await s.media.keep(staged.msgId, staged.path, T0);
        expect((await read(s.media, ref))?.equals(bytes)).toBe(true);
        expect((await read(s.media, ref))?.equals(bytes), 'a second open (a retry)').toBe(true);
      }
    });

    it('release drops only a copy made for the send: the kept bytes stay', async () => {
      const bytes = randomBytes(CHUNK + 1);
      const staged = await stage(s.tmp, bytes);
      const ref = await s.media.keep(staged.msgId, staged.path, T0);
      const before = readdirSync(s.tmp.dir).sort();
      const f = await s.media.open(ref);
      expect(readFileSync(f.path).equals(bytes)).toBe(true);
      await f.release();
      expect(readdirSync(s.tmp.dir).sort()).toEqual(before);
      expect((await read(s.media, ref))?.equals(bytes)).toBe(true);
    });

    it('remove: the bytes are gone (open names no file), and removing again is no error; a staged file goes by its path', async () => {
      const staged = await stage(s.tmp, randomBytes(300));
      const ref = await s.media.keep(staged.msgId, staged.path, T0);
      await s.media.remove(ref);
      expect(await read(s.media, ref)).toBeNull();
      await s.media.remove(ref);
      const other = await stage(s.tmp, randomBytes(10));
      await s.media.remove(other.path);
      expect(existsSync(other.path)).toBe(false);
    });

    it('sweep keeps what `keep` names, and removes orphans kept before `before` and stray files of tmp/', async () => {
      const a = await stage(s.tmp, randomBytes(CHUNK + 5));
      const refA = await s.media.keep(a.msgId, a.path, T0);
      const b = await stage(s.tmp, randomBytes(40));
      const refB = await s.media.keep(b.msgId, b.path, T0);
      const staged = await stage(s.tmp, randomBytes(40));
      writeFileSync(join(s.tmp.dir, 'fetch-left-by-a-crash.bin'), 'x');
      expect(await s.media.sweep([refA], T0 + 1)).toBe(3);
      expect(await read(s.media, refA)).not.toBeNull();
      expect(await read(s.media, refB)).toBeNull();
      expect(existsSync(staged.path)).toBe(false);
      expect(readdirSync(s.tmp.dir).filter((f) => f.startsWith('fetch-'))).toEqual([]);
      expect(await s.media.sweep([refA], T0 + 1)).toBe(0);
    });
  });
}

contract('local directory', async () => {
  const dir = tempDir('pasarela-media-');
  const tmp = new TempFiles(join(dir, 'tmp'));
  return { media: new LocalMedia(tmp), tmp, close: async () => rmSync(dir, { recursive: true, force: true }) };
});

describeWith(postgres, 'AcceptedMedia on PostgreSQL', () => {
  let schema: Awaited<ReturnType<typeof pgSchema>>;
  let store: PgStore;
  const dirs: string[] = [];
  /** A node: its own tmp/ on the shared store. */
  const node = (db: Db = store.db) => {
    const dir = tempDir('pasarela-pgmedia-');
    dirs.push(dir);
    const tmp = new TempFiles(join(dir, 'tmp'));
    return { tmp, media: new PgMedia(db, tmp) };
  };
  beforeEach(async () => {
    schema = await pgSchema();
    store = await openPg(schema.schema);
  });
  afterEach(async () => {
    await store.close();
    await schema.drop();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  contract('postgres', async () => ({ ...node(), close: async () => {} }));

  const chunks = async (msgId: string) =>
    store.db.q<{ n: number; len: number }>('SELECT n, octet_length(data) AS len FROM medios WHERE msg_id = $1 ORDER BY n', [msgId]);

  it('another node, with another tmp/, reads the bytes; nothing of them stays on the accepting node', async () => {
    const a = node();
    const b = node();
    const bytes = randomBytes(3 * CHUNK + 1);
    const staged = await stage(a.tmp, bytes);
    const ref = await a.media.keep(staged.msgId, staged.path, T0);
    expect(readdirSync(a.tmp.dir)).toEqual([]);
    expect((await read(b.media, ref))?.equals(bytes)).toBe(true);
    expect(readdirSync(b.tmp.dir), 'the send copy is released').toEqual([]);
    await b.media.remove(ref);
    expect(await chunks(staged.msgId)).toEqual([]);
  });

  it('chunks of 256 KB at most, as many as the size needs', async () => {
    const a = node();
    const staged = await stage(a.tmp, randomBytes(2 * CHUNK + 7));
    await a.media.keep(staged.msgId, staged.path, T0);
    expect(await chunks(staged.msgId)).toEqual([
      { n: 0, len: CHUNK },
      { n: 1, len: CHUNK },
      { n: 2, len: 7 },
    ]);
  });

  it('a copy that fails midway leaves no chunk; the staged file stays for its owner to remove', async () => {
    // The database refuses the third chunk.
    let inserts = 0;
    const failing = Object.create(store.db) as Db;
    failing.query = async (sql: string, params?: unknown[]) => {
      if (sql.startsWith('INSERT INTO medios') && ++inserts === 3) throw new Error('connection lost');
      return store.db.query(sql, params);
    };
    const a = node(failing);
    const staged = await stage(a.tmp, randomBytes(4 * CHUNK));
    await expect(a.media.keep(staged.msgId, staged.path, T0)).rejects.toThrow(/connection lost/);
    expect(await chunks(staged.msgId)).toEqual([]);
    expect(existsSync(staged.path)).toBe(true);
  });

  it('the sweep spares an orphan kept at or after `before` (another node may be mid-accept)', async () => {
    const a = node();
    const old = await stage(a.tmp, randomBytes(10));
    const refOld = await a.media.keep(old.msgId, old.path, T0);
    const recent = await stage(a.tmp, randomBytes(10));
    const refRecent = await a.media.keep(recent.msgId, recent.path, T0 + 1000);
    expect(await node().media.sweep([], T0 + 1000)).toBe(1);
    expect(await read(a.media, refOld)).toBeNull();
    expect(await read(a.media, refRecent)).not.toBeNull();
  });

  it('at start: what a pending message names stays whatever its age; an orphan goes only once older than the margin', async () => {
    const c = await newCliente(store);
    const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
    if (!cel.ok) throw new Error('insert');
    const a = node();
    const pending = await stage(a.tmp, randomBytes(10));
    const refPending = await a.media.keep(pending.msgId, pending.path, T0);
    const msg = { ...messages(c.id, cel.celular.id)(), msg_id: pending.msgId, tipo: 'imagen' as const, payload: { file: refPending } };
    expect((await store.acceptMensaje(msg, { charge: false, maxPending: null }, T0)).ok).toBe(true);
    // Bytes kept, row not yet committed: an accept in flight on another node.
    const inFlight = await stage(a.tmp, randomBytes(10));
    const refInFlight = await a.media.keep(inFlight.msgId, inFlight.path, T0);

    const b = node();
    expect(await sweepAcceptedMedia(store, b.media, T0 + ACCEPT_MARGIN_MS)).toBe(0);
    expect(await read(b.media, refInFlight)).not.toBeNull();
    expect(await sweepAcceptedMedia(store, b.media, T0 + ACCEPT_MARGIN_MS + 1)).toBe(1);
    expect(await read(b.media, refInFlight)).toBeNull();
    expect(await read(b.media, refPending)).not.toBeNull();
  });
});
