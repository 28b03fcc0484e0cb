import { requireClientKey, type ClientPrincipal } from '../core/auth.js';
import type { Core } from '../core/context.js';
import { fail } from '../core/errors.js';
import { entregaView } from '../core/views.js';
import type { WebhookControl } from './dispatcher.js';

/**
 * Delivery observability and the actions on it. Like the configuration,
 * these are client-wide (every line's events, a receiver URL that often
 * carries its own token), so they need the client key: a line credential
 * gets 403.
 */

export async function listDeliveries(core: Core, p: ClientPrincipal, limit: number) {
  requireClientKey(p, 'listing webhook deliveries');
  const rows = await core.store.listEntregas(p.cliente.id, limit);
  return { entregas: rows.map(entregaView) };
}

/** Makes one delivery due again now (same id). */
export async function redeliver(core: Core, dispatcher: WebhookControl, p: ClientPrincipal, id: string) {
  requireClientKey(p, 'redelivering');
  if (!id) fail('INVALID_PARAMS', 'id is required');
  if (!(await core.store.redeliver(p.cliente.id, id, core.clock.now()))) fail('DELIVERY_NOT_FOUND', `no delivery ${id} for this client`);
  dispatcher.poke(p.cliente.id);
  return { id, estado: 'pendiente' as const };
}

/** Queues a signed test event, whatever the subscription, and copies it to live listeners; 409 with neither. */
export async function sendTestEvent(dispatcher: WebhookControl, p: ClientPrincipal) {
  requireClientKey(p, 'sending a test event');
  const id = await dispatcher.enqueueTest(p.cliente.id, { mensaje: 'evento de prueba de pasarela' });
  if (!id) fail('CONFLICT', 'no webhook is configured and no listener is live: set one first (POST /api/webhook.php)');
  return { id };
}
