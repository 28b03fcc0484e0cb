import type { ClientPrincipal } from '../auth/auth.js';
import { iso } from '../time/clock.js';
import { Retention } from './retention.js';
import type { Core } from '../context.js';
import { listingScope, mediaFields, mediaObject, numeroParam, pageFields, type ListingQuery, type MediaView } from './historial.js';
import { normalizeNumero } from '../accounts/phone.js';
import type { GatewayEvent } from '../ports/gateway.js';
import type { InboxFilter, NewRecibido } from '../ports/messages.js';
import type { CelularRow, RecibidoRow } from '../ports/model.js';

/**
 * The inbox (docs/design.md §10): incoming messages as they were recorded,
 * listed like the history (§8): newest first, a page at a time, with the
 * total; days in the server's zone; a celular credential sees its own line.
 * Kept for a retention period (`serve --inbox-retention`), then purged.
 */

export interface RecibidosQuery extends ListingQuery {
  /** The sender: a number, normalised like a send's recipient; or a gateway contact id (`…@lid`), matched exactly. */
  remitente?: string;
}

/**
 * The sender as the inbox keeps it: a phone number in the form every other
 * number of pasarela has (normalizeNumero: the history's recipients, the
 * `remitente` filter), so the old Mexican mobile `521…` a WhatsApp id
 * carries is kept as `52…`; anything that is not a number (a hidden-number
 * `…@lid` contact id) as the gateway gave it. The event's `de` is not
 * touched: webhook payloads keep the gateway's digits.
 */
export function inboxSender(de: string): string {
  if (!/^[0-9]+$/.test(de)) return de;
  const n = normalizeNumero(`+${de}`);
  return n.ok ? n.numero : de;
}

/** U+0000 as U+FFFD: PostgreSQL's text cannot hold it, and a sender may write anything (the event's JSON keeps it escaped). */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what is replaced
const noNul = (s: string) => s.replace(/\u0000/g, '\uFFFD');

/** The inbox row of an incoming message to `celular`; a gateway time that is no instant (or not whole ms) is taken as `now`'s or rounded. */
export function newRecibido(celular: CelularRow, e: Extract<GatewayEvent, { type: 'inbound' }>, now: number): NewRecibido {
  const at = Math.round(e.at);
  return {
    cliente_id: celular.cliente_id,
    celular_id: celular.id,
    de: noNul(inboxSender(e.de)),
    tipo: noNul(e.tipo),
    texto: e.texto === null ? null : noNul(e.texto),
    media: e.media,
    gateway_msg_id: noNul(e.gatewayMsgId),
    fecha: Number.isFinite(at) && Math.abs(at) <= 8.64e15 ? at : now,
  };
}

/** Media of an incoming message: what the gateway said about it, never its bytes. */
export interface MediaRecibidaView extends MediaView {
  /** An audio recorded as a voice note. */
  ptt?: boolean;
}

/** Parsed once: the history's documented fields, and ptt. */
function mediaRecibida(raw: string | null): MediaRecibidaView | null {
  const o = mediaObject(raw);
  if (o === null) return null;
  const m: MediaRecibidaView = mediaFields(o);
  if (typeof o.ptt === 'boolean') m.ptt = o.ptt;
  return m;
}

export function recibidoView(r: RecibidoRow) {
  return {
    id: r.id,
    celular_id: r.celular_id,
    de: r.de,
    tipo: r.tipo,
    texto: r.texto,
    media: mediaRecibida(r.media),
    gateway_msg_id: r.gateway_msg_id,
    fecha: iso(r.fecha),
    created_at: iso(r.created_at),
  };
}

export type RecibidoView = ReturnType<typeof recibidoView>;

/** Turns the query of recibidos_listar into a store filter, or refuses it with 400/403/404. */
export async function inboxFilter(core: Pick<Core, 'store' | 'config'>, p: ClientPrincipal, q: RecibidosQuery): Promise<InboxFilter> {
  const { scope, celular } = await listingScope(core, p, q);
  const f: InboxFilter = { ...scope };
  if (q.remitente !== undefined) f.de = q.remitente.includes('@') ? q.remitente : numeroParam('remitente', q.remitente, celular);
  return f;
}

export async function listRecibidos(core: Pick<Core, 'store' | 'config'>, p: ClientPrincipal, q: RecibidosQuery) {
  const f = await inboxFilter(core, p, q);
  const { total, rows } = await core.store.listRecibidos(f);
  return { ...pageFields(core, f, total), recibidos: rows.map(recibidoView) };
}

/** Rows removed per statement: a pass never holds the store for long. */
export const PURGE_BATCH = 1000;

/**
 * The inbox's retention (core/history/retention.ts): a pass removes every row
 * recorded more than `retentionMs` before now, oldest first, a batch per
 * statement through the created_at index; `retentionMs` 0 keeps everything.
 */
export function inboxRetention(
  core: Pick<Core, 'store' | 'clock'>,
  opts: { retentionMs: number; intervalMs: number; onError: (err: unknown) => void },
): Retention {
  return new Retention(core, { ...opts, batch: PURGE_BATCH, purge: (before, limit) => core.store.purgeRecibidos(before, limit) });
}
