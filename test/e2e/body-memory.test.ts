import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { RawRequest } from '../helpers/raw-http.js';
import { api, type ApiResponse } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';

/**
 * Bounded memory per request, against the real binary (issue 9): a 50 MB
 * base64 document (JSON) and a form-encoded one go through `pasarela serve`
 * while its peak RSS is read from /proc; the file queued for the gateway has
 * the SHA-256 of what was sent; on PostgreSQL the same bound holds while the
 * bytes go into the database in chunks. Then the body timeouts, set by flags.
 * `npm run build` must have run first (bin/pasarela imports dist/).
 */

const MB = 1024 * 1024;
const DOC = '/api/mensaje_enviar_documento_base64.php';
const root = mkdtempSync(join(tmpdir(), 'pasarela-body-'));

afterAll(() => {
  killAllServeChildren();
  rmSync(root, { recursive: true, force: true });
});

async function ok(p: Promise<ApiResponse>, status = 200): Promise<any> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** A linked line: its celular key, and a way to hold its queue (a cap of one send a minute). */
async function lineOf(s: ServeChild, dataDir: string): Promise<{ key: string; hold: () => Promise<void> }> {
  const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const cli = await ok(api(s.url, 'POST', '/admin/clientes', { key: admin, json: { nombre: 'Mem', email: `mem${Date.now()}@example.com`, saldo: 1000 } }), 201);
  const cel = await ok(
    api(s.url, 'POST', '/api/celular_crear.php', { key: cli.api_key, json: { numero: `52155${10_000_000 + Math.floor(Math.random() * 89_999_999)}` } }),
    201,
  );
  await ok(api(s.url, 'POST', `/api/celular_qr.php?id=${cel.celular_id}`, { key: cli.api_key }));
  await ok(api(s.url, 'POST', '/admin/sim/scan', { key: admin, json: { celular_id: cel.celular_id } }));
  const hold = async () => {
    await ok(api(s.url, 'POST', `/api/celular_editar.php?id=${cel.celular_id}`, { key: cli.api_key, json: { max_envios_por_minuto: 1 } }));
  };
  return { key: cel.api_key as string, hold };
}

/** kB from /proc/<pid>/status. */
function procKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

/** The server's peak RSS growth while `fn` runs, in bytes (VmHWM after clear_refs 5 resets the peak). */
async function peakGrowth(pid: number, fn: () => Promise<void>): Promise<number> {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const base = procKb(pid, 'VmRSS');
  await fn();
  return (procKb(pid, 'VmHWM') - base) * 1024;
}

const pdf = (size: number) => Buffer.concat([Buffer.from('%PDF-1.4\n', 'latin1'), randomBytes(size - 9)]);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * A line's celular key, after a direct send (a warm-up, so that first-use costs
 * are not counted) and a cap of one a minute: the sends that follow stay queued.
 */
async function heldLine(s: ServeChild, dataDir: string): Promise<string> {
  const line = await lineOf(s, dataDir);
  await ok(
    api(s.url, 'POST', DOC, {
      key: line.key,
      json: { destinatario: '525598765432', filename: 'w.pdf', documentBase64: pdf(2 * MB).toString('base64'), directo: 1 },
    }),
  );
  await line.hold();
  return line.key;
}

/** Posts a document body, accepted; its msg_id and the server's peak RSS growth meanwhile (logged as `what`). */
async function postMeasured(
  s: ServeChild,
  key: string,
  body: Buffer,
  contentType: string,
  what: string,
  fileBytes: number,
): Promise<{ msgId: string; growth: number }> {
  let r: ApiResponse | undefined;
  const growth = await peakGrowth(s.child.pid!, async () => {
    r = await api(s.url, 'POST', DOC, { key, raw: body, contentType });
  });
  expect(r!.status, r!.text).toBe(200);
  console.log(`peak RSS growth for ${what}: ${(growth / MB).toFixed(1)} MB (${(growth / fileBytes).toFixed(2)}x)`);
  return { msgId: r!.body.msg_id as string, growth };
}

describe('a 50 MB base64 document through pasarela serve', () => {
  const dataDir = join(root, 'mem');
  let s: ServeChild;
  let key: string;
  beforeAll(async () => {
    s = await startServeChild(dataDir, []);
    // The queued sends below keep their file in tmp/.
    key = await heldLine(s, dataDir);
  });
  afterAll(async () => {
    if (s) await stop(s);
  });

  const tmpFile = (msgId: string) => join(dataDir, 'tmp', `${msgId}.bin`);

  it('JSON: accepted; peak RSS grows by well under the file size; the queued file has the same SHA-256', async () => {
    const file = pdf(50 * MB);
    const body = Buffer.from(JSON.stringify({ destinatario: '525512345678', filename: 'grande.pdf', documentBase64: file.toString('base64') }));
    const { msgId, growth } = await postMeasured(s, key, body, 'application/json', 'a 50 MB document (JSON)', file.length);
    expect(growth).toBeLessThan(0.5 * file.length);
    expect(sha(readFileSync(tmpFile(msgId)))).toBe(sha(file));
  });

  it('form-encoded (40 MB): accepted; the same bound; the same SHA-256', async () => {
    const file = pdf(40 * MB);
    const body = Buffer.from(new URLSearchParams({ destinatario: '14155552671', filename: 'f.pdf', data_base64: file.toString('base64') }).toString());
    const { msgId, growth } = await postMeasured(s, key, body, 'application/x-www-form-urlencoded', 'a 40 MB document (form)', file.length);
    expect(growth).toBeLessThan(0.5 * file.length);
    expect(sha(readFileSync(tmpFile(msgId)))).toBe(sha(file));
  });
});

describeWith(postgres, 'a 50 MB base64 document through pasarela serve --store postgres://', () => {
  const dataDir = join(root, 'mem-pg');
  let s: ServeChild;
  let key: string;
  let schema: Awaited<ReturnType<typeof pgSchema>>;
  let sql: pg.Client;
  beforeAll(async () => {
    schema = await pgSchema();
    const u = new URL(schemaUrl(schema.schema));
    sql = new pg.Client({ connectionString: u.toString() });
    await sql.connect();
    s = await startServeChild(dataDir, ['--store', u.toString()]);
    key = await heldLine(s, dataDir);
  });
  afterAll(async () => {
    if (s) await stop(s);
    await sql?.end();
    await schema?.drop();
  });

  /** The SHA-256 of a message's chunks, read one at a time. */
  async function keptSha(msgId: string): Promise<string> {
    const h = createHash('sha256');
    for (let n = 0; ; n++) {
      const r = await sql.query<{ data: Buffer }>('SELECT data FROM medios WHERE msg_id = $1 AND n = $2', [msgId, n]);
      if (r.rows.length === 0) return h.digest('hex');
      h.update(r.rows[0]!.data);
    }
  }

  it('JSON, queued: peak RSS grows by less than the file; the chunks in the database have its SHA-256; tmp/ keeps nothing', async () => {
    const file = pdf(50 * MB);
    const body = Buffer.from(JSON.stringify({ destinatario: '525512345678', filename: 'grande.pdf', documentBase64: file.toString('base64') }));
    const { msgId, growth } = await postMeasured(s, key, body, 'application/json', 'a 50 MB document kept in PostgreSQL (JSON)', file.length);
    // Higher than on SQLite: each chunk's statement is built in driver buffers that V8 frees once about
    // 32 MB of them are garbage, whatever the file's size. Holding the file would grow by more than the file.
    expect(growth).toBeLessThan(0.8 * file.length);
    expect(await keptSha(msgId)).toBe(sha(file));
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
  });
});

describe('body timeouts set by flags', () => {
  const dataDir = join(root, 'slow');
  let s: ServeChild;
  let key: string;
  beforeAll(async () => {
    s = await startServeChild(dataDir, ['--body-timeout', '1s', '--body-min-rate', '500', '--request-timeout', '30s']);
    key = (await lineOf(s, dataDir)).key;
  });
  afterAll(async () => {
    if (s) await stop(s);
  });
  const head = (len: number) => ({ 'Content-Type': 'application/json', 'Content-Length': len, Authorization: `Bearer ${key}` });

  it('a body that sends one byte and stalls: 408 JSON, connection closed, no temp file', async () => {
    const r = new RawRequest(s.url, 'POST', DOC, head(1000));
    await r.write('{');
    const res = await r.response();
    expect(res.status).toBe(408);
    expect(res.body).toMatchObject({ ok: false, api_codigo: 109 });
    expect(res.body.error).toMatch(/too slowly/);
    await r.closedByServer();
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
  });

  it('a trickle (a byte every 200 ms) is cut too; on a small JSON route as well', async () => {
    const r = new RawRequest(s.url, 'POST', '/api/mensaje_enviar_texto.php', head(1000));
    for (let i = 0; i < 100 && !r.parsed() && !r.closed; i++) {
      await r.write(' ');
      await new Promise((res) => setTimeout(res, 200));
    }
    const res = await r.response();
    expect(res.status).toBe(408);
    expect(r.sent).toBeLessThan(1000);
  });

  it('an upload at a normal rate that lasts longer than --body-timeout is not cut', async () => {
    const body = Buffer.from(JSON.stringify({ destinatario: '525598765432', filename: 'a.pdf', documentBase64: pdf(300_000).toString('base64'), directo: 1 }));
    const r = new RawRequest(s.url, 'POST', DOC, head(body.length));
    const piece = Math.ceil(body.length / 20);
    for (let at = 0; at < body.length; at += piece) {
      await r.write(body.subarray(at, at + piece));
      await new Promise((res) => setTimeout(res, 100));
    }
    const res = await r.response();
    expect(res.status, res.text).toBe(200);
    r.destroy();
  });
});
