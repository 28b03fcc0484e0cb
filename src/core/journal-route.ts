import type { EscuchaRow, JournalEvent, WebhookConfig } from './ports/model.js';
import type { EventRoute, ListenerCopy } from './ports/webhooks.js';

/**
 * Moving the event journal to the outbox, the part every store shares: a
 * batch of journal rows, each client's configuration and live listeners (read
 * once per client by the store), routed into the deliveries to enqueue and
 * the listeners' copies. The store reads, calls this, and writes what it says.
 */

/** A journal row as the stores read it (`data` as stored, JSON text). */
export interface JournalRow {
  seq: number;
  cliente_id: number;
  celular_id: number | null;
  evento: string;
  data: string;
  fecha: number;
}

export interface RoutedJournal {
  /** Deliveries to enqueue, in the journal's order. */
  entregas: Array<{ id: string; cliente_id: number; evento: string; body: string }>;
  copies: ListenerCopy[];
}

/** The clients a batch concerns, each once: a batch is mostly a few clients' events. */
export function journalClients(events: JournalRow[]): number[] {
  return [...new Set(events.map((e) => e.cliente_id))];
}

/** Routes a batch with the configurations and listeners read for `journalClients(events)`. */
export function routeJournal(
  events: JournalRow[],
  configs: Map<number, WebhookConfig | null>,
  listeners: Map<number, EscuchaRow[]>,
  route: EventRoute,
): RoutedJournal {
  const out: RoutedJournal = { entregas: [], copies: [] };
  for (const e of events) {
    const ev: JournalEvent = {
      evento: e.evento,
      cliente_id: e.cliente_id,
      celular_id: e.celular_id,
      data: JSON.parse(e.data) as Record<string, unknown>,
      fecha: e.fecha,
    };
    const r = route(ev, configs.get(e.cliente_id) ?? null, listeners.get(e.cliente_id) ?? []);
    if (!r) continue;
    if (r.entrega) out.entregas.push({ id: r.id, cliente_id: e.cliente_id, evento: e.evento, body: r.body });
    for (const escucha of r.copias) out.copies.push({ escucha, id: r.id, evento: e.evento, body: r.body });
  }
  return out;
}
