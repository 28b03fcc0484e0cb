import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayFailure } from '../../src/core/ports.js';
import { GatewayHttp } from '../../src/gateways/http-json.js';

/**
 * Transport failures of a gateway call are transient; whether the call may
 * have reached the gateway decides whether a direct send's Idempotency-Key
 * may be used again (core/idempotency.ts): only a connection never made
 * proves nothing went.
 */

const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function listen(handler: (req: IncomingMessage) => void): Promise<string> {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

async function failureOf(baseUrl: string, timeoutMs = 5000): Promise<GatewayFailure> {
  const http = new GatewayHttp({ name: 'test', baseUrl, headers: {}, timeoutMs });
  try {
    await http.call('POST', '/message/sendText/x', { json: { text: 'hola' } });
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
