import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TempFiles } from '../../src/core/media/media.js';
import { GatewayFailure } from '../../src/core/ports/gateway.js';
import { CALL_BYTES_HEADER, FORWARD_TYPE, LineMoved, NodeForwarder, nodeKey } from '../../src/gateways/baileys/forward.js';
import engineCallRoutes, { type EngineHost } from '../../src/server/routes/motor-interno.js';
import { tempDir } from '../helpers/server.js';

/**
 * A call handed to the node holding a line (D-136), both ends: what the
 * caller makes of each answer (the holder's result, its failure, a body
 * that is not the holder's, nobody there), and what the holder's route
 * refuses (no key, a malformed call, media past its bound).
 */
const send = { op: 'send' as const, instancia: 'pasarela-1', args: [{ msgId: 'x', tipo: 'texto', destinatario: '1', texto: 'hola' }] };

describe('the caller: each answer as the core sees it', () => {
  let answer: { status: number; body: string } = { status: 200, body: '' };
  let server: Server;
  let url = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const call = async (status: number, body: unknown) => {
    answer = { status, body: typeof body === 'string' ? body : JSON.stringify(body) };
    return new NodeForwarder('k').call(url, send, 5000).then(
      (v) => ({ value: v }),
      (err: unknown) => ({ err }),
    );
  };

  it("the holder's result and failure come back unchanged", async () => {
    expect(await call(200, { ok: true, value: { gatewayMsgId: 'ABC' } })).toEqual({ value: { gatewayMsgId: 'ABC' } });
    const f = (await call(200, { ok: false, error: { message: 'not on WhatsApp', kind: 'permanent' } })) as { err: GatewayFailure };
    expect(f.err).toBeInstanceOf(GatewayFailure);
    expect([f.err.kind, f.err.mayHaveSent, f.err.message]).toEqual(['permanent', false, 'not on WhatsApp']);
    const r = (await call(200, { ok: false, error: { message: 'slow down', kind: 'rate_limited', retryAfterMs: 3000 } })) as { err: GatewayFailure };
    expect([r.err.kind, r.err.retryAfterMs]).toEqual(['rate_limited', 3000]);
    const m = (await call(200, { ok: false, error: { message: 'moved', kind: 'transient', mayHaveSent: true } })) as { err: GatewayFailure };
    expect(m.err.mayHaveSent).toBe(true);
    expect(((await call(200, { ok: false, error: { message: 'x', kind: 'transient', moved: true } })) as { err: unknown }).err).toBeInstanceOf(LineMoved);
  });

  it("a body that is not the holder's: a 4xx never ran (nothing sent), a 5xx may have", async () => {
    for (const [status, body, may] of [
      [404, { message: 'Route POST:/interno/motor not found', error: 'Not Found', statusCode: 404 }, false],
      [401, 'nope', false],
      [500, { statusCode: 500, error: 'Internal Server Error' }, true],
      [502, '<html>bad gateway</html>', true],
    ] as const) {
      const f = (await call(status, body)) as { err: GatewayFailure };
      expect(f.err, `${status}`).toBeInstanceOf(GatewayFailure);
      expect([f.err.kind, f.err.mayHaveSent], `${status}`).toEqual(['transient', may]);
    }
  });

  it('nobody listening: transient, and nothing was sent', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await new NodeForwarder('k').call(`http://127.0.0.1:${port}`, send, 5000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayFailure);
    expect([(err as GatewayFailure).kind, (err as GatewayFailure).mayHaveSent]).toEqual(['transient', false]);
    expect((err as Error).message).toMatch(/^pasarela could not reach the node holding pasarela-1/);
  });
});

describe("the holder's route", () => {
  const key = nodeKey('secreto compartido');
  const calls: unknown[] = [];
  const app = Fastify();
  beforeAll(async () => {
    const host = {
      key,
      tmp: new TempFiles(tempDir('pasarela-forward-')),
      maxFileBytes: 1024,
      keeper: { holdsHere: (i: string) => i === 'pasarela-1' },
      router: {
        local: async (c: unknown, file?: string) => {
          calls.push({ c, file });
          return { gatewayMsgId: 'ABC' };
        },
      },
    } as unknown as EngineHost;
    await app.register(engineCallRoutes, host);
    await app.ready();
  });
  afterAll(() => app.close());

  const post = (body: Buffer, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/interno/motor', payload: body, headers: { 'content-type': FORWARD_TYPE, authorization: `Bearer ${key}`, ...headers } });
  const framed = (c: unknown, tail = Buffer.alloc(0)) => {
    const head = Buffer.from(JSON.stringify(c));
    return { body: Buffer.concat([head, tail]), headers: { [CALL_BYTES_HEADER]: String(head.length) } };
  };

  it('runs a call for a line it holds, the media tail as a local file; answers moved for one it does not', async () => {
    const ok = framed(send, Buffer.from('imagen'));
    const r = await post(ok.body, ok.headers);
    expect(r.json()).toEqual({ ok: true, value: { gatewayMsgId: 'ABC' } });
    expect(calls).toHaveLength(1);
    const other = framed({ ...send, instancia: 'pasarela-2' });
    expect((await post(other.body, other.headers)).json()).toMatchObject({ ok: false, error: { moved: true } });
    expect(calls).toHaveLength(1);
  });

  it('refuses without the key, a malformed call and media past its bound; each a transient fault, nothing run', async () => {
    const ok = framed(send);
    expect((await post(ok.body, { ...ok.headers, authorization: 'Bearer otra' })).statusCode).toBe(401);
    expect((await post(ok.body, { [CALL_BYTES_HEADER]: 'x' })).statusCode).toBe(400);
    const notJson = Buffer.from('{nope');
    const bad = await post(notJson, { [CALL_BYTES_HEADER]: String(notJson.length) });
    expect([bad.statusCode, bad.json().error.kind]).toEqual([400, 'transient']);
    const big = framed(send, Buffer.alloc(2048));
    const tooBig = await post(big.body, big.headers);
    expect([tooBig.statusCode, tooBig.json().error.kind]).toEqual([413, 'transient']);
    expect(calls).toHaveLength(1);
  });
});
