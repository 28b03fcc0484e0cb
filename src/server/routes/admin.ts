import type { FastifyInstance } from 'fastify';
import { addBalance, createCliente, editCliente, listClientes, rotateClienteKey, showCliente } from '../../core/accounts/accounts.js';
import type { Core } from '../../core/context.js';
import { rotateCelularKey, setLegacyToken } from '../../core/accounts/celulares.js';
import { API } from '../../core/api/api-routes.js';
import { FIELD_LIMITS } from '../../core/api/limits.js';
import { created, operatorAuth, success } from '../http.js';
import { aliasSchema, auditoriaQuerystring, celularSchema, clienteSummaryProps, errorResponses, okResponse } from '../schemas/common.js';
import { listAuditoria } from '../../core/auth/audit.js';
import { iso } from '../../core/time/clock.js';
import { motorNodoProp } from '../schemas/session.js';
import { IdParams, Nullable, StringEnum, Type, typed } from '../schemas/typed.js';

/** The operator API (docs/design.md §3): clients, plans, balances, keys. Operator token only. */
export default async function adminRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'config' | 'signals'> },
) {
  const app = typed(fastify);
  app.addHook('preValidation', operatorAuth(core));
  const security = [{ operator: [] }];
  const tags = ['operador'];
  const clienteFields = {
    nombre: Type.String({ minLength: 1, maxLength: FIELD_LIMITS.clienteNombre }),
    email: Type.String({ format: 'email', maxLength: FIELD_LIMITS.email }),
    plan: Type.Optional(StringEnum(['medido', 'ilimitado'])),
    estado: Type.Optional(StringEnum(['activo', 'suspendido', 'baja'])),
    max_celulares: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: FIELD_LIMITS.maxCelulares, description: 'null: no cap' }))),
  };
  const summary = okResponse(clienteSummaryProps);
  // The operator also sees which gateway server each line is on, and with the engine which node holds its session.
  const operatorCelulares = {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        ...celularSchema.properties,
        servidor: { type: 'string', nullable: true, description: 'the gateway server the line is on (admin gateway list)' },
        motor_nodo: motorNodoProp,
      },
    },
  } as const;

  app.post(API.adminClientes, {
    schema: {
      operationId: 'adminCrearCliente',
      tags,
      security,
      summary: 'Create a client; its key (WAC_...) is returned once',
      body: Type.Object({
        ...clienteFields,
        saldo: Type.Optional(Type.Integer({ minimum: 0, maximum: FIELD_LIMITS.saldo, description: 'initial global balance' })),
      }),
      response: { 201: okResponse({ ...clienteSummaryProps, api_key: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req, reply) => created(reply, await createCliente(core, req.body), { descripcion: 'cliente creado' }),
  });

  app.get(API.adminClientes, {
    schema: {
      operationId: 'adminListarClientes',
      tags,
      security,
      summary: 'List clients',
      response: {
        200: okResponse({ total: { type: 'integer' }, clientes: { type: 'array', items: { type: 'object', properties: clienteSummaryProps } } }),
        ...errorResponses,
      },
    },
    handler: async () => {
      const clientes = await listClientes(core);
      return success({ total: clientes.length, clientes });
    },
  });

  app.get(API.adminCliente, {
    schema: {
      operationId: 'adminObtenerCliente',
      tags,
      security,
      summary: 'One client with its celulares',
      params: IdParams,
      response: { 200: okResponse({ ...clienteSummaryProps, celulares: operatorCelulares }), ...errorResponses },
    },
    handler: async (req) => success(await showCliente(core, req.params.id)),
  });

  const editSchema = Type.Partial(Type.Object(clienteFields), { additionalProperties: false });
  const editClienteSchema = {
    operationId: 'adminEditarCliente',
    tags,
    security,
    summary: 'Edit a client (nombre, email, plan, estado, max_celulares)',
    params: IdParams,
    body: editSchema,
    response: { 200: summary, ...errorResponses },
  };
  for (const method of ['PATCH', 'POST'] as const) {
    app.route({
      method,
      url: API.adminCliente,
      schema:
        method === 'PATCH'
          ? editClienteSchema
          : { ...aliasSchema(editClienteSchema, 'adminEditarClienteAliasPost', 'PATCH /admin/clientes/{id}'), summary: editClienteSchema.summary },
      handler: async (req) => success(await editCliente(core, req.params.id, req.body), { descripcion: 'cliente actualizado' }),
    });
  }

  app.post(API.adminClienteRotarKey, {
    schema: {
      operationId: 'adminRotarKeyCliente',
      tags,
      security,
      summary: 'Issue a new client key; the old one stops working',
      params: IdParams,
      response: { 200: okResponse({ cliente_id: { type: 'integer' }, api_key: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => success(await rotateClienteKey(core, req.params.id)),
  });

  app.post(API.adminSaldo, {
    schema: {
      operationId: 'adminAjustarSaldo',
      tags,
      security,
      summary: 'Add credit to a client (global) or to one of its celulares; negative amounts remove credit, never below zero',
      body: Type.Object({
        cliente_id: Type.Integer({ minimum: 1 }),
        celular_id: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
        monto: Type.Integer({ minimum: -FIELD_LIMITS.saldo, maximum: FIELD_LIMITS.saldo }),
        motivo: Type.Optional(Type.String({ maxLength: FIELD_LIMITS.motivo })),
      }),
      response: {
        200: okResponse({
          cliente_id: { type: 'integer' },
          celular_id: { type: 'integer', nullable: true },
          saldo_global: { type: 'integer' },
          saldo_celular: { type: 'integer', nullable: true },
          movimiento_id: { type: 'integer' },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const r = await addBalance(core, { kind: 'operator' }, req.body);
      return success(r, { descripcion: 'saldo actualizado', saldo: r.saldo_celular });
    },
  });

  app.post(API.adminCelularTokenLegacy, {
    schema: {
      operationId: 'adminFijarTokenLegacy',
      tags,
      security,
      summary: 'Set the legacy token of a celular, or make one when none is given; the token is returned',
      params: IdParams,
      body: Nullable(Type.Object({ token: Type.Optional(Type.String({ minLength: FIELD_LIMITS.legacyToken[0], maxLength: FIELD_LIMITS.legacyToken[1] })) })),
      response: { 200: okResponse({ celular_id: { type: 'integer' }, token_legacy: { type: 'string' }, generado: { type: 'boolean' } }), ...errorResponses },
    },
    handler: async (req) => success(await setLegacyToken(core, req.params.id, req.body?.token)),
  });

  app.post(API.adminCelularRotarKey, {
    schema: {
      operationId: 'adminRotarKeyCelular',
      tags,
      security,
      summary: 'Issue a new celular key; the old one stops working',
      params: IdParams,
      response: { 200: okResponse({ celular_id: { type: 'integer' }, api_key: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => success(await rotateCelularKey(core, req.params.id)),
  });

  app.get(API.adminAuditoria, {
    schema: {
      operationId: 'adminListarAuditoria',
      tags,
      security,
      summary: 'Audit records (who changed what, when, before and after), newest first, filtered and paged by id',
      description:
        'Every change of money or configuration and every operator action. `detalle` holds `antes` and `despues` (the fields that changed) ' +
        'and never a secret. Pages are keyset: pass `paginas.antes` as `antes` for the older page, `paginas.despues` as `despues` for the newer; `despues=0` is the oldest page.',
      querystring: auditoriaQuerystring,
      response: {
        200: okResponse({
          registros: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                fecha: { type: 'string', format: 'date-time' },
                actor: { type: 'string', description: 'operator, cliente:<id>, operator(cliente:<id>) in the panel, celular:<id>(<via>)' },
                accion: { type: 'string' },
                objeto_tipo: { type: 'string' },
                objeto_id: { type: 'integer', nullable: true },
                cliente_id: { type: 'integer', nullable: true },
                detalle: { type: 'object', additionalProperties: true },
              },
            },
          },
          paginas: {
            type: 'object',
            properties: {
              antes: { type: 'integer', nullable: true, description: 'pass as antes for the older page; null: this is the oldest' },
              despues: { type: 'integer', nullable: true, description: 'pass as despues for the newer page; null: this is the newest' },
            },
          },
          zona_horaria: { type: 'string', description: "the server's time zone (serve --tz), in which desde/hasta days are read" },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const page = await listAuditoria(core, req.query);
      return success({ ...page, registros: page.registros.map((r) => ({ ...r, fecha: iso(r.fecha) })) });
    },
  });
}
