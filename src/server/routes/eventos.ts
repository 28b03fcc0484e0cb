import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { Core } from '../../core/context.js';
import type { EventStreams } from '../../core/events/event-stream-pump.js';
import { FIELD_LIMITS } from '../../core/api/limits.js';
import { boolish, clientAuth, principal } from '../http.js';
import { errorResponses, eventosFilterProps, keyQuery } from '../schemas/common.js';
import { Flag, Type, typed } from '../schemas/typed.js';
import { streamSocket } from '../send-queues.js';

/** Bytes the stream's body buffers before a write asks to wait (the socket's buffer is below it). */
const BODY_HIGH_WATER = 16 * 1024;

/** GET /api/eventos.php: the client's events as Server-Sent Events (core/events/event-stream.ts, docs/decisions.md D-71). */
export default async function eventosRoutes(
  fastify: FastifyInstance,
  { core, streams }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>; streams: EventStreams },
) {
  const app = typed(fastify);
  app.get(API.eventos, {
    // A HEAD would open a stream nobody reads.
    exposeHeadRoute: false,
    preValidation: clientAuth(core),
    schema: {
      operationId: 'seguirEventos',
      tags: ['eventos'],
      summary: "The client's events as Server-Sent Events (text/event-stream)",
      description:
        'One SSE event per event: `id:` the event id (the webhook `id`), `event:` its kind, `data:` the webhook body (the same bytes a delivery carries). ' +
        "A `: ping` comment at least every 15 s. Needs no webhook configured; on several nodes any node carries every node's events, in order per line. " +
        'Resume with the `Last-Event-ID` header, or `desde_id` for clients that cannot set headers: events after it, while the log keeps it (72 h); ' +
        "an id not kept (or another client's) is 410 before the stream starts. Without either, a following stream starts now (on PostgreSQL, after the newest event no open transaction can still precede, " +
        'so it may also carry events committed an instant before it opened) and `seguir=0` reads everything kept. ' +
        'A celular credential sees its own line only. At most 10 streams per client on a node (429); a reader that takes nothing for 30 s is cut (resume by id).',
      security: [{ bearer: [] }],
      querystring: Type.Partial(
        Type.Object({
          ...eventosFilterProps,
          seguir: Flag('1/true (default): keep streaming; 0/false: end once what the log holds now was sent'),
          key: keyQuery,
        }),
      ),
      headers: Type.Object({
        'last-event-id': Type.Optional(Type.String({ maxLength: FIELD_LIMITS.webhookId, description: 'resume after this event' })),
      }),
      response: {
        200: {
          description: 'Server-Sent Events: per event `id:`, `event:` and `data:` lines, and `: ping` comments',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        },
        ...errorResponses,
      },
    },
    handler: async (req, reply) => {
      const follow = req.query.seguir === undefined ? true : boolish(req.query.seguir, 'seguir');
      const lastId = req.headers['last-event-id'] ?? req.query.desde_id;
      const out = new PassThrough({ highWaterMark: BODY_HIGH_WATER });
      const cut = () => reply.raw.destroy();
      const { done } = await streams.start(
        principal(req),
        { ...req.query, follow, lastId },
        { out, below: () => reply.raw.writableLength, cut, ...streamSocket(reply.raw.socket) },
      );
      done.catch((err: unknown) => {
        req.log.error({ err }, 'event stream failed');
        cut();
      });
      return reply.header('cache-control', 'no-store').header('x-accel-buffering', 'no').type('text/event-stream; charset=utf-8').send(out);
    },
  });
}
