import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { OutboundMessage } from '../../src/core/ports/gateway.js';
import { pgSchema } from '../contract/adapters.js';
import { expectError } from '../helpers/expect.js';
import { RawRequest } from '../helpers/raw-http.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { editCelular, linkedLine, send, waitEstado, type Line } from '../server/send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Queued media on PostgreSQL is readable by every node (issue 11): a node
 * accepts a base64 image (JSON) and a document (form-encoded) while the
 * line's hours are closed, stops, and its data directory is deleted; a node
 * with another data directory on the same schema sends both with the exact
 * bytes. Then uploads that fail (too large midway, the client gone midway,
 * refused after the bytes were kept) leave no chunk and no message.
 */

const IMAGE = '/api/mensaje_enviar_imagen_base64.php';
const DOC = '/api/mensaje_enviar_documento_base64.php';
const STICKER = '/api/mensaje_enviar_sticker_base64.php';
const KB = 1024;
/** 03:00 UTC: outside the 09:00-18:00 the line is given, so its queue waits. */
const NIGHT = Date.UTC(2026, 5, 1, 3, 0);
const HOURS = 60 * 60 * 1000;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const png = (size: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(size - 8)]);
const pdf = (size: number) => Buffer.concat([Buffer.from('%PDF-1.4\n', 'latin1'), randomBytes(size - 9)]);
const webp = (size: number) => Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.alloc(4), Buffer.from('WEBPVP8L', 'latin1'), randomBytes(size - 16)]);

const servers: TestServer[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  for (const c of cleanups.reverse()) await c();
});

/** A schema of its own: the store URL for serve, and an SQL client on it for the checks. */
async function schemaStore(): Promise<{ url: string; sql: <T>(text: string, params?: unknown[]) => Promise<T[]> }> {
  const s = await pgSchema();
  const u = new URL(schemaUrl(s.schema));
  const client = new pg.Client({ connectionString: u.toString() });
  await client.connect();
  cleanups.push(s.drop, () => client.end());
  return { url: u.toString(), sql: async <T>(text: string, params: unknown[] = []) => (await client.query(text, params)).rows as T[] };
}

async function serve(url: string, dataDir: string, clock: ManualClock): Promise<TestServer> {
  const s = await startTestServer({ store: url, dataDir, clock, tz: 'UTC', healthIntervalMs: 0, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  servers.push(s);
  return s;
}

const tmpFiles = (dataDir: string) => (existsSync(join(dataDir, 'tmp')) ? readdirSync(join(dataDir, 'tmp')) : []);

describeWith(postgres, 'queued media on PostgreSQL, sent by another node', () => {
  it('a node accepts, stops and loses its disk; a node with another data directory sends the exact bytes', async () => {
    const db = await schemaStore();
    const clock = new ManualClock(NIGHT);
    const dir1 = tempDir();
    const dir2 = tempDir();
    cleanups.push(
      () => rmSync(dir1, { recursive: true, force: true }),
      () => rmSync(dir2, { recursive: true, force: true }),
    );

    const s1 = await serve(db.url, dir1, clock);
    const line = await linkedLine(s1, { saldo: 10 });
    await editCelular(s1, line, { hora_inicio_permitido: '09:00', hora_fin_permitido: '18:00' });
    const image = png(600 * KB);
    const doc = pdf(1100 * KB);
    const a = await send(s1, line, IMAGE, { destinatario: '525512345678', imageBase64: image.toString('base64'), caption: 'foto' });
    expect(a.status, a.text).toBe(200);
    const b = await send(s1, line, DOC, { destinatario: '525598765432', filename: 'contrato.pdf', documentBase64: doc.toString('base64') }, { form: true });
    expect(b.status, b.text).toBe(200);
    expect([a.body.modo, b.body.modo]).toEqual(['cola', 'cola']);

    // The bytes are in the database already, in 256 KB chunks, and nowhere on the accepting node's disk.
    const chunks = await db.sql<{ msg_id: string; n: number; bytes: number }>(
      'SELECT msg_id, COUNT(*)::int AS n, SUM(octet_length(data))::int AS bytes FROM medios GROUP BY msg_id ORDER BY bytes',
    );
    expect(chunks).toEqual([
      { msg_id: a.body.msg_id, n: 3, bytes: image.length },
      { msg_id: b.body.msg_id, n: 5, bytes: doc.length },
    ]);
    expect(tmpFiles(dir1)).toEqual([]);
    await s1.stop();
    rmSync(dir1, { recursive: true, force: true });

    const s2 = await serve(db.url, dir2, clock);
    const got = new Map<string, Buffer>();
    const sim = s2.core.gateway;
    const sendOn = sim.send.bind(sim);
    sim.send = async (instancia: string, msg: OutboundMessage) => {
      if (msg.filePath) got.set(msg.msgId, readFileSync(msg.filePath));
      return sendOn(instancia, msg);
    };
    // Morning: the line's hours open and node 2's worker sends both.
    clock.advance(7 * HOURS);
    for (const r of [a, b]) await waitEstado(s2, r.body.msg_id, ['enviado', 'entregado', 'leido'], 10_000);
    expect(got.get(a.body.msg_id)?.length).toBe(image.length);
    expect(sha(got.get(a.body.msg_id)!)).toBe(sha(image));
    expect(got.get(b.body.msg_id)?.length).toBe(doc.length);
    expect(sha(got.get(b.body.msg_id)!)).toBe(sha(doc));

    // A send's end removes its chunks; node 2's copies for the gateway are gone too.
    await until(async () => (await db.sql('SELECT 1 FROM medios')).length === 0, { what: 'the chunks of the sent messages removed' });
    expect(tmpFiles(dir2)).toEqual([]);
  });
});

describeWith(postgres, 'failed media uploads on PostgreSQL leave nothing', () => {
  let s: TestServer;
  let db: Awaited<ReturnType<typeof schemaStore>>;
  let line: Line;
  beforeAll(async () => {
    db = await schemaStore();
    s = await serve(db.url, tempDir(), new ManualClock(Date.UTC(2026, 5, 1, 12, 0)));
    line = await linkedLine(s, { saldo: 10 });
  });
  const nothingLeft = async (celularId: number) => {
    expect(await db.sql('SELECT msg_id FROM medios')).toEqual([]);
    expect(await db.sql('SELECT msg_id FROM mensajes WHERE celular_id = $1', [celularId])).toEqual([]);
    expect(tmpFiles(s.dataDir)).toEqual([]);
  };

  it('a file larger than its type allows, found midway through the body: 413, no chunk, no message', async () => {
    const r = await send(s, line, STICKER, { destinatario: '525512345678', stickerBase64: webp(1536 * KB).toString('base64') });
    expectError(r, 413, 105);
    await nothingLeft(line.celularId);
  });

  it('the client gone midway through the body: no chunk, no message, the staged part removed', async () => {
    const body = Buffer.from(JSON.stringify({ destinatario: '525512345678', imageBase64: png(900 * KB).toString('base64') }));
    const r = new RawRequest(s.url, 'POST', IMAGE, {
      'Content-Type': 'application/json',
      'Content-Length': body.length,
      Authorization: `Bearer ${line.celularKey}`,
    });
    await r.write(body.subarray(0, body.length >> 1));
    // Part of the file is staged on this node's disk when the client goes.
    await until(() => tmpFiles(s.dataDir).length > 0, { what: 'part of the upload staged' });
    r.destroy();
    await until(() => tmpFiles(s.dataDir).length === 0, { what: 'the staged part removed' });
    await nothingLeft(line.celularId);
    expect((await api(s.url, 'GET', '/health')).status).toBe(200);
  });

  it('refused once its bytes were kept (no balance): 402, and the chunks are removed', async () => {
    const broke = await linkedLine(s, { saldo: 0 });
    const r = await send(s, broke, IMAGE, { destinatario: '525512345678', imageBase64: png(300 * KB).toString('base64') });
    expectError(r, 402, 300);
    await nothingLeft(broke.celularId);
  });
});
