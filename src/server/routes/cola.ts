import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import { cancelCola, COLA_IDS_MAX, COLA_POR_PAGINA, COLA_POR_PAGINA_MAX, listCola, retryMensajes } from '../../core/queue/cola.js';
import type { Core } from '../../core/context.js';
import type { SendDeps } from '../../core/sending/send.js';
import { boolish, clientAuth, principal, success } from '../http.js';
import { errorResponses, keyField, keyQuery, okResponse, tsOrNull, ts } from '../schemas/common.js';
import { Flag, Type, typed } from '../schemas/typed.js';

/** msg_ids: an array (JSON, repeated form fields) or a comma list. */
const msgIdsField = Type.Unsafe<string[] | string>({
  type: ['array', 'string'],
  items: { type: 'string', maxLength: 64 },
  maxItems: COLA_IDS_MAX,
  description: `up to ${COLA_IDS_MAX} msg_ids; an array, repeated fields or a comma list`,
});

const idsOf = (v: string[] | string | undefined): string[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : v.split(','));

const MOTIVOS = [
  'enviando',
  'desconectado',
  'frenado',
  'fuera_de_horario',
  'reintento',
  'programado',
  'cupo_minuto',
  'cupo_hora',
  'cupo_dia',
  'pausa_humana',
  'en_turno',
  'listo',
];

/**
 * The queue (issue 36): GET /api/cola.php lists what waits and why; POST
 * /api/cola_cancelar.php cancels; POST /api/mensaje_reintentar.php retries
 * failed messages. A client key acts on every line, a celular key on its own.
 */
export default async function colaRoutes(
  fastify: FastifyInstance,
  { core, deps }: { core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'credentials' | 'lines'>; deps: SendDeps },
) {
  const app = typed(fastify);
  const auth = clientAuth(core);
  const security = [{ bearer: [] }];
  const tags = ['cola'];

  app.get(API.cola, {
    preValidation: auth,
    schema: {
      operationId: 'listarCola',
      tags,
      security,
      summary: 'Pending queued messages in queue order, with when each is due and why it waits',
      description:
        "A client key lists every line (or the one celular_id names), a celular key its own line. Keyset pages: pass the answer's `siguiente` as `despues`. " +
        'due_at is an estimate (the human gap is random; a retry or an edit of the line changes it); null while the line is not active. ' +
        'motivo: enviando (being sent), desconectado (the line or client is not active), frenado (the line is braked: it waits for a resume), fuera_de_horario, reintento (waiting after a failed attempt), ' +
        'cupo_minuto / cupo_hora / cupo_dia (a cap is full), pausa_humana (the gap after the last send), en_turno (behind older messages), listo (due now).',
      querystring: Type.Object({
        key: Type.Optional(keyQuery),
        celular_id: Type.Optional(Type.Integer({ minimum: 1 })),
        despues: Type.Optional(Type.Integer({ minimum: 0, description: "the previous page's `siguiente`" })),
        por_pagina: Type.Optional(Type.Integer({ minimum: 1, maximum: COLA_POR_PAGINA_MAX, default: COLA_POR_PAGINA })),
      }),
      response: {
        200: okResponse({
          total: { type: 'integer', description: 'pending queued messages of the lines listed' },
          siguiente: { type: 'integer', nullable: true, description: 'pass as despues for the next page; null on the last' },
          lineas: {
            type: 'array',
            description: 'each line with a message on this page: the caps its messages wait under now, its warm-up plan applied',
            items: {
              type: 'object',
              properties: {
                celular_id: { type: 'integer' },
                calentamiento: { type: 'string', nullable: true },
                calentamiento_dia: { type: 'integer', nullable: true },
                max_envios_por_minuto_efectivo: { type: 'integer' },
                max_envios_por_hora_efectivo: { type: 'integer' },
                max_envios_por_dia_efectivo: { type: 'integer', nullable: true },
              },
            },
          },
          mensajes: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                msg_id: { type: 'string' },
                celular_id: { type: 'integer' },
                destinatario: { type: 'string' },
                tipo: { type: 'string' },
                texto: { type: 'string', nullable: true },
                created_at: ts,
                due_at: { ...tsOrNull, description: 'estimated' },
                enviar_en: { ...tsOrNull, description: 'a scheduled send: when it is due (motivo programado until then); null otherwise' },
                motivo: { type: 'string', enum: MOTIVOS },
                intentos: { type: 'integer' },
                error: { type: 'string', nullable: true, description: "the last failed attempt's reason" },
                seq: { type: 'integer', description: 'its place in the queue' },
              },
            },
          },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const { celular_id, despues, por_pagina } = req.query;
      return success(await listCola(core, principal(req), { celular_id, despues, por_pagina }));
    },
  });

  const cancelBody = Type.Object({
    key: Type.Optional(keyField),
    msg_ids: Type.Optional(msgIdsField),
    celular_id: Type.Optional(Type.Integer({ minimum: 1 })),
    todos: Type.Optional(Flag('1 with celular_id: cancel every message of that line pending now')),
  });
  app.post(API.colaCancelar, {
    preValidation: auth,
    schema: {
      operationId: 'cancelarCola',
      tags,
      security,
      summary: 'Cancel queued messages: some by msg_id, or all of a line',
      description:
        'Each cancelled message ends in estado error with error_clase cancelado, its charge refunded to the balance that paid, and its message.status event sent. ' +
        'A message a worker is sending cannot be cancelled (resultado enviando), nor a direct send (directo) or one no longer pending (no_pendiente); ' +
        "an id that is not this credential's is no_encontrado. Answers 200 with each message's outcome.",
      body: cancelBody,
      response: {
        200: okResponse({
          cancelados: { type: 'integer' },
          no_cancelados: { type: 'integer' },
          reembolso: { type: 'integer', description: 'credits put back in total' },
          resultados: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                msg_id: { type: 'string' },
                resultado: { type: 'string', enum: ['cancelado', 'enviando', 'no_pendiente', 'directo', 'no_encontrado'] },
                reembolso: { type: 'integer' },
              },
            },
          },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const b = req.body;
      const todos = boolish(b.todos, 'todos');
      return success(await cancelCola(core, deps.media, principal(req), { msg_ids: idsOf(b.msg_ids), celular_id: b.celular_id, todos }));
    },
  });

  app.post(API.mensajeReintentar, {
    preValidation: auth,
    schema: {
      operationId: 'reintentarMensajes',
      tags,
      security,
      summary: 'Retry failed messages as new queued sends',
      description:
        'Each a new queued send of the same content from the same line, charged as any send; the new message records reintento_de (the old msg_id) in the history. ' +
        'Allowed for error_clase no_enviado, cancelado and fallido; refused (409, api_codigo 630) for rechazado, incierto, a message not in error, ' +
        'or uploaded media no longer kept. Retrying the same message again within 24 h answers the same new msg_id. ' +
        'One msg_id refused is answered as that refusal (409, 402...); with several, 200 lists each outcome.',
      body: Type.Object({ key: Type.Optional(keyField), msg_ids: msgIdsField }),
      response: {
        200: okResponse({
          reintentados: { type: 'integer' },
          rechazados: { type: 'integer' },
          resultados: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                msg_id: { type: 'string' },
                nuevo_msg_id: { type: 'string' },
                saldo: { type: 'integer' },
                api_codigo: { type: 'integer' },
                api_texto: { type: 'string' },
                mensaje: { type: 'string' },
              },
            },
          },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => success(await retryMensajes(core, deps, principal(req), idsOf(req.body.msg_ids), API.mensajeReintentar)),
  });
}
