import type { FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import {
  addGatewayServer,
  listGatewayServers,
  MAX_LINEAS,
  moveCelular,
  SERVER_NAME_PATTERN,
  setGatewayServerEstado,
} from '../../core/accounts/gateway-servers.js';
import { API } from '../../core/api/api-routes.js';
import { FIELD_LIMITS } from '../../core/api/limits.js';
import { created, operatorAuth, success } from '../http.js';
import { errorResponses, okResponse } from '../schemas/common.js';
import { IdParams, Nullable, Type, typed } from '../schemas/typed.js';

/** The gateway servers lines are spread over, and moving a line between them (operator token). */
export default async function adminGatewayRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'signals'> },
) {
  const app = typed(fastify);
  app.addHook('preValidation', operatorAuth(core));
  const security = [{ operator: [] }];
  const tags = ['operador'];
  // The allow-list of a server in answers: no key, ever.
  const serverProps = {
    id: { type: 'integer' },
    nombre: { type: 'string' },
    tipo: { type: 'string', description: "evolution or waha: the deployment's kind (serve --gateway)" },
    url: { type: 'string' },
    estado: { type: 'string', enum: ['activo', 'drenando'], description: 'drenando: keeps its lines, takes no new ones' },
    max_lineas: { type: 'integer', nullable: true, description: 'null: no cap' },
    lineas: { type: 'integer', description: 'lines it holds now' },
    tiene_key: { type: 'boolean', description: 'the API key is kept; it is never shown' },
    created_at: { type: 'string', format: 'date-time' },
  } as const;
  const nombreParams = Type.Object({ nombre: Type.String({ pattern: SERVER_NAME_PATTERN }) });
  const one = { 200: okResponse(serverProps), ...errorResponses };

  app.get(API.adminGateways, {
    schema: {
      operationId: 'adminListarGateways',
      tags,
      security,
      summary: 'The gateway servers with how many lines each holds (never their keys)',
      response: {
        200: okResponse({
          tipo: { type: 'string' },
          total: { type: 'integer' },
          servidores: { type: 'array', items: { type: 'object', properties: serverProps } },
        }),
        ...errorResponses,
      },
    },
    handler: async () => success(await listGatewayServers(core)),
  });

  app.post(API.adminGateways, {
    schema: {
      operationId: 'adminAgregarGateway',
      tags,
      security,
      summary: "Add a gateway server of the deployment's kind; new lines go to the least-loaded active server",
      body: Type.Object({
        nombre: Type.String({ pattern: SERVER_NAME_PATTERN }),
        url: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.gatewayUrl, description: "base URL of the server's API, http(s)" }),
        key: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.gatewayKey, description: 'its global API key; kept, never shown again' }),
        tipo: Type.Optional(Type.String({ description: "defaults to the deployment's kind; any other is refused" })),
        max_lineas: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: MAX_LINEAS, description: 'lines it should hold at most; null: no cap' }))),
      }),
      response: { 201: okResponse(serverProps), ...errorResponses },
    },
    handler: async (req, reply) => created(reply, await addGatewayServer(core, req.body), { descripcion: 'servidor de gateway agregado' }),
  });

  app.post(API.adminGatewayDrain, {
    schema: {
      operationId: 'adminDrenarGateway',
      tags,
      security,
      summary: 'Drain a gateway server: it keeps its lines and takes no new ones',
      params: nombreParams,
      response: one,
    },
    handler: async (req) => success(await setGatewayServerEstado(core, req.params.nombre, 'drenando'), { descripcion: 'servidor drenando' }),
  });

  app.post(API.adminGatewayUndrain, {
    schema: {
      operationId: 'adminReactivarGateway',
      tags,
      security,
      summary: 'Make a drained gateway server active again: it takes new lines',
      params: nombreParams,
      response: one,
    },
    handler: async (req) => success(await setGatewayServerEstado(core, req.params.nombre, 'activo'), { descripcion: 'servidor activo' }),
  });

  app.post(API.adminCelularServidor, {
    schema: {
      operationId: 'adminMoverCelular',
      tags,
      security,
      summary: 'Move a line to another gateway server: logged out and removed on the old one; it must be linked again',
      params: IdParams,
      body: Type.Object({ servidor: Type.String({ pattern: SERVER_NAME_PATTERN, description: "the new server's nombre" }) }),
      response: {
        200: okResponse({
          celular_id: { type: 'integer' },
          servidor: { type: 'string' },
          servidor_anterior: { type: 'string', nullable: true },
          gateway_instancia: { type: 'string' },
          estado: { type: 'string' },
          status: { type: 'string' },
          instancia_anterior_eliminada: { type: 'boolean', description: 'false when the old server could not be reached (see aviso)' },
          vincular: { type: 'string', description: 'what to do next: link the line again' },
          aviso: { type: 'string' },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => success(await moveCelular(core, req.params.id, req.body.servidor), { descripcion: 'celular movido' }),
  });
}
