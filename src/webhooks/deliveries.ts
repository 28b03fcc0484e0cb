import { actorOf, requireClientKey, type ClientPrincipal } from '../core/auth/auth.js';
import type { Core } from '../core/context.js';
import { fail } from '../core/api/errors.js';
import { entregaView } from '../core/api/views.js';
import type { WebhookControl } from './dispatcher.js';

/**
 * Delivery observability and the actions on it. Like the configuration,
 * these are client-wide (every line's events, a receiver URL that often
 * carries its own token), so they need the client key: a line credential
 * gets 403.
 */

export async function listDeliveries(core: Pick<Core, 'store'>, p: ClientPrincipal, limit: number) {
  requireClientKey(p, 'listing webhook deliveries');
  const rows = await core.store.listEntregas(p.cliente.id, limit);
  return { entregas: rows.map(entregaView) };
}

/**
 * How far the panel's pager counts a client's deliveries (50 pages of 20): past it the last page is
 * unknown and the pager offers the next page while a page is full, as the movements' does (D-104).
 * Counting to 10,000 read that many index entries on every poll of the page (1.5 ms at 1,000,000
 * messages, figure 14's whole gap); 1,000 reads a tenth (D-135).
 */
export const DELIVERIES_COUNT_BOUND = 1_000;

/**
 * A page of the client's deliveries, newest first, and how many pages there
 * are (counted to `DELIVERIES_COUNT_BOUND`): the panel's Deliveries, paged by
 * the shared pager. A page past the end is empty and says how many there are.
 */
export async function deliveriesPage(core: Pick<Core, 'store'>, p: ClientPrincipal, page: number, porPagina: number) {
  requireClientKey(p, 'listing webhook deliveries');
  const [rows, total] = await Promise.all([
    core.store.listEntregas(p.cliente.id, porPagina, (page - 1) * porPagina),
    core.store.countEntregas(p.cliente.id, DELIVERIES_COUNT_BOUND),
  ]);
  const counted = total < DELIVERIES_COUNT_BOUND;
  return { entregas: rows.map(entregaView), total, page, total_paginas: counted ? Math.ceil(total / porPagina) : null };
}

/** Makes one delivery due again now (same id). */
export async function redeliver(core: Pick<Core, 'store' | 'clock'>, dispatcher: WebhookControl, p: ClientPrincipal, id: string) {
  requireClientKey(p, 'redelivering');
  if (!id) fail('INVALID_PARAMS', 'id is required');
  if (!(await core.store.redeliver(p.cliente.id, id, core.clock.now()))) fail('DELIVERY_NOT_FOUND', `no delivery ${id} for this client`);
  dispatcher.poke(p.cliente.id);
  return { id, estado: 'pendiente' as const };
}

/** The most failed deliveries one redeliver makes due again; the answer says when more remain. */
export const REDELIVER_BATCH_MAX = 500;

/**
 * Makes a batch of the client's failed deliveries (of one event kind when
 * `evento` is given) due again now, oldest first, same ids; says how many and
 * whether failed ones remain (call again for the next batch). Audited.
 */
export async function redeliverFailed(
  core: Pick<Core, 'store' | 'clock'>,
  dispatcher: Pick<WebhookControl, 'poke'>,
  p: ClientPrincipal,
  q: { estado?: string; evento?: string; limit?: number },
) {
  requireClientKey(p, 'redelivering');
  if ((q.estado ?? 'fallido') !== 'fallido') fail('INVALID_PARAMS', 'estado: only failed deliveries (fallido) are redelivered at once');
  const limit = q.limit ?? REDELIVER_BATCH_MAX;
  if (!Number.isInteger(limit) || limit < 1 || limit > REDELIVER_BATCH_MAX) fail('INVALID_PARAMS', `limit must be 1 to ${REDELIVER_BATCH_MAX}`);
  const evento = q.evento?.trim() || null;
  const now = core.clock.now();
  const r = await core.store.redeliverFailed(p.cliente.id, evento, limit, now);
  if (r.ids.length > 0) dispatcher.poke(p.cliente.id);
  await core.store.audit(
    {
      actor: actorOf(p),
      accion: 'webhook.reentregar_fallidas',
      objeto_tipo: 'webhook',
      objeto_id: null,
      cliente_id: p.cliente.id,
      detalle: { evento, reprogramadas: r.ids.length, quedan: r.quedan, ids: r.ids },
    },
    now,
  );
  return { reprogramadas: r.ids.length, quedan: r.quedan, ids: r.ids };
}

/** Queues a signed test event, whatever the subscription, and copies it to live listeners; 409 with neither. */
export async function sendTestEvent(dispatcher: WebhookControl, p: ClientPrincipal) {
  requireClientKey(p, 'sending a test event');
  const id = await dispatcher.enqueueTest(p.cliente.id, { mensaje: 'evento de prueba de pasarela' });
  if (!id) fail('CONFLICT', 'no webhook is configured and no listener is live: set one first (POST /api/webhook.php)');
  return { id };
}
