import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readlinkSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { GatewayHttp, MAX_ANSWER_BYTES } from '../../src/gateways/http-json.js';
import { Base64File } from '../../src/gateways/json-body.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/server.js';

/**
 * Transport failures of a gateway call are transient; whether the call may
 * have reached the gateway decides whether a direct send's Idempotency-Key
 * may be used again (core/sending/idempotency.ts): only a connection never made
 * proves nothing went. Each call has one deadline for all of it, and the
 * answer read is bounded; a body with a file streams it from disk.
 */

const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

async function failureOf(baseUrl: string, timeoutMs = 5000, json: unknown = { text: 'hola' }): Promise<GatewayFailure> {
  const http = new GatewayHttp({ name: 'test', baseUrl, headers: {}, timeoutMs });
  try {
    await http.call('POST', '/message/sendText/x', { json });
  } catch (err) {
    if (err instanceof GatewayFailure) return err;
    throw err;
  } finally {
    await http.close();
  }
  throw new Error('the call did not fail');
}

describe('gateway transport failures', () => {
  it('a refused connection: transient, and nothing can have been sent', async () => {
    const free = await listen(() => {});
    const closed = servers.pop()!;
    await new Promise((r) => closed.close(r));
    const f = await failureOf(free);
    expect(f).toMatchObject({ kind: 'transient', mayHaveSent: false });
    expect(f.message).toMatch(/unreachable \(ECONNREFUSED\)/);
  });

  it('a connection dropped after the request arrived: transient, and it may have been sent', async () => {
    const url = await listen((req) => req.socket.destroy());
    expect(await failureOf(url)).toMatchObject({ kind: 'transient', mayHaveSent: true });
  });

  it('no answer in time: transient, and it may have been sent', async () => {
    const url = await listen(() => {});
    const f = await failureOf(url, 100);
    expect(f).toMatchObject({ kind: 'transient', mayHaveSent: true });
    expect(f.message).toMatch(/no answer within 100 ms/);
  });
});

const dir = tempDir('pasarela-httpjson-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file of `size` random bytes, as a message's media would be. */
function mediaFile(name: string, size: number): { file: Base64File; bytes: Buffer } {
  const bytes = randomBytes(size);
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { file: new Base64File(path, size), bytes };
}

/** Descriptors of this process open on `path`. */
const openOn = (path: string): number =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }).length;

describe('the deadline of a whole call', () => {
  it('an answer trickled a byte at a time is cut at the deadline: transient, and it may have been sent', async () => {
    let ended = false;
    const url = await listen((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
      const t = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(t));
      res.on('finish', () => (ended = true));
    });
    const f = await failureOf(url, 300);
    expect(f).toMatchObject({ kind: 'transient', mayHaveSent: true });
    expect(f.message).toMatch(/no answer within 300 ms/);
    // The answer never ended: only the call's own deadline can have stopped it.
    expect(ended).toBe(false);
  });

  it('a gateway that never reads a streamed upload is cut at the deadline, and the file is closed', async () => {
    const { file } = mediaFile('stalled', 8 * 1024 * 1024);
    const url = await listen((req) => req.pause());
    const f = await failureOf(url, 300, { number: '1', media: file });
    expect(f).toMatchObject({ kind: 'transient', mayHaveSent: true });
    expect(f.message).toMatch(/no answer within 300 ms/);
    await until(() => openOn(file.path) === 0, { what: 'the media file closed' });
  });
});

describe('what a call reads and sends', () => {
  it(`an answer over ${MAX_ANSWER_BYTES} bytes is refused, not read whole: transient, and it may have been sent`, async () => {
    const url = await listen((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ key: { id: 'x' }, pad: 'x'.repeat(2 * MAX_ANSWER_BYTES) }));
    });
    const f = await failureOf(url);
    expect(f).toMatchObject({ kind: 'transient', mayHaveSent: true });
    expect(f.message).toMatch(/answered more than 1048576 bytes on POST \/message\/sendText\/x/);
  });

  it('a file in the body goes as its base64 inside the JSON, with its exact Content-Length; a second call sends it whole again', async () => {
    const { file, bytes } = mediaFile('doc', 3 * 1024 * 1024 + 1);
    const got: Array<{ length: string | undefined; body: Buffer }> = [];
    const url = await listen((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({ length: req.headers['content-length'], body: Buffer.concat(chunks) });
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"key":{"id":"ABC"}}');
      });
    });
    const http = new GatewayHttp({ name: 'test', baseUrl: url, headers: {}, timeoutMs: 5000 });
    const json = { number: '5215512345678', mediatype: 'document', media: file, fileName: 'a.pdf' };
    try {
      for (let i = 0; i < 2; i++)
        expect(await http.call('POST', '/message/sendMedia/x', { json })).toMatchObject({ status: 201, body: { key: { id: 'ABC' } } });
    } finally {
      await http.close();
    }
    expect(got).toHaveLength(2);
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    for (const g of got) {
      expect(Number(g.length)).toBe(g.body.length);
      const parsed = JSON.parse(g.body.toString('utf8'));
      expect({ ...parsed, media: undefined }).toEqual({ number: '5215512345678', mediatype: 'document', fileName: 'a.pdf' });
      expect(sha(Buffer.from(parsed.media, 'base64'))).toBe(sha(bytes));
    }
  });

  it('a media file gone before the call: a permanent failure, and nothing was sent', async () => {
    const { file } = mediaFile('gone', 1000);
    unlinkSync(file.path);
    const url = await listen((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{"key":{"id":"ABC"}}'));
    });
    const f = await failureOf(url, 5000, { number: '1', media: file });
    expect(f).toMatchObject({ kind: 'permanent', mayHaveSent: false });
    expect(f.message).toMatch(/media file unreadable \(ENOENT\); nothing was sent to the test gateway/);
  });
});
