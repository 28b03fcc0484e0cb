import { API } from '../../core/api/api-routes.js';
import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { operatorAuth } from '../http.js';
import type { Metrics } from './metrics.js';

/**
 * Metrics on the API's own port: every response timed (by route pattern,
 * never the raw URL, so the series stay as many as the routes), and
 * `GET /metrics` for the operator token. Left out of the OpenAPI document:
 * Prometheus's text format, not an API answer (docs/metrics.md has it).
 * Installed before the routes, so the hook covers all of them.
 */
export function installMetrics(app: FastifyInstance, core: Pick<Core, 'counters' | 'clock' | 'config'>, metrics: Metrics): void {
  app.addHook('onResponse', (req, reply, done) => {
    metrics.observeHttp(req.routeOptions.url, req.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  app.get(API.metrics, { schema: { hide: true }, preValidation: operatorAuth(core) }, async (_req, reply) => {
    const text = await metrics.scrape();
    return reply.type(metrics.contentType).send(text);
  });
}
