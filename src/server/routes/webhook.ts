import type { FastifyInstance } from 'fastify';
import { API } from '../../core/api/api-routes.js';
import type { ClientPrincipal } from '../../core/auth/auth.js';
import type { Core } from '../../core/context.js';
import { FIELD_LIMITS, LIST_LIMITS } from '../../core/api/limits.js';
import { WEBHOOK_SECRET_RULE } from '../../core/events/webhook-secret.js';
import { deleteWebhook, getWebhook, restoreWebhook, setWebhook, type WebhookInput } from '../../webhooks/config.js';
import { listDeliveries, redeliver, redeliverFailed, REDELIVER_BATCH_MAX, sendTestEvent } from '../../webhooks/deliveries.js';
import { TEST_EVENT, type WebhookControl } from '../../webhooks/dispatcher.js';
import { addListener, LISTENERS_MAX, listListeners, removeListener, renewListener, requestFromThisMachine } from '../../webhooks/listeners.js';
import { boolish, clientAuth, created, principal, success } from '../http.js';
import { aliasSchema, errorResponses, keyField, okResponse } from '../schemas/common.js';
import { Flag, Nullable, StringEnum, Type, typed, type Static } from '../schemas/typed.js';

/** The event list: an array (JSON, repeated form fields) or a comma list. */
const eventosField = Type.Unsafe<string[] | string>({
  type: ['array', 'string'],
  items: { type: 'string' },
  description: 'messages.received, message.status, session.status or all; array, repeated fields or a comma list',
});

/** `eventos`, or PHP's repeated form field `eventos[]=…` (the form parser keeps the brackets; read, not documented). */
const eventosOf = (b: { eventos?: string[] | string }): unknown => b.eventos ?? ('eventos[]' in b ? b['eventos[]'] : undefined);

/**
 * The webhook configuration (and its legacy endpoint), delivery
 * observability, and listeners (temporary extra destinations, `webhook
 * listen`). All client-wide: the client key only (core decides).
 */
export default async function webhookRoutes(
  fastify: FastifyInstance,
  { core, dispatcher }: { core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'signals' | 'credentials'>; dispatcher: WebhookControl },
) {
  const app = typed(fastify);
  const auth = clientAuth(core);
  const security = [{ bearer: [] }];
  const tags = ['webhook'];
  const description = 'Client key only: a celular key, gateway token or legacy token gets 403.';
  const configProps = {
    configurado: { type: 'boolean' },
    cliente_id: { type: 'integer' },
    url: { type: 'string' },
    has_secret: { type: 'boolean', description: 'the secret itself is never returned' },
    eventos: { type: 'array', items: { type: 'string' } },
    activo: { type: 'boolean' },
    updated_at: { type: 'string', format: 'date-time', nullable: true },
    eliminado: { type: 'boolean', description: 'DELETE only' },
    aviso: {
      type: 'string',
      description: 'set only, when there is something to know: the host does not resolve now (saved; deliveries are retried until it does)',
    },
  } as const;
  const configResponse = { 200: okResponse(configProps), ...errorResponses };
  const setProps = {
    key: Type.Optional(keyField),
    url: Type.Optional(Type.String({ maxLength: FIELD_LIMITS.url, description: 'http:// or https://' })),
    secret: Type.Optional(
      Type.String({ maxLength: FIELD_LIMITS.webhookSecret, description: `signing secret: ${WEBHOOK_SECRET_RULE}; stored, never returned` }),
    ),
    eventos: Type.Optional(eventosField),
    activo: Type.Optional(Flag('default true')),
  };
  const setBody = Type.Object(setProps);
  const input = (b: Static<typeof setBody>): WebhookInput => ({
    url: b.url,
    secret: b.secret,
    eventos: eventosOf(b),
    activo: b.activo === undefined ? true : boolish(b.activo, 'activo'),
  });

  app.get(API.webhook, {
    preValidation: auth,
    schema: { operationId: 'obtenerWebhook', tags, security, description, summary: 'The webhook configuration', response: configResponse },
    handler: async (req) => success(await getWebhook(core, principal(req))),
  });
  app.post(API.webhook, {
    preValidation: auth,
    schema: {
      operationId: 'configurarWebhook',
      tags,
      security,
      description,
      summary: 'Create or replace the webhook configuration (the one replaced is kept for webhook_restaurar)',
      body: setBody,
      response: configResponse,
    },
    handler: async (req) => success(await setWebhook(core, principal(req), input(req.body)), { descripcion: 'webhook configurado' }),
  });
  app.delete(API.webhook, {
    preValidation: auth,
    schema: { operationId: 'eliminarWebhook', tags, security, description, summary: 'Remove the webhook configuration', response: configResponse },
    handler: async (req) => success(await deleteWebhook(core, principal(req)), { descripcion: 'webhook eliminado' }),
  });
  app.post(API.webhookConfigurar, {
    preValidation: auth,
    schema: {
      operationId: 'configurarWebhookLegacy',
      tags,
      security,
      description,
      summary: 'Legacy: op=get|set|delete (prefer /api/webhook.php)',
      body: Type.Object({ ...setProps, op: StringEnum(['get', 'set', 'delete']) }),
      response: configResponse,
    },
    handler: async (req) => {
      const b = req.body;
      if (b.op === 'get') return success(await getWebhook(core, principal(req)));
      if (b.op === 'delete') return success(await deleteWebhook(core, principal(req)), { descripcion: 'webhook eliminado' });
      return success(await setWebhook(core, principal(req), input(b)), { descripcion: 'webhook configurado' });
    },
  });
  app.post(API.webhookRestaurar, {
    preValidation: auth,
    schema: {
      operationId: 'restaurarWebhook',
      tags,
      security,
      description,
      summary: 'Put back the configuration the last set or delete replaced (409 when there is none)',
      response: configResponse,
    },
    handler: async (req) => success(await restoreWebhook(core, principal(req)), { descripcion: 'webhook restaurado' }),
  });

  app.post(API.webhookTest, {
    preValidation: auth,
    schema: {
      operationId: 'probarWebhook',
      tags,
      security,
      description,
      summary: `Send a signed ${TEST_EVENT} event through the outbox, whatever the subscription, and a copy to every live listener (409 when there is neither a configuration nor a listener)`,
      response: { 200: okResponse({ id: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => success(await sendTestEvent(dispatcher, principal(req)), { descripcion: 'evento de prueba en cola' }),
  });

  const intento = {
    type: 'object',
    properties: {
      n: { type: 'integer' },
      fecha: { type: 'string' },
      status: { type: 'integer', nullable: true },
      duracion_ms: { type: 'integer' },
      error: { type: 'string', nullable: true },
    },
  } as const;
  const entregas = LIST_LIMITS.webhookEntregas;
  app.get(API.webhookEntregas, {
    preValidation: auth,
    schema: {
      operationId: 'listarEntregasWebhook',
      tags,
      security,
      description,
      summary: 'Recent deliveries, newest first, with every attempt',
      querystring: Type.Object({
        key: Type.Optional(keyField),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: entregas.max, default: entregas.default })),
      }),
      response: {
        200: okResponse({
          entregas: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'string' },
                evento: { type: 'string' },
                estado: { type: 'string', enum: ['pendiente', 'entregado', 'fallido'] },
                intentos: { type: 'integer' },
                created_at: { type: 'string' },
                entregado_at: { type: 'string', nullable: true },
                proximo_intento_at: { type: 'string', nullable: true },
                ultimo_error: { type: 'string', nullable: true },
                intentos_detalle: { type: 'array', items: intento },
              },
            },
          },
        }),
        ...errorResponses,
      },
    },
    handler: async (req) => success(await listDeliveries(core, principal(req), req.query.limit ?? entregas.default)),
  });

  const deliveryId = Type.String({ maxLength: FIELD_LIMITS.webhookId });
  app.post(API.webhookReenviar, {
    preValidation: auth,
    schema: {
      operationId: 'reenviarEntregaWebhook',
      tags,
      security,
      description,
      summary: 'Deliver one delivery again now (same id)',
      querystring: Type.Object({ key: Type.Optional(keyField), id: Type.Optional(deliveryId) }),
      body: Nullable(Type.Object({ key: Type.Optional(keyField), id: Type.Optional(deliveryId) })),
      response: { 200: okResponse({ id: { type: 'string' }, estado: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => {
      const id = req.query.id ?? req.body?.id ?? '';
      return success(await redeliver(core, dispatcher, principal(req), id), { descripcion: 'entrega reprogramada' });
    },
  });

  const failedFilter = Type.Object({
    key: Type.Optional(keyField),
    estado: Type.Optional(Type.String({ maxLength: 16, description: 'fallido (the only one redelivered at once)' })),
    evento: Type.Optional(Type.String({ maxLength: 64, description: 'only deliveries of this event (message.status, messages.received, session.status...)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: REDELIVER_BATCH_MAX, default: REDELIVER_BATCH_MAX })),
  });
  app.post(API.webhookReenviarFallidas, {
    preValidation: auth,
    schema: {
      operationId: 'reenviarEntregasFallidas',
      tags,
      security,
      description: `${description} Oldest first, at most limit (${REDELIVER_BATCH_MAX}) a call; quedan says failed ones remain: call again for the next batch.`,
      summary: 'Deliver every failed delivery again now (same ids), a batch at a time',
      querystring: failedFilter,
      body: Nullable(failedFilter),
      response: {
        200: okResponse({ reprogramadas: { type: 'integer' }, quedan: { type: 'boolean' }, ids: { type: 'array', items: { type: 'string' } } }),
        ...errorResponses,
      },
    },
    handler: async (req) => {
      const q = { ...req.query, ...(req.body ?? {}) };
      return success(await redeliverFailed(core, dispatcher, principal(req), { estado: q.estado, evento: q.evento, limit: q.limit }));
    },
  });

  // ---- listeners: temporary extra destinations (webhooks/listeners.ts) ----
  const escucha = {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'esc_ + 32 hex' },
      url: { type: 'string' },
      eventos: { type: 'array', items: { type: 'string' } },
      created_at: { type: 'string', format: 'date-time' },
      expira_at: { type: 'string', format: 'date-time', description: 'the lease ends here unless renewed' },
      vigencia_ms: { type: 'integer', description: 'how long each renewal extends the lease (renew every third of it)' },
    },
  } as const;
  const listenerDescription =
    `${description} A listener gets a copy of each of the client's events it subscribes to (webhook.test always), with the same id and body as the real delivery, ` +
    'signed with its own secret, while its lease is renewed; the configuration is never touched. Copies are best effort: a few quick attempts, nothing kept. ' +
    `At most ${LISTENERS_MAX} live per client (409, api_codigo 610, beyond).`;
  const idField = Type.String({ maxLength: FIELD_LIMITS.webhookId, description: 'the listener id (esc_...)' });
  const idQuery = Type.Object({ key: Type.Optional(keyField), id: Type.Optional(idField) });
  const idBody = Nullable(idQuery);
  /** The listener id: the query string's, else the body's (core refuses none). */
  const idOf = (query: { id?: string }, body: { id?: string } | null | undefined) => query.id ?? body?.id ?? '';

  app.get(API.webhookEscuchas, {
    preValidation: auth,
    schema: {
      operationId: 'listarEscuchas',
      tags,
      security,
      description: listenerDescription,
      summary: 'The live webhook listeners (secrets are never returned)',
      response: { 200: okResponse({ escuchas: { type: 'array', items: escucha } }), ...errorResponses },
    },
    handler: async (req) => success(await listListeners(core, principal(req))),
  });
  app.post(API.webhookEscuchas, {
    preValidation: auth,
    schema: {
      operationId: 'crearEscucha',
      tags,
      security,
      description:
        `${listenerDescription} The url is a loopback address (http://127.0.0.1:PORT/ or [::1]), accepted when the request comes from the server's own machine ` +
        '(its peer and every X-Forwarded-For or Forwarded address are loopback; with serve --trust-proxy that chain must be present) and the server listens on loopback ' +
        '(serve --host 127.0.0.1, ::1 or localhost), or with serve --allow-private-urls; or an https:// URL under the webhook address rule.',
      summary: 'Register a webhook listener; its signing secret is returned only here',
      body: Type.Object({
        key: Type.Optional(keyField),
        url: Type.Optional(Type.String({ maxLength: FIELD_LIMITS.url, description: 'http://127.0.0.1:PORT/... from this machine, or https://' })),
        eventos: Type.Optional(eventosField),
      }),
      response: {
        201: okResponse({ escucha, secret: { type: 'string', description: 'signs the copies (raw format, 43 characters); shown only now' } }),
        ...errorResponses,
      },
    },
    handler: async (req, reply) => {
      const b = req.body;
      const r = await addListener(
        core,
        principal(req),
        { url: b.url, eventos: eventosOf(b) },
        requestFromThisMachine(req.socket.remoteAddress, req.headers, core.config.trustProxy),
      );
      return created(reply, r, { descripcion: 'escucha registrada' });
    },
  });
  app.post(API.webhookEscuchasRenovar, {
    preValidation: auth,
    schema: {
      operationId: 'renovarEscucha',
      tags,
      security,
      description: `${listenerDescription} 404 (api_codigo 609) once the listener is removed or its lease has expired: register it again.`,
      summary: "Renew a listener's lease (every third of vigencia_ms)",
      querystring: idQuery,
      body: idBody,
      response: { 200: okResponse({ escucha }), ...errorResponses },
    },
    handler: async (req) => success(await renewListener(core, principal(req), idOf(req.query, req.body)), { descripcion: 'escucha renovada' }),
  });
  const removeSchema = {
    operationId: 'eliminarEscucha',
    tags,
    security,
    description: `${listenerDescription} No copy goes to it from then on (within a second on other nodes); 404 (api_codigo 609) when it was already removed or had expired.`,
    summary: 'Remove a listener',
    querystring: idQuery,
    body: idBody,
    response: { 200: okResponse({ id: { type: 'string' }, eliminado: { type: 'boolean' } }), ...errorResponses },
  };
  const remove = async (p: ClientPrincipal, id: string) => {
    const r = await removeListener(core, p, id);
    dispatcher.forgetListener(r.id);
    return success(r, { descripcion: 'escucha eliminada' });
  };
  app.delete(API.webhookEscuchas, { preValidation: auth, schema: removeSchema, handler: async (req) => remove(principal(req), idOf(req.query, req.body)) });
  app.post(API.webhookEscuchasEliminar, {
    preValidation: auth,
    schema: {
      ...aliasSchema(removeSchema, 'eliminarEscuchaAliasPost', `DELETE ${API.webhookEscuchas}`),
      summary: `Remove a listener (POST form of DELETE ${API.webhookEscuchas})`,
    },
    handler: async (req) => remove(principal(req), idOf(req.query, req.body)),
  });
}
