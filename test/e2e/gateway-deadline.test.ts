import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectOk } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, type Line } from '../server/send-helpers.js';
import { evolutionNetwork, type Network } from './gateways-network.js';

/**
 * A gateway that answers a send a byte at a time (issue 23 item 3): the
 * send ends at its deadline (`--gateway-timeout` x 4), whatever undici's
 * pauses allow, and is classified as any send with no answer in time: the
 * outcome is unknown (502, `api_codigo` 705, refunded). pasarela runs whole
 * in front of the Evolution fake, through a forwarder that trickles the
 * answer of `sendText` while told to.
 */

const SEND_TIMEOUT_MS = 800;

interface Front {
  url: string;
  trickle: boolean;
  /** Trickled answers whose connection was closed by pasarela. */
  cut: number;
  close(): Promise<void>;
}

async function startFront(target: string): Promise<Front> {
  const front: Front = { url: '', trickle: false, cut: 0, close: async () => undefined };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (front.trickle && req.url?.startsWith('/message/sendText/')) {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.write('{');
        const t = setInterval(() => res.write(' '), 20);
        res.on('close', () => {
          clearInterval(t);
          front.cut += 1;
        });
        return;
      }
      void request(`${target}${req.url ?? '/'}`, {
        method: req.method as 'GET',
        headers: { ...req.headers, host: undefined, 'content-length': undefined },
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      }).then(
        async (r) => res.writeHead(r.statusCode, { 'content-type': 'application/json' }).end(Buffer.from(await r.body.arrayBuffer())),
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  front.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  front.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return front;
}

describe('a gateway that trickles its answer to a send', () => {
  let net: Network;
  let front: Front;
  let s: TestServer;
  let line: Line;

  beforeAll(async () => {
    net = await evolutionNetwork();
    front = await startFront(net.serve.gatewayUrl!);
    s = await startTestServer({
      ...net.serve,
      gatewayUrl: front.url,
      gatewayTimeoutMs: SEND_TIMEOUT_MS / 4,
      gatewaySendTimeoutMs: SEND_TIMEOUT_MS,
      healthIntervalMs: 0,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
    });
    line = await linkedLine(s, { saldo: 100, link: false });
    const instancia = (await s.core.store.getCelular(line.celularId))!.gateway_instancia!;
    await until(
      async () => {
        const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${line.celularId}`, { key: line.clientKey });
        return qr.status === 200 && qr.body.qr !== '';
      },
      { what: 'a QR' },
    );
    await net.scan(s, instancia);
    await until(async () => (await s.core.store.getCelular(line.celularId))?.estado === 'activo', { what: 'celular activo' });
  });
  afterAll(async () => {
    await s?.stop();
    await front?.close();
    await net?.close();
  });

  it('a direct send ends at the send deadline as an unknown outcome (502, 705), refunded; the next one goes through', async () => {
    const saldo = async () => (await s.core.store.getCliente(line.clienteId))!.saldo_global;
    const before = await saldo();
    front.trickle = true;
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
      key: line.celularKey,
      json: { destinatario: '5215587654321', mensaje: 'hola', directo: 1 },
    });
    expectError(r, 502, 705);
    expect(r.body.error).toMatch(new RegExp(`no answer within ${SEND_TIMEOUT_MS} ms`));
    // pasarela closed the trickled answer itself: the forwarder would have gone on writing.
    await until(() => front.cut === 1, { what: 'the trickled answer closed' });
    expect(await saldo()).toBe(before);

    front.trickle = false;
    expectOk(
      await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: line.celularKey, json: { destinatario: '5215587654321', mensaje: 'otra', directo: 1 } }),
    );
  });
});
