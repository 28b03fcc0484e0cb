import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { logoutCelular, restartCelular } from '../../core/accounts/session-actions.js';
import { resumeLine } from '../../core/accounts/line-brake.js';
import { clientAuth, operatorAuth, principal, success } from '../http.js';
import { errorResponses, idQuery, okResponse } from '../schemas/common.js';
import { sessionActionProps } from '../schemas/session.js';
import { IdParams, typed } from '../schemas/typed.js';
import { idBody, idOf } from './celulares.js';

const ACTIONS = {
  logout: {
    summary: "Log out the celular's session at the gateway: it becomes logged_out and desconectado; linking it again needs a new scan",
    descripcion: 'sesion cerrada',
  },
  reiniciar: {
    summary: "Restart the celular's session at the gateway, keeping its link: connecting now, connected again when the gateway reports it",
    descripcion: 'sesion reiniciada',
  },
} as const;

/**
 * A line's session acted on (core/accounts/session-actions.ts): by the client key or
 * the line's own key (`/api/celular_logout.php`, `/api/celular_reiniciar.php`),
 * or the operator (`/admin/celulares/:id/logout`, `/reiniciar`).
 */
export default async function celularSessionRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'signals' | 'credentials'> },
) {
  const app = typed(fastify);
  const response = { 200: okResponse(sessionActionProps), ...errorResponses };
  const run = { logout: logoutCelular, reiniciar: restartCelular };

  for (const [action, url, operationId] of [
    ['logout', API.celularLogout, 'cerrarSesionCelular'],
    ['reiniciar', API.celularReiniciar, 'reiniciarSesionCelular'],
  ] as const) {
    app.post(url, {
      preValidation: clientAuth(core),
      schema: { operationId, tags: ['celulares'], summary: ACTIONS[action].summary, security: [{ bearer: [] }], querystring: idQuery, body: idBody, response },
      handler: async (req) => success(await run[action](core, principal(req), idOf(req.query, req.body)), { descripcion: ACTIONS[action].descripcion }),
    });
  }

  for (const [action, url, operationId] of [
    ['logout', API.adminCelularLogout, 'adminCerrarSesionCelular'],
    ['reiniciar', API.adminCelularReiniciar, 'adminReiniciarSesionCelular'],
  ] as const) {
    app.post(url, {
      preValidation: operatorAuth(core),
      schema: { operationId, tags: ['operador'], summary: ACTIONS[action].summary, security: [{ operator: [] }], params: IdParams, response },
      handler: async (req) => success(await run[action](core, { kind: 'operator' }, req.params.id), { descripcion: ACTIONS[action].descripcion }),
    });
  }

  // A braked line resumed (core/accounts/line-brake.ts): by the client key or the line's own key, or the operator for any line.
  const resumeResponse = {
    200: okResponse({
      celular_id: { type: 'integer' },
      reanudado: { type: 'boolean', description: 'true: the line was braked and its queue goes on; false: it was not braked (its window starts again)' },
      motivo_anterior: { type: ['string', 'null'], description: 'why it was braked' },
      celular: { $ref: 'Celular#' },
    }),
    ...errorResponses,
  };
  const resumeSummary = 'Resume a braked celular: its queue goes on, its health window starts again, and celular.reanudado is sent (docs/brake.md)';
  app.post(API.celularReanudar, {
    preValidation: clientAuth(core),
    schema: {
      operationId: 'reanudarCelular',
      tags: ['celulares'],
      summary: resumeSummary,
      security: [{ bearer: [] }],
      querystring: idQuery,
      body: idBody,
      response: resumeResponse,
    },
    handler: async (req) => success(await resumeLine(core, principal(req), idOf(req.query, req.body)), { descripcion: 'celular reanudado' }),
  });
  app.post(API.adminCelularReanudar, {
    preValidation: operatorAuth(core),
    schema: {
      operationId: 'adminReanudarCelular',
      tags: ['operador'],
      summary: resumeSummary,
      security: [{ operator: [] }],
      params: IdParams,
      response: resumeResponse,
    },
    handler: async (req) => success(await resumeLine(core, { kind: 'operator' }, req.params.id), { descripcion: 'celular reanudado' }),
  });
}
