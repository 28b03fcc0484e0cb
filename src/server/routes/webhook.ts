import type { FastifyInstance } from 'fastify';
import { requireClientKey } from '../../core/auth.js';
import type { Core } from '../../core/context.js';
import { fail } from '../../core/errors.js';
import { entregaView } from '../../core/views.js';
import { deleteWebhook, getWebhook, restoreWebhook, setWebhook, type WebhookInput } from '../../webhooks/config.js';
import { TEST_EVENT, type WebhookDispatcher } from '../../webhooks/dispatcher.js';
import { bodyOf, boolish, clientAuth, principal, queryOf, success } from '../http.js';
import { errorResponses, keyField, okResponse } from '../schemas/common.js';

/** The webhook configuration (and its legacy endpoint), plus delivery observability. */
export default async function webhookRoutes(app: FastifyInstance, { core, dispatcher }: { core: Core; dispatcher: WebhookDispatcher }) {
  const auth = clientAuth(core);
  const security = [{ bearer: [] }];
  const tags = ['webhook'];
  const configProps = {
    configurado: { type: 'boolean' },
    cliente_id: { type: 'integer' },
    url: { type: 'string' },
    has_secret: { type: 'boolean', description: 'the secret itself is never returned' },
    eventos: { type: 'array', items: { type: 'string' } },
    activo: { type: 'boolean' },
    updated_at: { type: 'string', format: 'date-time', nullable: true },
    eliminado: { type: 'boolean', description: 'DELETE only' },
  } as const;
  const configResponse = { 200: okResponse(configProps), ...errorResponses };
  const setBody = {
    type: 'object',
    properties: {
      key: keyField,
      url: { type: 'string', maxLength: 2048, description: 'http:// or https://' },
      secret: { type: 'string', maxLength: 256, description: 'signing secret: printable ASCII; stored, never returned' },
      eventos: { type: ['array', 'string'], items: { type: 'string' }, description: 'messages.received, message.status, session.status or all; array, repeated fields or a comma list' },
      activo: { type: ['boolean', 'integer', 'string'], description: 'default true' },
    },
  } as const;
  const input = (b: Record<string, unknown>): WebhookInput => ({ url: b.url, secret: b.secret, eventos: b.eventos ?? b['eventos[]'], activo: b.activo === undefined ? true : boolish(b.activo, 'activo') });

  app.get('/api/webhook.php', {
    preValidation: auth,
    schema: { tags, security, summary: 'The webhook configuration', response: configResponse },
    handler: async (req) => success(await getWebhook(core, principal(req))),
  });
  app.post('/api/webhook.php', {
    preValidation: auth,
    schema: { tags, security, summary: 'Create or replace the webhook configuration (the one replaced is kept for webhook_restaurar)', body: setBody, response: configResponse },
    handler: async (req) => success(await setWebhook(core, principal(req), input(bodyOf(req))), { descripcion: 'webhook configurado' }),
  });
  app.delete('/api/webhook.php', {
    preValidation: auth,
    schema: { tags, security, summary: 'Remove the webhook configuration', response: configResponse },
    handler: async (req) => success(await deleteWebhook(core, principal(req)), { descripcion: 'webhook eliminado' }),
  });
  app.post('/api/webhook_configurar.php', {
    preValidation: auth,
    schema: {
      tags,
      security,
      summary: 'Legacy: op=get|set|delete (prefer /api/webhook.php)',
      body: { ...setBody, required: ['op'], properties: { ...setBody.properties, op: { type: 'string', enum: ['get', 'set', 'delete'] } } },
      response: configResponse,
    },
    handler: async (req) => {
      const b = bodyOf(req);
      if (b.op === 'get') return success(await getWebhook(core, principal(req)));
      if (b.op === 'delete') return success(await deleteWebhook(core, principal(req)), { descripcion: 'webhook eliminado' });
      return success(await setWebhook(core, principal(req), input(b)), { descripcion: 'webhook configurado' });
    },
  });
  app.post('/api/webhook_restaurar.php', {
    preValidation: auth,
    schema: { tags, security, summary: 'Put back the configuration the last set or delete replaced (409 when there is none)', response: configResponse },
    handler: async (req) => success(await restoreWebhook(core, principal(req)), { descripcion: 'webhook restaurado' }),
  });

  app.post('/api/webhook_test.php', {
    preValidation: auth,
    schema: {
      tags,
      security,
      summary: `Send a signed ${TEST_EVENT} event through the outbox, whatever the subscription`,
      response: { 200: okResponse({ id: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => {
      const p = principal(req);
      requireClientKey(p, 'sending a test event');
      const id = await dispatcher.enqueueTest(p.cliente.id, { mensaje: 'evento de prueba de pasarela' });
      if (!id) fail('CONFLICT', 'no webhook is configured: set one first (POST /api/webhook.php)');
      return success({ id }, { descripcion: 'evento de prueba en cola' });
    },
  });

  const intento = {
    type: 'object',
    properties: { n: { type: 'integer' }, fecha: { type: 'string' }, status: { type: 'integer', nullable: true }, duracion_ms: { type: 'integer' }, error: { type: 'string', nullable: true } },
  } as const;
  app.get('/api/webhook_entregas.php', {
    preValidation: auth,
    schema: {
      tags,
      security,
      summary: 'Recent deliveries, newest first, with every attempt',
      querystring: { type: 'object', properties: { key: keyField, limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 } } },
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
    handler: async (req) => {
      const p = principal(req);
      const rows = await core.store.listEntregas(p.cliente.id, (queryOf(req).limit as number) ?? 50);
      return success({ entregas: rows.map(entregaView) });
    },
  });

  app.post('/api/webhook_reenviar.php', {
    preValidation: auth,
    schema: {
      tags,
      security,
      summary: 'Deliver one delivery again now (same id)',
      querystring: { type: 'object', properties: { key: keyField, id: { type: 'string', maxLength: 64 } } },
      response: { 200: okResponse({ id: { type: 'string' }, estado: { type: 'string' } }), ...errorResponses },
    },
    handler: async (req) => {
      const p = principal(req);
      requireClientKey(p, 'redelivering');
      const id = String(queryOf(req).id ?? bodyOf(req).id ?? '');
      if (!id) fail('INVALID_PARAMS', 'id is required');
      if (!(await core.store.redeliver(p.cliente.id, id, core.clock.now()))) fail('DELIVERY_NOT_FOUND', `no delivery ${id} for this client`);
      dispatcher.poke(p.cliente.id);
      return success({ id, estado: 'pendiente' }, { descripcion: 'entrega reprogramada' });
    },
  });
}
