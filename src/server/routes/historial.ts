import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { ERROR_CLASES } from '../../core/ports/model.js';
import { ESTADOS, listHistorial, MENSAJE_FIELDS } from '../../core/history/historial.js';
import { mensajeById } from '../../core/history/mensaje.js';
import { mensajeStory, PASOS, STORY_ENTREGAS_MAX, STORY_INTENTOS_MAX } from '../../core/history/message-story.js';
import { clientAuth, principal, success } from '../http.js';
import { errorResponses, historialQuerystring, keyQuery, listingResponse, okResponse, strOrNull, ts, tsOrNull } from '../schemas/common.js';
import { Type, typed } from '../schemas/typed.js';

/** One history record (docs/design.md §8). Only these fields leave the server. */
const mensajeSchema = {
  type: 'object',
  properties: {
    msg_id: { type: 'string' },
    celular_id: { type: 'integer' },
    destinatario: { type: 'string', description: 'country code first, digits only' },
    tipo: { type: 'string', enum: ['texto', 'imagen', 'documento', 'audio', 'video', 'sticker'] },
    modo: { type: 'string', enum: ['cola', 'directo'] },
    estado: { type: 'string', enum: [...ESTADOS] },
    texto: { ...strOrNull, description: 'the text, or the caption of a media message' },
    media: {
      type: 'object',
      nullable: true,
      description: 'where the media came from; never its bytes',
      properties: {
        url: { type: 'string' },
        filename: { type: 'string' },
        mime: { type: 'string' },
        bytes: { type: 'integer', description: 'size in bytes' },
      },
      additionalProperties: false,
    },
    gateway_msg_id: strOrNull,
    error: strOrNull,
    error_clase: {
      type: 'string',
      nullable: true,
      enum: [...ERROR_CLASES, null],
      description:
        'with estado error: rechazado (refused for good by the network), no_enviado (never reached the network), incierto (may have reached the recipient), fallido (the network took it, then reported it failed), cancelado (cancelled while queued; refunded), caducado (its vigencia passed while queued; refunded)',
    },
    reintento_de: { ...strOrNull, description: 'the failed message this one retries (mensaje_reintentar.php); null otherwise' },
    vigencia_hasta: {
      ...tsOrNull,
      description: 'a queued send with a vigencia: the instant it must be handed to the gateway by, or it ends in error caducado (refunded); null otherwise',
    },
    enviar_en: { ...tsOrNull, description: 'a scheduled send: the instant it was due (it waited pendiente until then); null otherwise' },
    created_at: ts,
    enviado_at: tsOrNull,
    entregado_at: tsOrNull,
    leido_at: tsOrNull,
  },
  required: MENSAJE_FIELDS,
  additionalProperties: false,
} as const;

/** One step of a message's story (core/history/message-story.ts). */
const pasoSchema = {
  type: 'object',
  properties: {
    paso: { type: 'string', enum: [...PASOS] },
    at: { ...tsOrNull, description: 'when, in UTC; null when not recorded (a message older than the record of it)' },
    nodo: { ...strOrNull, description: 'the serve node that took the step, when recorded (its id, as /health and the overview name nodes)' },
    detalle: {
      type: 'object',
      additionalProperties: true,
      description:
        'by paso: aceptado {modo, tipo, destinatario}; cobro and reembolso {monto, saldo, balance}; enviado {gateway_msg_id, intentos}; ' +
        'error {error_clase, error}; webhook {evento, estado, intento, status, duracion_ms, error, entrega}',
    },
  },
  required: ['paso', 'at', 'nodo', 'detalle'],
  additionalProperties: false,
} as const;

/** GET /api/historial_listar.php: the message history, newest first; GET /api/mensaje.php: one message by id. */
export default async function historialRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'> },
) {
  const app = typed(fastify);
  app.get(API.historial, {
    preValidation: clientAuth(core),
    schema: {
      operationId: 'listarHistorial',
      tags: ['historial'],
      summary: 'Message history, newest first',
      description:
        "Dates are whole days in the server's time zone (serve --tz); hasta is included. A celular credential sees its own line only " +
        "(another line of the client: 403; any other id: 404). destinatario is normalised like a send's recipient.",
      security: [{ bearer: [] }],
      querystring: historialQuerystring,
      response: {
        200: listingResponse('mensajes', mensajeSchema),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const p = principal(req);
      const { key: _k, ...q } = req.query;
      return success(await listHistorial(core, p, q), { saldo: p.kind === 'celular' ? p.celular.saldo_actual : null });
    },
  });

  app.get(API.mensaje, {
    preValidation: clientAuth(core),
    schema: {
      operationId: 'verMensaje',
      tags: ['historial'],
      summary: 'One message by its msg_id',
      description:
        'The message as the history lists it, by the msg_id its send answered: what became of it (estado, error, error_clase, times). ' +
        "A client key reads any of its lines' messages, a celular key its own line's (another line of the client: 403); " +
        "an unknown id or another client's: 404 (api_codigo 611). " +
        'With timeline=1 the answer adds timeline, its story in order: accepted, queued, claimed (with the node), sent, each receipt, ' +
        `the charge and refund, every webhook delivery attempt (at most ${STORY_INTENTOS_MAX} per delivery of ${STORY_ENTREGAS_MAX} deliveries; ` +
        'timeline_omitidos counts those left out).',
      security: [{ bearer: [] }],
      querystring: Type.Object({
        msg_id: Type.String({ minLength: 1, maxLength: 64, description: 'the msg_id a send answered' }),
        timeline: Type.Optional(Type.Union([Type.Literal('0'), Type.Literal('1')], { description: '1: add the timeline (its story)' })),
        key: Type.Optional(keyQuery),
      }),
      response: {
        200: okResponse({
          mensaje: mensajeSchema,
          timeline: { type: 'array', items: pasoSchema, description: 'with timeline=1 only' },
          timeline_omitidos: { type: 'integer', description: 'with timeline=1 only: webhook attempts the timeline leaves out (at least)' },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const p = principal(req);
      const saldo = p.kind === 'celular' ? p.celular.saldo_actual : null;
      // Without timeline=1 the answer is the lookup's as it always was (docs/design.md §10).
      if (req.query.timeline === '1') return success(await mensajeStory(core, p, req.query.msg_id), { saldo });
      return success({ mensaje: await mensajeById(core, p, req.query.msg_id) }, { saldo });
    },
  });
}
