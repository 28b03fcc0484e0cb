import { iso } from '../time/clock.js';
import type { EntregaRow, JournalEvent } from '../ports/model.js';

/**
 * The event log (docs/decisions.md D-69), the part every store shares. Each
 * event is one row, written with the change it reports; the same row is the
 * webhook delivery when the client's configuration wanted the event. An
 * event's id is made from the store's prefix (random, chosen when the log
 * was created: ids never repeat across installations, which receivers that
 * deduplicate on `webhook-id` rely on) and the row's sequence number, so an
 * id leads back to its row through the primary key with no index of its own.
 */

/** How long events are kept once nothing is left to deliver: a stream resumes by id within this (at least the 24 h the design promises). */
export const EVENT_RETENTION_MS = 72 * 3_600_000;
/** Events pruned per statement: a prune never holds the writer for long. */
export const EVENT_PRUNE_BATCH = 1000;

/** The kv row that holds the prefix (namespace, key). */
export const EVENT_PREFIX_KV = { ns: 'store', key: 'eventos_prefijo' } as const;

const SEQ_HEX = 24;

/** `evt_` + 8 hex of prefix + 24 hex of sequence: 32 hex digits, as the random ids before it. */
export function eventId(prefix: string, seq: number): string {
  return `evt_${prefix}${seq.toString(16).padStart(SEQ_HEX, '0')}`;
}

/** The sequence number an id names in this store; null for an id of another store or another shape. */
export function eventSeq(prefix: string, id: string): number | null {
  const head = `evt_${prefix}`;
  if (!id.startsWith(head) || id.length !== head.length + SEQ_HEX) return null;
  const hex = id.slice(head.length);
  if (!/^[0-9a-f]+$/.test(hex)) return null;
  const seq = Number.parseInt(hex, 16);
  return Number.isSafeInteger(seq) && seq > 0 ? seq : null;
}

/** A row of the log as both stores read it (`data` as stored, JSON text). */
export interface EventLogRow {
  seq: number;
  cliente_id: number;
  celular_id: number | null;
  evento: string;
  data: string;
  fecha: number;
}

/** An event as a reader of the log gets it: with its id. */
export interface LoggedEvent extends JournalEvent {
  id: string;
}

export function loggedEvent(prefix: string, r: EventLogRow): LoggedEvent {
  return {
    id: eventId(prefix, r.seq),
    evento: r.evento,
    cliente_id: r.cliente_id,
    celular_id: r.celular_id,
    data: JSON.parse(r.data) as Record<string, unknown>,
    fecha: r.fecha,
  };
}

/**
 * The body every delivery attempt, listener copy and stream entry of an
 * event carries, made from the row each time: the same bytes every time
 * (JSON keeps key order; the client's id is a field of its own, not of data).
 */
export function eventBody(ev: LoggedEvent): string {
  const { cliente_id: _c, ...data } = ev.data;
  return JSON.stringify({ id: ev.id, evento: ev.evento, fecha: iso(ev.fecha), cliente_id: ev.cliente_id, celular_id: ev.celular_id, data });
}

/** A delivery row of the log as both stores read it. */
export interface EntregaLogRow extends EventLogRow {
  entrega: EntregaRow['estado'];
  intentos: number;
  proximo_intento_at: number;
  entregado_at: number | null;
  ultimo_error: string | null;
}

/** The delivery a log row is, as the dispatcher and the API see it. */
export function entregaOf(prefix: string, r: EntregaLogRow): EntregaRow {
  const ev = loggedEvent(prefix, r);
  return {
    id: ev.id,
    cliente_id: r.cliente_id,
    evento: r.evento,
    body: eventBody(ev),
    estado: r.entrega,
    intentos: r.intentos,
    proximo_intento_at: r.proximo_intento_at,
    created_at: r.fecha,
    entregado_at: r.entregado_at,
    ultimo_error: r.ultimo_error,
  };
}
