import type { FastifyInstance } from 'fastify';
import { info, saldo } from '../../core/accounts/accounts.js';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { listCelulares } from '../../core/accounts/celulares.js';
import { clientAuth, principal, success } from '../http.js';
import { clienteSummaryProps, errorResponses, okResponse } from '../schemas/common.js';
import { Type, typed } from '../schemas/typed.js';

/** The account endpoints: info, balance, the list of lines. */
export default async function accountRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'> },
) {
  const app = typed(fastify);
  const auth = clientAuth(core);
  const security = [{ bearer: [] }];

  app.get(API.info, {
    preValidation: auth,
    schema: {
      operationId: 'obtenerInfo',
      tags: ['cuenta'],
      summary: 'Client info',
      security,
      response: { 200: okResponse(clienteSummaryProps), ...errorResponses },
    },
    handler: async (req) => {
      const p = principal(req);
      return success(await info(core, p), { saldo: p.kind === 'celular' ? p.celular.saldo_actual : null });
    },
  });

  app.get(API.saldo, {
    preValidation: auth,
    schema: {
      operationId: 'obtenerSaldo',
      tags: ['cuenta'],
      summary: 'Balance',
      description: 'A celular credential names its line. A client key names one with celular_id, or none (celular_id and saldo_celular are then null).',
      security,
      querystring: Type.Object({ celular_id: Type.Optional(Type.Integer({ minimum: 1 })), key: Type.Optional(Type.String()) }),
      response: {
        200: okResponse({
          cliente_id: { type: 'integer' },
          celular_id: { type: 'integer', nullable: true },
          saldo_global: { type: 'integer' },
          saldo_celular: { type: 'integer', nullable: true },
          plan: { type: 'string' },
          ilimitado: { type: 'boolean' },
          consumo_mes: { type: 'integer' },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const data = await saldo(core, principal(req), req.query.celular_id);
      return success(data, { saldo: data.saldo_celular });
    },
  });

  app.get(API.celulares, {
    preValidation: auth,
    schema: {
      operationId: 'listarCelulares',
      tags: ['celulares'],
      summary: "List the client's celulares",
      security,
      response: {
        200: okResponse({ cliente_id: { type: 'integer' }, total: { type: 'integer' }, celulares: { type: 'array', items: { $ref: 'Celular#' } } }),
        ...errorResponses,
      },
    },
    handler: async (req) => success(await listCelulares(core, principal(req))),
  });
}
