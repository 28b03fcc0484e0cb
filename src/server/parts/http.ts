import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from '../app.js';
import type { ServeConfig } from '../config.js';
import { listenMetrics, type MetricsListener } from '../metrics/listener.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Log, Part } from './part.js';

/**
 * The HTTP API, built (not listening). At the halt, readiness answers 503
 * first, so a load balancer stops sending here while the node still serves
 * what it gets; its close ends the requests in flight (listenerPart).
 */
export function appPart(opts: Omit<AppOptions, 'logger' | 'loggerInstance'>, logger: FastifyBaseLogger): Part<FastifyInstance> {
  return {
    name: 'HTTP API',
    start: async () => {
      const app = await buildApp({ ...opts, loggerInstance: logger });
      const halt = () => {
        app.markDraining('the node is stopping');
        app.markClosing();
      };
      // Closed by the listener's part when it started; here otherwise (a start that failed before listening).
      return { value: app, halt, stop: () => closeOnce(app) };
    },
  };
}

/** `--metrics-listen`: before the API's listener, so a refused address stops the start with nothing listening. */
export function metricsListenerPart(listen: NonNullable<ServeConfig['metricsListen']>, metrics: Metrics, log: Log): Part<MetricsListener> {
  return {
    name: 'metrics listener',
    start: async () => {
      const { host, port } = listen;
      const listener = await listenMetrics(metrics, host, port, (err) => log.error({ err }, 'metrics scrape failed')).catch((err: unknown) => {
        throw new Error(`--metrics-listen ${host}:${port}: ${err instanceof Error ? err.message : String(err)}`);
      });
      return { value: listener, stop: () => listener.close() };
    },
  };
}

/** The API's listener; the URL it listens on. Stopping first: no new request, those in flight end (or are cut past --stop-timeout). */
export function listenerPart(app: FastifyInstance, host: string, port: number): Part<{ url: string; host: string; port: number }> {
  return {
    name: 'API listener',
    start: async () => {
      await app.listen({ host, port });
      const addr = app.server.address();
      const bound = typeof addr === 'object' && addr ? addr.port : port;
      const h = host.includes(':') ? `[${host}]` : host;
      return {
        value: { url: `http://${h}:${bound}`, host: h, port: bound },
        stop: () => closeOnce(app),
        abandon: () => app.server.closeAllConnections(),
      };
    },
  };
}

const closing = new WeakMap<FastifyInstance, Promise<void>>();

/** Fastify's close, once per app: both parts may ask. */
function closeOnce(app: FastifyInstance): Promise<void> {
  let p = closing.get(app);
  if (!p) closing.set(app, (p = app.close()));
  return p;
}
