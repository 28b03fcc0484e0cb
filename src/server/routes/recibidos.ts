import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import { listRecibidos } from '../../core/history/recibidos.js';
import { clientAuth, principal, success } from '../http.js';
import { errorResponses, listingResponse, recibidosQuerystring, strOrNull, ts } from '../schemas/common.js';
import { typed } from '../schemas/typed.js';

/** One incoming message of the inbox (docs/design.md §10). Only these fields leave the server. */
const recibidoSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: "the inbox record's id" },
    celular_id: { type: 'integer', description: 'the line that received it' },
    de: { type: 'string', description: "the sender: country code first, digits only; or the gateway's contact id (…@lid) when it hides the number" },
    tipo: { type: 'string', description: 'texto, imagen, video, documento, audio, sticker, or otro for a kind pasarela does not read' },
    texto: { ...strOrNull, description: 'the text, or the caption of a media message' },
    media: {
      type: 'object',
      nullable: true,
      description: 'what the gateway said about the media; never its bytes',
      properties: {
        url: { type: 'string', description: 'where the gateway serves the file, when it says' },
        filename: { type: 'string' },
        mime: { type: 'string' },
        bytes: { type: 'integer', description: 'size in bytes' },
        ptt: { type: 'boolean', description: 'an audio recorded as a voice note' },
      },
      additionalProperties: false,
    },
    gateway_msg_id: strOrNull,
    fecha: { ...ts, description: 'when the gateway says it was sent' },
    created_at: { ...ts, description: 'when pasarela recorded it: the order, the date filters and the retention go by this' },
  },
  required: ['id', 'celular_id', 'de', 'tipo', 'texto', 'media', 'gateway_msg_id', 'fecha', 'created_at'],
  additionalProperties: false,
} as const;

/** GET /api/recibidos_listar.php: the inbox, newest first. */
export default async function recibidosRoutes(
  fastify: FastifyInstance,
  { core }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'> },
) {
  const app = typed(fastify);
  app.get(API.recibidos, {
    preValidation: clientAuth(core),
    schema: {
      operationId: 'listarRecibidos',
      tags: ['recibidos'],
      summary: 'Incoming messages (the inbox), newest first',
      description:
        "Every message the lines received, kept for the server's retention (serve --inbox-retention). Dates are whole days in the " +
        "server's time zone (serve --tz) of when pasarela recorded the message; hasta is included. A celular credential sees its own " +
        "line only (another line of the client: 403; any other id: 404). remitente is normalised like a send's recipient; a contact id (…@lid) is matched as given.",
      security: [{ bearer: [] }],
      querystring: recibidosQuerystring,
      response: {
        200: listingResponse('recibidos', recibidoSchema),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const p = principal(req);
      const { key: _k, ...q } = req.query;
      return success(await listRecibidos(core, p, q), { saldo: p.kind === 'celular' ? p.celular.saldo_actual : null });
    },
  });
}
