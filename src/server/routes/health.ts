import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { iso } from '../../core/clock.js';
import { AppError, errorBody } from '../../core/errors.js';
import type { LineHealth } from '../../core/line-health.js';
import { VERSION } from '../../version.js';
import { success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';

/** Liveness and readiness without credentials: the process answers and the database responds. */
export default async function healthRoutes(app: FastifyInstance, { core, health }: { core: Core; health?: LineHealth }) {
  app.get('/health', {
    schema: {
      tags: ['servicio'],
      summary: 'Health check',
      response: {
        200: okResponse({
          status: { type: 'string' },
          version: { type: 'string' },
          gateway: { type: 'string' },
          simulado: { type: 'boolean' },
          store: { type: 'string' },
          counters: {
            type: 'string',
            description: "what holds duplicate protection and the auth throttle: 'memory' (this process), 'redis', or 'redis (unreachable: memory)' while Redis does not answer",
          },
          gateway_alcanzable: {
            type: 'boolean',
            nullable: true,
            description: 'from the last line health check: false when no line\'s session could be read (or, without lines, the gateway did not answer); null before the first check',
          },
          gateway_verificado: { type: 'string', format: 'date-time', nullable: true, description: 'when the last line health check ended' },
          lineas_verificadas: { type: 'integer', description: 'lines in the last check' },
          lineas_fallidas: { type: 'integer', description: 'lines whose session could not be read in the last check' },
          nodos_vivos: { type: 'integer', description: 'serve processes of this store that beat within their takeover time (1 on SQLite)' },
        }),
        ...errorResponses,
        503: {
          description: 'the store cannot take writes (a full disk, an I/O error); the service is not ready',
          type: 'object',
          properties: {
            ok: { type: 'boolean' },
            error: { type: 'string' },
            api_codigo: { type: 'integer' },
            api_texto: { type: 'string' },
            api_descripcion: { type: 'string' },
            saldo: { type: 'integer', nullable: true },
            status: { type: 'string', enum: ['store_unavailable'] },
            store: { type: 'string' },
            store_error: { type: 'string', description: 'what failed, naming the store' },
            store_error_desde: { type: 'string', format: 'date-time', description: 'when a write first failed' },
          },
        },
      },
    },
    handler: async (_req, reply) => {
      await core.store.getCliente(0); // a real round trip to the store
      const writes = await core.store.writeHealth();
      if (!writes.writable) {
        // 503 rather than the requests' 507: what a load balancer takes for "not ready".
        const err = new AppError('STORE_UNAVAILABLE', writes.reason);
        return reply.code(503).send({ ...errorBody(err), status: 'store_unavailable', store: core.store.dialect, store_error: writes.reason, store_error_desde: iso(writes.since) });
      }
      return success({
        status: 'ok',
        version: VERSION,
        gateway: core.gateway.name,
        simulado: core.gateway.simulated,
        store: core.store.dialect,
        counters: core.counters.backend(),
        gateway_alcanzable: health?.state.ok ?? null,
        gateway_verificado: health?.state.checkedAt ? iso(health.state.checkedAt) : null,
        lineas_verificadas: health?.state.lineas ?? 0,
        lineas_fallidas: health?.state.fallidas ?? 0,
        nodos_vivos: (await core.store.nodes(core.clock.now())).filter((n) => n.alive).length,
      });
    },
  });
}
