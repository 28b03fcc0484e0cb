import { API } from '../../core/api/api-routes.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.js';

export interface MetricsListener {
  /** http://HOST:PORT/metrics, the port as bound. */
  url: string;
  close(): Promise<void>;
}

/**
 * `serve --metrics-listen HOST:PORT`: `/metrics` alone, without credentials,
 * on an address of its own (a private interface a Prometheus scrapes). Plain
 * node:http: no API route, hook or body parser is reachable here.
 */
export async function listenMetrics(metrics: Metrics, host: string, port: number, onError: (err: unknown) => void): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== API.metrics || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: this listener serves GET /metrics only\n');
      return;
    }
    metrics.scrape().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(text) }).end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        onError(err);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('the metrics could not be collected\n');
      },
    );
  });
  // A scraper sends a few headers and no body: nothing needs long.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${shown}:${addr.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
