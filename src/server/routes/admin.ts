import type { FastifyInstance } from 'fastify';
import { addBalance, createCliente, editCliente, listClientes, rotateClienteKey, showCliente } from '../../core/accounts.js';
import type { Core } from '../../core/context.js';
import { rotateCelularKey, setLegacyToken } from '../../core/celulares.js';
import { bodyOf, created, operatorAuth, success } from '../http.js';
import { aliasSchema, clienteSummaryProps, errorResponses, okResponse } from '../schemas/common.js';

/** The operator API (docs/design.md §3): clients, plans, balances, keys. Operator token only. */
export default async function adminRoutes(app: FastifyInstance, { core }: { core: Core }) {
  app.addHook('preValidation', operatorAuth(core));
  const security = [{ operator: [] }];
  const tags = ['operador'];
  const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'integer', minimum: 1 } } } as const;
  const clienteFields = {
    nombre: { type: 'string', minLength: 1, maxLength: 200 },
    email: { type: 'string', format: 'email', maxLength: 254 },
    plan: { type: 'string', enum: ['medido', 'ilimitado'] },
    estado: { type: 'string', enum: ['activo', 'suspendido', 'baja'] },
    max_celulares: { type: 'integer', minimum: 0, maximum: 100000, nullable: true, description: 'null: no cap' },
  } as const;
  const summary = okResponse(clienteSummaryProps);
  const celularesArr = { type: 'array', items: { $ref: 'Celular#' } } as const;

  app.post('/admin/clientes', {
    schema: {
      operationId: 'adminCrearCliente',
      tags,
      security,
      summary: 'Create a client; its key (WAC_...) is returned once',
      body: {
        type: 'object',
        required: ['nombre', 'email'],
        properties: { ...clienteFields, saldo: { type: 'integer', minimum: 0, maximum: 1000000000, description: 'initial global balance' } },
      },
      response: { 201: okResponse({ ...clienteSummaryProps, api_key: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req, reply) => created(reply, await createCliente(core, bodyOf(req) as never), { descripcion: 'cliente creado' }),
  });

  app.get('/admin/clientes', {
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

  app.get('/admin/clientes/:id', {
    schema: {
      operationId: 'adminObtenerCliente',
      tags,
      security,
      summary: 'One client with its celulares',
      params: idParams,
      response: { 200: okResponse({ ...clienteSummaryProps, celulares: celularesArr }), ...errorResponses },
    },
    handler: async (req) => success(await showCliente(core, (req.params as { id: number }).id)),
  });

  const editSchema = { type: 'object', properties: clienteFields, additionalProperties: false } as const;
  const editClienteSchema = {
    operationId: 'adminEditarCliente',
    tags,
    security,
    summary: 'Edit a client (nombre, email, plan, estado, max_celulares)',
    params: idParams,
    body: editSchema,
    response: { 200: summary, ...errorResponses },
  };
  for (const method of ['PATCH', 'POST'] as const) {
    app.route({
      method,
      url: '/admin/clientes/:id',
      schema:
        method === 'PATCH'
          ? editClienteSchema
          : { ...aliasSchema(editClienteSchema, 'adminEditarClienteAliasPost', 'PATCH /admin/clientes/{id}'), summary: editClienteSchema.summary },
      handler: async (req) => success(await editCliente(core, (req.params as { id: number }).id, bodyOf(req)), { descripcion: 'cliente actualizado' }),
    });
  }

  app.post('/admin/clientes/:id/rotar-key', {
    schema: {
      operationId: 'adminRotarKeyCliente',
      tags,
      security,
      summary: 'Issue a new client key; the old one stops working',
      params: idParams,
      response: { 200: okResponse({ cliente_id: { type: 'integer' }, api_key: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => success(await rotateClienteKey(core, (req.params as { id: number }).id)),
  });

  app.post('/admin/saldo', {
    schema: {
      operationId: 'adminAjustarSaldo',
      tags,
      security,
      summary: 'Add credit to a client (global) or to one of its celulares; negative amounts remove credit, never below zero',
      body: {
        type: 'object',
        required: ['cliente_id', 'monto'],
        properties: {
          cliente_id: { type: 'integer', minimum: 1 },
          celular_id: { type: 'integer', minimum: 1, nullable: true },
          monto: { type: 'integer', minimum: -1000000000, maximum: 1000000000 },
          motivo: { type: 'string', maxLength: 200 },
        },
      },
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
      const r = await addBalance(core, { kind: 'operator' }, bodyOf(req) as never);
      return success(r, { descripcion: 'saldo actualizado', saldo: r.saldo_celular });
    },
  });

  app.post('/admin/celulares/:id/token-legacy', {
    schema: {
      operationId: 'adminFijarTokenLegacy',
      tags,
      security,
      summary: 'Set the legacy token of a celular, or make one when none is given; the token is returned',
      params: idParams,
      body: { type: 'object', nullable: true, properties: { token: { type: 'string', minLength: 16, maxLength: 128 } } },
      response: { 200: okResponse({ celular_id: { type: 'integer' }, token_legacy: { type: 'string' }, generado: { type: 'boolean' } }), ...errorResponses },
    },
    handler: async (req) => success(await setLegacyToken(core, (req.params as { id: number }).id, (bodyOf(req) as { token?: string }).token)),
  });

  app.post('/admin/celulares/:id/rotar-key', {
    schema: {
      operationId: 'adminRotarKeyCelular',
      tags,
      security,
      summary: 'Issue a new celular key; the old one stops working',
      params: idParams,
      response: { 200: okResponse({ celular_id: { type: 'integer' }, api_key: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => success(await rotateCelularKey(core, (req.params as { id: number }).id)),
  });

  app.get('/admin/auditoria', {
    schema: {
      operationId: 'adminListarAuditoria',
      tags,
      security,
      summary: 'Recent audit records (who did what, when), newest first',
      querystring: {
        type: 'object',
        properties: { cliente_id: { type: 'integer', minimum: 1 }, limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
      },
      response: {
        200: okResponse({
          registros: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                fecha: { type: 'string', format: 'date-time' },
                actor: { type: 'string' },
                accion: { type: 'string' },
                objeto_tipo: { type: 'string' },
                objeto_id: { type: 'integer', nullable: true },
                cliente_id: { type: 'integer', nullable: true },
                detalle: { type: 'object', additionalProperties: true },
              },
            },
          },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const q = req.query as { cliente_id?: number; limit: number };
      const rows = await core.store.listAudit({ cliente_id: q.cliente_id, limit: q.limit });
      return success({ registros: rows.map((r) => ({ ...r, fecha: new Date(r.fecha).toISOString() })) });
    },
  });
}
