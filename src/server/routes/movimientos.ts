import type { FastifyInstance, FastifyReply } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { ClientPrincipal } from '../../core/auth/auth.js';
import type { Core } from '../../core/context.js';
import {
  consumoMes,
  exportMovimientos,
  listMovimientos,
  MOVIMIENTO_FIELDS,
  MOVIMIENTO_TIPOS,
  MOVIMIENTOS_TOTAL_MAX,
  operatorOver,
  type MovimientosQuery,
} from '../../core/billing/movimientos.js';
import { exportBody, EXPORT_TYPE } from '../export-stream.js';
import { clientAuth, operatorAuth, principal, success } from '../http.js';
import { errorResponses, keyQuery, movimientosQuerystring, okResponse, ts } from '../schemas/common.js';
import { Type, typed } from '../schemas/typed.js';

/** One movement of the ledger. Only these fields leave the server. */
const movimientoSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    fecha: ts,
    tipo: { type: 'string', enum: [...MOVIMIENTO_TIPOS] },
    monto: { type: 'integer', description: 'credits: negative for a charge, positive for a refund or an addition' },
    saldo_despues: { type: 'integer', description: 'the balance it moved (the line’s, or the global one when celular_id is null), after it' },
    celular_id: { type: 'integer', nullable: true, description: "the line whose balance moved; null: the client's global balance" },
    msg_id: { type: 'string', nullable: true, description: 'the message a charge or a refund was for' },
    motivo: { type: 'string' },
    actor: { type: 'string', description: 'who made it: sistema for charges and refunds; operator, or the key, for a manual change' },
  },
  required: [...MOVIMIENTO_FIELDS],
  additionalProperties: false,
} as const;

const listing = okResponse({
  cliente_id: { type: 'integer' },
  page: { type: 'integer' },
  por_pagina: { type: 'integer' },
  total: { type: 'integer', nullable: true, description: `movements matching the filters; null past ${MOVIMIENTOS_TOTAL_MAX} (never counted further)` },
  total_paginas: { type: 'integer', nullable: true, description: 'null when total is' },
  zona_horaria: { type: 'string', description: "the server's time zone (serve --tz), in which desde/hasta days are read" },
  movimientos: { type: 'array', items: movimientoSchema },
});

const consumo = okResponse({
  cliente_id: { type: 'integer' },
  mes: { type: 'string', description: 'YYYY-MM' },
  zona_horaria: { type: 'string' },
  desde: ts,
  hasta: { ...ts, description: 'excluded' },
  plan: { type: 'string' },
  mensajes: { type: 'integer' },
  monto: { type: 'integer' },
  lineas: {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        celular_id: { type: 'integer' },
        numero: { type: 'string' },
        mensajes: { type: 'integer', description: "messages the line's sends made this month, failed ones left out" },
        monto: { type: 'integer', description: 'credits they cost: charged and not refunded, whichever balance paid (0 on an unlimited plan)' },
      },
      required: ['celular_id', 'numero', 'mensajes', 'monto'],
      additionalProperties: false,
    },
  },
});

const DESCRIPTION =
  "Charges, refunds and manual changes of the client's balances, newest first. Dates are whole days in the server's time zone " +
  '(serve --tz); hasta is included. A celular credential sees its own line’s balance only (another line: 403; any other id: 404). ' +
  'format=csv or ndjson streams every movement the filters select, its window closed when it starts.';

type Query = MovimientosQuery & { format?: 'json' | 'csv' | 'ndjson'; key?: string; cliente_id?: number };

/** A listing or, with format csv/ndjson, the stream of every page. */
async function answer(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal, q: Query, reply: FastifyReply) {
  const { key: _k, format, cliente_id: _c, ...filters } = q;
  if (format !== 'csv' && format !== 'ndjson') return success(await listMovimientos(core, p, filters));
  const pages = exportMovimientos(core, p, filters);
  // The first page is read before answering, so a refused filter is a 400 and not a broken download.
  const first = await pages.next();
  return reply
    .header('Cache-Control', 'no-store')
    .type(EXPORT_TYPE[format])
    .send(exportBody(format, MOVIMIENTO_FIELDS, first, pages));
}

/** GET /api/movimientos.php, GET /api/consumo.php (client keys), GET /admin/movimientos (operator). */
export default async function movimientosRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'> },
) {
  const app = typed(fastify);

  app.get(API.movimientos, {
    preValidation: clientAuth(core),
    schema: {
      operationId: 'listarMovimientos',
      tags: ['cuenta'],
      summary: 'Balance movements, newest first',
      description: DESCRIPTION,
      security: [{ bearer: [] }],
      querystring: movimientosQuerystring,
      response: { 200: listing, ...errorResponses },
    },
    handler: async (req, reply) => answer(core, principal(req), req.query, reply),
  });

  app.get(API.consumo, {
    preValidation: clientAuth(core),
    schema: {
      operationId: 'consumoMes',
      tags: ['cuenta'],
      summary: "A month's consumption per line",
      description:
        "Per line: the messages its sends made in the month (failed ones left out) and the credits they cost (charged and not refunded). The month is read in the server's zone; " +
        'a celular credential sees its own line only.',
      security: [{ bearer: [] }],
      querystring: Type.Object({
        mes: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}$', description: 'YYYY-MM; this month when left out' })),
        key: Type.Optional(keyQuery),
      }),
      response: { 200: consumo, ...errorResponses },
    },
    handler: async (req) => success(await consumoMes(core, principal(req), req.query.mes)),
  });

  app.get(API.adminMovimientos, {
    preValidation: operatorAuth(core),
    schema: {
      operationId: 'adminListarMovimientos',
      tags: ['operador'],
      summary: "One client's balance movements, newest first",
      description: `${DESCRIPTION} The operator names the client with cliente_id (404 for no such client).`,
      security: [{ operator: [] }],
      querystring: Type.Intersect([Type.Object({ cliente_id: Type.Integer({ minimum: 1 }) }), movimientosQuerystring]),
      response: { 200: listing, ...errorResponses },
    },
    handler: async (req, reply) => answer(core, await operatorOver(core, req.query.cliente_id), req.query, reply),
  });
}
