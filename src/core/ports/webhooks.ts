import type { EntregaRow, EscuchaRow, JournalEvent, WebhookConfig } from './model.js';

/** Who claims deliveries (a token of one claim) and until when; `firstOnly`: only deliveries never attempted. */
export interface EntregaClaim {
  id: string;
  until: number;
  firstOnly?: boolean;
}

export interface IntentoRow {
  n: number;
  fecha: number;
  status: number | null;
  duracion_ms: number;
  error: string | null;
}

/** Webhook configurations, the outbox moved from the journal, deliveries and their attempts. */
export interface WebhooksStore {
  /**
   * Atomic: takes up to `limit` journaled events in order, turns each into an
   * outbox delivery when `route` says so (given the client's configuration
   * and its listeners live at `now`), and removes them from the journal.
   * Returns how many were taken and the listener copies `route` asked for,
   * of the transaction that committed only (a retried one routes again).
   */
  moveEventsToOutbox(limit: number, route: EventRoute, now: number): Promise<{ taken: number; copies: ListenerCopy[] }>;
  getWebhook(clienteId: number): Promise<WebhookConfig | null>;
  /** Saves the configuration, keeping the one it replaces for restoreWebhook. */
  setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number): Promise<WebhookConfig>;
  /** Removes the configuration (kept for restoreWebhook); false when there was none. */
  deleteWebhook(clienteId: number, now: number): Promise<boolean>;
  /** Puts back the configuration the last set or delete replaced; 'nada' when there is none. */
  restoreWebhook(clienteId: number, now: number): Promise<WebhookConfig | null | 'nada'>;
  enqueueEntrega(e: { id: string; cliente_id: number; evento: string; body: string }, now: number): Promise<void>;
  /** A client's due deliveries (pendiente, proximo_intento_at <= now), in the order they fell due. */
  dueEntregas(clienteId: number, now: number, limit: number): Promise<EntregaRow[]>;
  /**
   * Claims up to `limit` of a client's due deliveries for one holder, in one
   * statement: pending, due by `now`, and not claimed (or claimed until a
   * time that has passed: a holder that died), in the order they fell due.
   * What one claim returns no other returns while it is in force, on any
   * number of nodes: each due delivery is attempted once per due time.
   */
  claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]>;
  /** Gives back claimed deliveries that were not attempted (a stop abandons its attempts): due again at their own time, for anyone. */
  releaseEntregas(ids: string[], claimId: string): Promise<number>;
  /** When a client's next pending delivery may be claimed after `after` (its due time, or the end of a claim on it); null when none. */
  nextEntregaAt(clienteId: number, after: number): Promise<number | null>;
  /** Every client with pending deliveries and when its first falls due (the dispatcher starts from this). */
  entregaQueues(): Promise<Array<{ cliente_id: number; next_at: number }>>;
  /**
   * Records one attempt and the delivery's new state together, clearing its
   * claim in the same statement; only while the claim is still `claimId`'s
   * (false, nothing written, once it ran out and another holder took it).
   */
  recordAttempt(
    id: string,
    claimId: string,
    attempt: { status: number | null; duracion_ms: number; error: string | null },
    outcome: { estado: 'pendiente' | 'entregado' | 'fallido'; proximo_intento_at?: number },
    now: number,
  ): Promise<boolean>;
  listEntregas(clienteId: number, limit: number): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>>;
  /** Metrics: the outbox's pending deliveries, and how many of them are due by `now` (the rest wait for a retry). */
  outboxDepth(now: number): Promise<{ pending: number; due: number }>;
  /** Makes a delivery pending again, due now (same id); false when it is not this client's. */
  redeliver(clienteId: number, id: string, now: number): Promise<boolean>;
  /** Deactivates a client's configuration (a receiver answered 410 Gone). */
  deactivateWebhook(clienteId: number, now: number): Promise<void>;

  /**
   * Atomic: removes the client's expired listeners, then adds `e` unless
   * `max` are live at `now` ('limite'). While one is live, the client's
   * events are journaled even without an active configuration.
   */
  addEscucha(e: EscuchaRow, max: number, now: number): Promise<EscuchaRow | 'limite'>;
  /** Moves a live listener's `expira_at`; null when it is not this client's or has expired. */
  renewEscucha(clienteId: number, id: string, expiraAt: number, now: number): Promise<EscuchaRow | null>;
  /** Removes a listener; false when it was not this client's or had already expired. */
  deleteEscucha(clienteId: number, id: string, now: number): Promise<boolean>;
  /** The client's listeners live at `now`, oldest first. */
  liveEscuchas(clienteId: number, now: number): Promise<EscuchaRow[]>;
}

/**
 * What the journal's move makes of one event, under one id and body: a
 * delivery in the outbox (`entrega`) and copies for listeners (`copias`);
 * null for nothing.
 */
export type EventRoute = (
  ev: JournalEvent,
  cfg: WebhookConfig | null,
  escuchas: EscuchaRow[],
) => { id: string; body: string; entrega: boolean; copias: EscuchaRow[] } | null;

/** One event's copy for one listener, as a move hands it out. */
export interface ListenerCopy {
  escucha: EscuchaRow;
  id: string;
  evento: string;
  body: string;
}
