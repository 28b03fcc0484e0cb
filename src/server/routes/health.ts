import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import { VERSION } from '../../version.js';
import { success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';

/** Liveness and readiness without credentials: the process answers and the database responds. */
export default async function healthRoutes(app: FastifyInstance, { core }: { core: Core }) {
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
      });
    },
  });
}
