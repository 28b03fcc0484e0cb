import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InboundRefused, type Gateway } from '../../src/core/ports/gateway.js';

/**
 * A bare HTTP server standing in for pasarela's inbound endpoint in gateway
 * tests that run without the whole service: `POST /gateway/<name>/<instancia>[/<more>]`
 * goes to the gateway's handleInbound, answered as the real route answers.
 */
export interface InboundReceiver {
  /** Base URL to give the adapter as its callbackUrl. */
  url: string;
  /** Calls received, with the status each got. */
  calls: Array<{ path: string; status: number }>;
  close(): Promise<void>;
}

export async function startInboundReceiver(gateway: () => Gateway): Promise<InboundReceiver> {
  const calls: InboundReceiver['calls'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const answer = (status: number, body: unknown) => {
        calls.push({ path, status });
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      const m = /^\/gateway\/([^/]+)\/([^/?]+)(\/[^?]*)?/.exec(path);
      const gw = gateway();
      if (req.method !== 'POST' || !m || m[1] !== gw.name || !gw.handleInbound) return answer(404, { ok: false });
      gw.handleInbound({ instancia: decodeURIComponent(m[2]!), subpath: m[3] ?? '', headers: req.headers, rawBody: Buffer.concat(chunks) }).then(
        (r) => answer(200, { ok: true, ...r }),
        (err: unknown) => answer(err instanceof InboundRefused ? err.status : 500, { ok: false, error: String(err) }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
