import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { iso } from '../../core/clock.js';
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
          gateway_alcanzable: {
            type: 'boolean',
            nullable: true,
            description: 'from the last line health check: false when no line\'s session could be read (or, without lines, the gateway did not answer); null before the first check',
          },
          gateway_verificado: { type: 'string', format: 'date-time', nullable: true, description: 'when the last line health check ended' },
          lineas_verificadas: { type: 'integer', description: 'lines in the last check' },
          lineas_fallidas: { type: 'integer', description: 'lines whose session could not be read in the last check' },
        }),
        ...errorResponses,
      },
    },
    handler: async () => {
      await core.store.getCliente(0); // a real round trip to the store
      return success({
        status: 'ok',
        version: VERSION,
        gateway: core.gateway.name,
        simulado: core.gateway.simulated,
        store: core.store.dialect,
        gateway_alcanzable: health?.state.ok ?? null,
        gateway_verificado: health?.state.checkedAt ? iso(health.state.checkedAt) : null,
        lineas_verificadas: health?.state.lineas ?? 0,
        lineas_fallidas: health?.state.fallidas ?? 0,
      });
    },
  });
}
