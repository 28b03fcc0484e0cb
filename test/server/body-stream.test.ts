import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRequest } from '../helpers/raw-http.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectError } from '../helpers/expect.js';
import { b64, dataUri, linkedLine, mensaje, PDF, PNG, send, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Base64 bodies read as a stream (issue 9): authentication before the body,
 * the unauthenticated-byte bounds, and the refusals of a body refused
 * mid-way: each a JSON error, no 500, no temp file left.
 */

const DOC = '/api/mensaje_enviar_documento_base64.php';
const IMG = '/api/mensaje_enviar_imagen_base64.php';
const DEST = '525598765432';
const dests = ['525598765432', '525512345678', '14155552671', '34612345678', '525587654321', '525511223344'];
let destSeq = 0;
const nextDest = () => dests[destSeq++ % dests.length]!;

let s: TestServer;
let L: Line;
const tmpFiles = () => readdirSync(join(s.dataDir, 'tmp'));
const tmpEmpty = () => until(() => tmpFiles().length === 0, { what: 'an empty tmp folder', timeoutMs: 3000 });
const noServerErrors = () => expect(s.logs.filter((l) => /"level":50/.test(l))).toEqual([]);

/** A PDF of about `n` bytes. */
const pdfOf = (n: number) => Buffer.concat([PDF, Buffer.alloc(Math.max(0, n - PDF.length), 0x0a)]);

beforeAll(async () => {
  s = await startTestServer({ queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 20, simReadMs: 40 });
  L = await linkedLine(s, { saldo: 1000 });
});
afterAll(async () => {
  await s?.stop();
});

function jsonHead(len: number, key?: string): Record<string, string | number> {
  return { 'Content-Type': 'application/json', 'Content-Length': len, ...(key ? { Authorization: `Bearer ${key}` } : {}) };
}

describe('authentication before the body', () => {
  it('a wrong Bearer key: 401 JSON while the client is still uploading, and the connection closes', async () => {
    const body = Buffer.from(JSON.stringify({ destinatario: DEST, filename: 'a.pdf', documentBase64: b64(pdfOf(8 * 1024 * 1024)) }));
    const r = new RawRequest(s.url, 'POST', DOC, jsonHead(body.length, 'WA_99999_notakey'));
    await r.write(body.subarray(0, 64 * 1024));
    const res = await r.response();
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ ok: false, api_codigo: 200 });
    expect(res.headers.connection).toBe('close');
    await r.closedByServer();
    expect(r.sent).toBeLessThan(body.length);
    await tmpEmpty();
  });

  it('a key in the body is honoured, before or after the file; a wrong one before the file is refused mid-upload', async () => {
    const file = b64(pdfOf(200_000));
    const before = await api(s.url, 'POST', DOC, {
      json: { key: L.celularKey, destinatario: nextDest(), filename: 'a.pdf', documentBase64: file, directo: 1 },
    });
    expect(before.status, before.text).toBe(200);
    const after = await api(s.url, 'POST', DOC, { json: { destinatario: nextDest(), filename: 'a.pdf', documentBase64: file, key: L.celularKey, directo: 1 } });
    expect(after.status, after.text).toBe(200);
    const form = await api(s.url, 'POST', DOC, { form: { key: L.celularKey, destinatario: nextDest(), filename: 'a.pdf', data_base64: file, directo: '1' } });
    expect(form.status, form.text).toBe(200);

    const body = Buffer.from(JSON.stringify({ key: 'WA_99999_notakey', destinatario: DEST, filename: 'a.pdf', documentBase64: b64(pdfOf(8 * 1024 * 1024)) }));
    const r = new RawRequest(s.url, 'POST', DOC, { 'Content-Type': 'application/json', 'Content-Length': body.length });
    const res = await r.sendUntilAnswered(body);
    expectError({ status: res.status, body: res.body, headers: new Headers(), text: res.text }, 401, 200);
    expect(r.sent).toBeLessThan(body.length);
    r.destroy();
    await tmpEmpty();
  });

  it('the legacy token in the body before the file authenticates; a client key there is 403 at once', async () => {
    const ok = await api(s.url, 'POST', '/panel/api_wa.php', {
      json: { token: L.gatewayToken, destinatario: nextDest(), mensaje: 'x', tipomime: 'image/png', mime: b64(PNG), modo: 'DIRECTO' },
    });
    expect(ok.status, ok.text).toBe(200);
    const body = Buffer.from(
      JSON.stringify({ token: L.clientKey, destinatario: DEST, mensaje: 'x', tipomime: 'application/pdf', mime: b64(pdfOf(8 * 1024 * 1024)) }),
    );
    const r = new RawRequest(s.url, 'POST', '/api/api-legacy.php', { 'Content-Type': 'application/json', 'Content-Length': body.length });
    const res = await r.sendUntilAnswered(body);
    expect(res.status).toBe(403);
    expect(r.sent).toBeLessThan(body.length);
    r.destroy();
    await tmpEmpty();
  });
});

describe('unauthenticated body bytes: per address and server-wide', () => {
  let b: TestServer;
  beforeAll(async () => {
    b = await startTestServer({ trustProxy: 1, limits: { unauthPerAddress: 200_000, unauthServerWide: 300_000 } });
  });
  afterAll(async () => {
    await b?.stop();
  });

  const open = (ip: string, path: string, len: number) =>
    new RawRequest(b.url, 'POST', path, { 'Content-Type': 'application/json', 'Content-Length': len, 'X-Forwarded-For': ip });
  /** A body of `len` from `ip` (no key: 401 once read, 429/503 when the budget refuses it); its bytes are freed when it ends. */
  const probe = (ip: string, len: number) =>
    api(b.url, 'POST', '/api/mensaje_enviar_texto.php', { json: { destinatario: DEST, mensaje: 'x'.repeat(len) }, headers: { 'X-Forwarded-For': ip } });

  it('past the address bound 429 with retry_after, past the server bound 503; on any route with a body; freed when a body ends', async () => {
    const a = open('10.0.0.1', '/api/mensaje_enviar_texto.php', 900_000);
    await a.write(Buffer.alloc(160_000, 0x20));
    // The server has counted a's bytes once 50 KB more from the same address go past its 200 KB.
    await until(async () => (await probe('10.0.0.1', 50_000)).status === 429, { what: "a's bytes counted", timeoutMs: 10_000 });
    const other = open('10.0.0.2', DOC, 5_000_000);
    const busy = await other.sendUntilAnswered(Buffer.alloc(200_000, 0x20), 16 * 1024);
    expect(busy.status).toBe(503);
    expect(busy.body).toMatchObject({ ok: false, api_codigo: 902, retry_after: expect.any(Number) });
    expect(busy.headers.connection).toBe('close');
    const same = open('10.0.0.1', IMG, 5_000_000);
    const limited = await same.sendUntilAnswered(Buffer.alloc(100_000, 0x20), 16 * 1024);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ ok: false, api_codigo: 203, retry_after: expect.any(Number) });
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    // The first body ends (the client gives up): its bytes no longer count.
    a.destroy();
    await until(async () => (await probe('10.0.0.1', 150_000)).status === 401, { what: "a's bytes freed", timeoutMs: 10_000 });
    for (const r of [other, same]) r.destroy();
  });
});

describe('refused mid-body: a JSON error, no 500, no temp file', () => {
  it('invalid base64 after many valid bytes: 400 108', async () => {
    const r = await send(s, L, DOC, { destinatario: DEST, filename: 'a.pdf', documentBase64: `${b64(pdfOf(300_000))}*AAA` });
    expectError(r, 400, 108);
    expect(r.body.error).toMatch(/'\*' at offset 400000/);
    await tmpEmpty();
  });

  it('a bad data URI 400 108; a data URI of a type outside the list 415 106 before its data', async () => {
    expectError(await send(s, L, IMG, { destinatario: DEST, imageBase64: `data:image/png,${b64(PNG)}` }), 400, 108);
    expectError(await send(s, L, IMG, { destinatario: DEST, imageBase64: dataUri('image/svg+xml', PNG) }), 415, 106);
    expectError(await send(s, L, IMG, { destinatario: DEST, imageBase64: b64(PNG), mime: 'image/tiff' }, { form: true }), 415, 106);
    await tmpEmpty();
  });

  it('too large: 413 105 as soon as the limit passes, while the client is still uploading', async () => {
    // 24 MB for a 16 MB limit: far more than the socket buffers hold once the answer comes.
    const body = Buffer.from(JSON.stringify({ destinatario: DEST, imageBase64: b64(Buffer.concat([PNG, Buffer.alloc(24 * 1024 * 1024)])) }));
    const r = new RawRequest(s.url, 'POST', IMG, jsonHead(body.length, L.celularKey));
    const res = await r.sendUntilAnswered(body);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ ok: false, api_codigo: 105 });
    expect(res.body.error).toMatch(/maximum for imagen is 16 MB/);
    expect(r.sent).toBeLessThan(body.length);
    r.destroy();
    await tmpEmpty();
  });

  it('an early answer closes without a reset: the server half-closes and drops what still comes, so the answer cannot be discarded', async () => {
    const body = Buffer.from(JSON.stringify({ destinatario: DEST, imageBase64: b64(Buffer.concat([PNG, Buffer.alloc(20 * 1024 * 1024)])) }));
    const r = new RawRequest(s.url, 'POST', IMG, jsonHead(body.length, L.celularKey));
    const res = await r.sendUntilAnswered(body);
    expect(res.status).toBe(413);
    await r.closedByServer(); // the server's FIN, after the answer
    // The client still had bytes on their way; a server that closed with them unread would answer them with a reset.
    await new Promise<void>((done) => r.socket.write(Buffer.alloc(256 * 1024), () => done()));
    r.end();
    await until(() => r.socket.destroyed, { what: 'the connection to end' });
    expect(r.error).toBeUndefined();
  });

  it('a percent-escape split across packets, JSON escapes (\\/) in the base64, a field after the file: accepted, the same bytes', async () => {
    const bytes = pdfOf(100_000);
    bytes[500] = 0xfb; // '+' and '/' in the base64
    bytes[501] = 0xff;
    const enc = encodeURIComponent(b64(bytes));
    expect(enc).toMatch(/%2B|%2F/);
    const body = Buffer.from(`destinatario=${DEST}&directo=1&data_base64=${enc}&filename=f.pdf`);
    const r = new RawRequest(s.url, 'POST', DOC, {
      'Content-Type': 'application/x-www-form-urlencoded',
      'Content-Length': body.length,
      Authorization: `Bearer ${L.celularKey}`,
    });
    // Cut right after every '%' and after every first hex digit.
    let at = 0;
    for (let i = body.indexOf('%'); i >= 0 && i < 2000; i = body.indexOf('%', i + 1)) {
      await r.write(body.subarray(at, i + 1 + (i % 2)));
      at = i + 1 + (i % 2);
    }
    await r.write(body.subarray(at));
    const res = await r.response();
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse((await mensaje(s, res.body.msg_id)).media!)).toMatchObject({ mime: 'application/pdf', bytes: bytes.length, filename: 'f.pdf' });
    r.destroy();

    const json = JSON.stringify({ destinatario: nextDest(), documentBase64: b64(bytes), directo: 1 })
      .replace(/\//g, '\\/')
      .replace(/}$/, ',"filename":"g.pdf"}');
    expect(json).toContain('\\/');
    const j = await api(s.url, 'POST', DOC, { key: L.celularKey, raw: json, contentType: 'application/json' });
    expect(j.status, j.text).toBe(200);
    expect(JSON.parse((await mensaje(s, j.body.msg_id)).media!)).toMatchObject({ bytes: bytes.length, filename: 'g.pdf' });
    await tmpEmpty();
  });

  it('the file twice (same field, or per-type and generic): 400 100', async () => {
    const one = b64(PNG);
    const twice = `{"destinatario":"${DEST}","imageBase64":"${one}","imageBase64":"${one}"}`;
    expectError(await api(s.url, 'POST', IMG, { key: L.celularKey, raw: twice, contentType: 'application/json' }), 400, 100);
    expectError(await send(s, L, IMG, { destinatario: DEST, imageBase64: one, data_base64: one }, { form: true }), 400, 100);
    expectError(await send(s, L, IMG, { destinatario: DEST, imageBase64: 12 }), 400, 100);
    await tmpEmpty();
  });

  it('malformed or truncated JSON: 400 101; a field over its bound: 413 102', async () => {
    for (const raw of [
      `{"destinatario":"${DEST}","imageBase64":"${b64(PNG)}"`,
      `{"destinatario":"${DEST}" "imageBase64":"x"}`,
      `{"imageBase64":"${b64(PNG)}"}}`,
    ]) {
      expectError(await api(s.url, 'POST', IMG, { key: L.celularKey, raw, contentType: 'application/json' }), 400, 101);
    }
    expectError(await send(s, L, IMG, { destinatario: DEST, caption: 'x'.repeat(70_000), imageBase64: b64(PNG) }), 413, 102);
    await tmpEmpty();
  });

  it('a connection closed mid-body leaves no temp file', async () => {
    const body = Buffer.from(JSON.stringify({ destinatario: DEST, filename: 'a.pdf', documentBase64: b64(pdfOf(2_000_000)) }));
    const r = new RawRequest(s.url, 'POST', DOC, jsonHead(body.length, L.celularKey));
    await r.write(body.subarray(0, 1_000_000));
    await until(() => tmpFiles().length === 1, { what: 'the temp file being written', timeoutMs: 3000 });
    r.destroy();
    await tmpEmpty();
    noServerErrors();
  });
});

describe('a body nobody reads', () => {
  it('a GET with a 200 KB body on a keep-alive connection: answered, and the next request on that connection is answered too', async () => {
    const { port } = new URL(s.url);
    const sock = connect(Number(port), '127.0.0.1');
    let seen = '';
    sock.on('data', (c: Buffer) => (seen += c.toString('latin1')));
    await once(sock, 'connect');
    sock.write(`GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n`);
    sock.write(Buffer.alloc(200_000, 0x61));
    await until(() => (seen.match(/HTTP\/1\.1 200/g) ?? []).length === 1 && seen.includes('"ok":true'), { what: 'the first answer', timeoutMs: 10_000 });
    sock.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => (seen.match(/HTTP\/1\.1 200/g) ?? []).length === 2, { what: 'the second answer on the same connection', timeoutMs: 10_000 });
    sock.destroy();
  });
});
