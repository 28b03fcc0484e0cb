import type { LoggedEvent } from '../events/event-log.js';
import type { AuditOf, EntregaRow, EscuchaRow, JournalEvent, WebhookConfig } from './model.js';

/** A client with pending deliveries, and when its first falls due. */
export interface EntregaQueue {
  cliente_id: number;
  next_at: number;
}

/** Who claims deliveries (a token of one claim) and until when; `firstOnly`: only deliveries never attempted. */
export interface EntregaClaim {
  id: string;
  until: number;
  firstOnly?: boolean;
}

/** One attempt to record: recordAttempt's arguments. */
export interface AttemptRecord {
  id: string;
  claimId: string;
  attempt: { status: number | null; duracion_ms: number; error: string | null };
  outcome: { estado: 'pendiente' | 'entregado' | 'fallido'; proximo_intento_at?: number };
  now: number;
  /** The node that made the attempt (a message's story shows it, D-98). */
  nodo?: string | null;
}

/** claimEntregas's arguments: up to `limit` of one client's deliveries due by `now`, under `claim`. */
export interface EntregaClaimRequest {
  clienteId: number;
  now: number;
  limit: number;
  claim: EntregaClaim;
}

/** A client whose pending deliveries fail (the overview). */
export interface FailingWebhook {
  cliente_id: number;
  /** Pending deliveries that have failed at least once. */
  pendientes: number;
  /** The most attempts any of them has had. */
  intentos: number;
  /** When the oldest of them was logged, ms. */
  desde: number;
  /** The newest one's last error. */
  ultimo_error: string | null;
}

/** One delivery of a message's event (entregasDeMensaje): its row's state and last attempt, and its failed attempts' rows. */
export interface EntregaDeMensaje {
  id: string;
  evento: string;
  /** The event's data, as stored (JSON text). */
  data: string;
  fecha: number;
  entrega: 'pendiente' | 'entregado' | 'fallido';
  intentos: number;
  entregado_at: number | null;
  ultimo_status: number | null;
  ultima_duracion_ms: number | null;
  ultimo_nodo: string | null;
  fallidos: Array<IntentoRow & { nodo: string | null }>;
}

export interface IntentoRow {
  n: number;
  fecha: number;
  status: number | null;
  duracion_ms: number;
  error: string | null;
}

/**
 * Webhook configurations and the event log (core/events/event-log.ts): every event
 * is one row, and the row of an event the client's configuration wanted is
 * also its delivery, claimed, attempted and recorded in place.
 */
export interface WebhooksStore {
  /**
   * Logs a test event now: a delivery when `deliver` (a configuration
   * exists, whatever its subscriptions), and in the log for the client's
   * listeners and streams either way. Its id.
   */
  logTestEvent(ev: JournalEvent, deliver: boolean): Promise<string>;
  /** A client's events after the one `afterId` names (null: from the oldest kept), oldest first, at most `limit`. */
  eventsAfter(clienteId: number, afterId: string | null, limit: number): Promise<LoggedEvent[]>;
  /** Whether `id` names one of the client's events still in the log (false for another client's, a pruned one, or an id of another shape). */
  eventKept(clienteId: number, id: string): Promise<boolean>;
  /**
   * The id of the client's newest event in log order (what eventsAfter would
   * read last), null for none: a stream that starts now starts after it.
   * With `back`, the event that many before the newest (a stream started
   * after it reads the last `back` first), null when the log holds no more:
   * a keyset walk down the client's log index, `back` rows at most.
   */
  newestEventId(clienteId: number, back?: number): Promise<string | null>;
  /**
   * Takes the events a listener has not had yet (its client's, in log order,
   * at most `limit`), moving its cursor past them in the same statement:
   * what one call returns no other call returns, on any node. Empty for a
   * listener that is gone or expired at `now`.
   */
  takeEscuchaEvents(escuchaId: string, limit: number, now: number): Promise<LoggedEvent[]>;
  /** Live listeners of every client (few: each client may have a handful), for the dispatcher's copies. */
  allLiveEscuchas(now: number): Promise<EscuchaRow[]>;
  /** Removes up to `limit` events older than `before` with nothing left to deliver; how many went. */
  pruneEvents(before: number, limit: number): Promise<number>;
  getWebhook(clienteId: number): Promise<WebhookConfig | null>;
  /**
   * Saves the configuration, keeping the one it replaces for restoreWebhook.
   * Each change below writes `audit` of the configuration before and after it
   * (null: none) in its own transaction; nothing when it changed nothing.
   */
  setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<WebhookConfig>;
  /** Removes the configuration (kept for restoreWebhook); false when there was none. */
  deleteWebhook(clienteId: number, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<boolean>;
  /** Puts back the configuration the last set or delete replaced; 'nada' when there is none. */
  restoreWebhook(clienteId: number, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<WebhookConfig | null | 'nada'>;
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
  /**
   * The dispatcher's look (it starts from this, then looks every poll): every client with pending deliveries and when
   * its first falls due; with `listeners`, every live listener too (allLiveEscuchas), in the same read, so an idle
   * node's safety look is one round trip (D-191); else `escuchas` is null.
   */
  webhookLook(now: number, listeners: boolean): Promise<{ queues: EntregaQueue[]; escuchas: EscuchaRow[] | null }>;
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
  /** Several attempts' records at once (one statement on PostgreSQL, one transaction on SQLite), each answered as recordAttempt answers it. */
  recordAttempts(list: AttemptRecord[]): Promise<boolean[]>;
  /**
   * recordAttempts(list) and claimEntregas(claim) in one statement
   * (PostgreSQL) or transaction (SQLite), each answered as it would be alone:
   * a dispatcher's finished attempts ride on its next claim, one round trip
   * for both. The claim never takes a delivery the same call records.
   */
  recordAndClaim(list: AttemptRecord[], claim: EntregaClaimRequest): Promise<{ recorded: boolean[]; claimed: EntregaRow[] }>;
  /** Newest first; `offset` skips that many (the panel's pages). */
  listEntregas(clienteId: number, limit: number, offset?: number): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>>;
  /** How many deliveries the client has, counted up to `bound` (the panel's pager; past it, `bound`). */
  countEntregas(clienteId: number, bound: number): Promise<number>;
  /**
   * The deliveries of one message's events, in log order, through the log's
   * index by the data's msg_id: at most `entregas` of them (one more tells
   * there are more), each with at most `intentos` of its failed attempts'
   * rows, first ones first.
   */
  entregasDeMensaje(clienteId: number, msgId: string, max: { entregas: number; intentos: number }): Promise<EntregaDeMensaje[]>;
  /** Metrics: the outbox's pending deliveries, and how many of them are due by `now` (the rest wait for a retry). */
  outboxDepth(now: number): Promise<{ pending: number; due: number }>;
  /**
   * The operator's overview: clients whose pending deliveries have failed at
   * least once (their receiver is down or refusing), most waiting first. Read
   * from the pending deliveries' partial index like outboxDepth: the cost
   * follows the backlog, not the log.
   */
  failingWebhooks(limit: number): Promise<FailingWebhook[]>;
  /** Makes a delivery pending again, due now (same id); false when it is not this client's. */
  redeliver(clienteId: number, id: string, now: number): Promise<boolean>;
  /**
   * Makes up to `limit` of the client's failed deliveries (of event `evento`
   * when given) pending again, due now, oldest first, in one statement; how
   * many, and whether failed ones remain after them. A range of the failed
   * deliveries' partial index (migration 22/18): the cost follows the batch.
   */
  redeliverFailed(clienteId: number, evento: string | null, limit: number, now: number): Promise<{ ids: string[]; quedan: boolean }>;
  /** Deactivates a client's configuration (a receiver answered 410 Gone). */
  deactivateWebhook(clienteId: number, now: number): Promise<void>;

  /**
   * Atomic: removes the client's expired listeners, then adds `e` unless
   * `max` are live at `now` ('limite'). Its copies start with the events
   * logged after it was added.
   */
  addEscucha(e: EscuchaRow, max: number, now: number): Promise<EscuchaRow | 'limite'>;
  /** Moves a live listener's `expira_at`; null when it is not this client's or has expired. */
  renewEscucha(clienteId: number, id: string, expiraAt: number, now: number): Promise<EscuchaRow | null>;
  /** Removes a listener; false when it was not this client's or had already expired. */
  deleteEscucha(clienteId: number, id: string, now: number): Promise<boolean>;
  /** The client's listeners live at `now`, oldest first. */
  liveEscuchas(clienteId: number, now: number): Promise<EscuchaRow[]>;
}

/** One event's copy for one listener. */
export interface ListenerCopy {
  escucha: EscuchaRow;
  id: string;
  evento: string;
  body: string;
}
