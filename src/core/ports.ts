import type { CapHit, SlotClaim } from './caps.js';

/**
 * The ports the core owns. Adapters live in src/store (SQLite today, PostgreSQL
 * later), src/core/counters-memory.ts, src/counters (Redis) and src/gateways. Methods
 * are async so that a networked adapter fits without changing callers; each
 * method that must be atomic says so and the adapter keeps that promise.
 */

export type Plan = 'medido' | 'ilimitado';
export type ClienteEstado = 'activo' | 'suspendido' | 'baja';
export type CelularEstado = 'activo' | 'suspendido' | 'desconectado';
/**
 * A line's session as pasarela names it, whatever the gateway calls it:
 * `need_scan` (a QR or pairing code is waiting), `connecting` (starting or
 * reconnecting), `connected`, `logged_out` (no session: the phone removed the
 * device, or the instance is gone), `disconnected` (a session exists but is
 * stopped or failed), `unknown` (never asked).
 */
export type SessionStatus = 'need_scan' | 'connecting' | 'connected' | 'logged_out' | 'disconnected' | 'unknown';
export const SESSION_STATUSES: readonly SessionStatus[] = ['need_scan', 'connecting', 'connected', 'logged_out', 'disconnected', 'unknown'];

export interface ClienteRow {
  id: number;
  nombre: string;
  email: string;
  estado: ClienteEstado;
  plan: Plan;
  max_celulares: number | null;
  saldo_global: number;
  key_hash: string;
  created_at: number;
  updated_at: number;
}

export interface CelularRow {
  id: number;
  cliente_id: number;
  numero: string;
  nombre_interno: string | null;
  estado: CelularEstado;
  saldo_actual: number;
  max_envios_por_minuto: number;
  max_envios_por_hora: number;
  max_envios_por_dia: number | null;
  hora_inicio_permitido: string;
  hora_fin_permitido: string;
  gateway_instancia: string | null;
  gateway_token_hash: string | null;
  legacy_token_hash: string | null;
  key_hash: string;
  last_status_check: number | null;
  last_status: string | null;
  /** 1 while the session holds a link: connected once and not logged out since. */
  vinculado: number;
  /** The gateway server that holds the line's instance; null until one is chosen (see core/gateway-servers.ts). */
  servidor_id: number | null;
  created_at: number;
  updated_at: number;
}

/** What the health check needs of a line. */
export interface Linea {
  id: number;
  numero: string;
  gateway_instancia: string;
  /** The session held a link (see CelularRow.vinculado). */
  vinculado: boolean;
}

export interface NewCliente {
  nombre: string;
  email: string;
  plan: Plan;
  estado: ClienteEstado;
  max_celulares: number | null;
  saldo_global: number;
  key_hash: string;
}

export type ClientePatch = Partial<Pick<ClienteRow, 'nombre' | 'email' | 'plan' | 'estado' | 'max_celulares' | 'key_hash'>>;

export type NewCelular = Pick<
  CelularRow,
  | 'cliente_id'
  | 'numero'
  | 'nombre_interno'
  | 'estado'
  | 'max_envios_por_minuto'
  | 'max_envios_por_hora'
  | 'max_envios_por_dia'
  | 'hora_inicio_permitido'
  | 'hora_fin_permitido'
  | 'key_hash'
  | 'gateway_token_hash'
>;

export type CelularPatch = Partial<
  Pick<
    CelularRow,
    | 'nombre_interno'
    | 'estado'
    | 'max_envios_por_minuto'
    | 'max_envios_por_hora'
    | 'max_envios_por_dia'
    | 'hora_inicio_permitido'
    | 'hora_fin_permitido'
    | 'gateway_instancia'
    | 'legacy_token_hash'
    | 'key_hash'
    | 'last_status'
    | 'last_status_check'
    | 'vinculado'
    | 'servidor_id'
  >
>;

/** What a compare-and-set on a line expects to find: the session status it read, and when that was observed. */
export type CelularExpect = Pick<CelularRow, 'estado' | 'last_status' | 'last_status_check'>;

export interface AuditEntry {
  actor: string;
  accion: string;
  objeto_tipo: string;
  objeto_id: number | null;
  cliente_id: number | null;
  detalle: Record<string, unknown>;
}

export interface AuditRecord extends AuditEntry {
  id: number;
  fecha: number;
}

export interface BalanceChange {
  cliente_id: number;
  /** null: the client's global balance. */
  celular_id: number | null;
  monto: number;
  motivo: string;
  actor: string;
}

export type BalanceResult =
  | { ok: true; saldo_global: number; saldo_celular: number | null; movimiento_id: number }
  | { ok: false; reason: 'cliente' | 'celular' | 'negativo' | 'desborde' };

export type InsertCelularResult = { ok: true; celular: CelularRow } | { ok: false; reason: 'taken' | 'cap' | 'cliente' };

/**
 * What completes a new client's row in its insert's transaction: its first
 * credit (a ledger movement, when there is one) and the audit record of its
 * creation. One transaction, so a store that fills up meanwhile leaves no
 * client whose key was never shown, and a retry makes one client, not two.
 */
export interface NewClienteDone {
  /** A positive amount, credited to the global balance with its ledger movement. */
  saldo?: Pick<BalanceChange, 'monto' | 'motivo' | 'actor'>;
  audit(cliente: ClienteRow): AuditEntry;
}

/**
 * What completes a new line's row in its insert's transaction: its gateway
 * instance, named from its id, and the audit record of its creation. One
 * transaction, so a store that fills up meanwhile leaves no line whose key
 * was never shown.
 */
export interface NewCelularDone {
  instancia(id: number): string;
  audit(celular: CelularRow): AuditEntry;
}

/** Lines of one estado and last known session status (metrics). */
export interface LineCount {
  estado: CelularEstado;
  last_status: string | null;
  n: number;
}

export interface MessageStats {
  consumo_mes: number;
  mensajes_30d: number;
}

export type Tipo = 'texto' | 'imagen' | 'documento' | 'audio' | 'video' | 'sticker';
export type MensajeEstado = 'pendiente' | 'enviado' | 'entregado' | 'leido' | 'error';
export type Modo = 'cola' | 'directo';
export type ReceiptEstado = 'entregado' | 'leido' | 'error';
export type ReceiptOutcome = { before: MensajeRow; after: MensajeRow } | 'parked' | null;

/** What a gateway needs to send a stored message. */
export interface MensajePayload {
  texto?: string;
  url?: string;
  /**
   * Where the base64-decoded bytes are: an AcceptedMedia reference (a file
   * of this node's tmp/ named by msg_id, or chunks in PostgreSQL for a queued
   * message on that store); removed when the send ends.
   */
  file?: string;
  mime?: string;
  filename?: string;
  caption?: string;
  ptt?: boolean;
  preview_url?: boolean;
}

export interface MensajeRow {
  msg_id: string;
  cliente_id: number;
  celular_id: number;
  destinatario: string;
  tipo: Tipo;
  modo: Modo;
  estado: MensajeEstado;
  /** Text, or the caption of a media message. */
  texto: string | null;
  /** JSON: `{url}` or `{filename, mime, bytes}`; never the bytes themselves. */
  media: string | null;
  gateway_msg_id: string | null;
  error: string | null;
  cobrado: number;
  cargo: 'celular' | 'global' | null;
  payload: string | null;
  intentos: number;
  proximo_intento_at: number | null;
  lease_until: number | null;
  /** The send's slot in its line's caps (see core/caps.ts): its claim's end while in flight, then enviado_at. */
  cupo_at: number | null;
  expira_at: number | null;
  created_at: number;
  enviado_at: number | null;
  entregado_at: number | null;
  leido_at: number | null;
}

export interface NewMensaje {
  msg_id: string;
  cliente_id: number;
  celular_id: number;
  destinatario: string;
  tipo: Tipo;
  modo: Modo;
  texto: string | null;
  media: Record<string, unknown> | null;
  payload: MensajePayload;
  expira_at: number | null;
}

export type AcceptResult =
  | AcceptedMensaje
  | { ok: false; reason: 'saldo' | 'cola_llena' | 'celular' | 'idempotencia' }
  | { ok: false; reason: 'cap'; retryAfterMs: number; which: string; cap: number };

export interface AcceptedMensaje {
  ok: true;
  cargo: 'celular' | 'global' | null;
  saldo_celular: number;
  saldo_global: number;
  mensaje: MensajeRow;
}

/**
 * An answer kept for an Idempotency-Key (core/idempotency.ts): the HTTP
 * status and JSON body once final; while the send is in flight, no status
 * and the part of the answer known at acceptance.
 */
export interface IdemAnswer {
  status: number | null;
  body: string;
}

/** An Idempotency-Key bound to a send, per client. */
export interface IdemRow extends IdemAnswer {
  cliente_id: number;
  clave: string;
  /** Hash of the canonical request: the same key with another request is a conflict. */
  huella: string;
  msg_id: string;
  created_at: number;
  expira_at: number;
}

/**
 * What acceptMensaje binds with the message: the key (the client is the
 * message's), until when, and the answer to keep with it, made from the
 * acceptance inside its transaction.
 */
export interface IdemBinding {
  clave: string;
  huella: string;
  expira_at: number;
  answer(accepted: AcceptedMensaje): IdemAnswer;
}

export interface AcceptOptions {
  charge: boolean;
  maxPending: number | null;
  slot?: SlotClaim;
  idem?: IdemBinding;
}

/** Taking a queued message to send it: claimed, already taken (or no longer pending), or over a cap. */
export type ClaimResult = { ok: true } | { ok: false; reason: 'taken' } | ({ ok: false; reason: 'cap' } & CapHit);

export interface HistoryFilter {
  cliente_id: number;
  celular_id?: number;
  estado?: MensajeEstado;
  /** Inclusive start, ms. */
  desde?: number;
  /** Exclusive end, ms. */
  hasta?: number;
  destinatario?: string;
  page: number;
  por_pagina: number;
}

/**
 * An incoming message as the inbox keeps it (docs/design.md §10): who wrote
 * to which line, what, and when. Media is described, never stored.
 */
export interface NewRecibido {
  cliente_id: number;
  celular_id: number;
  /** Sender: digits with country code, or the gateway's contact id (`...@lid`) when it hides the number. */
  de: string;
  tipo: string;
  texto: string | null;
  /** Metadata only (mime, filename, bytes, url, ptt): never the bytes. */
  media: Record<string, unknown> | null;
  gateway_msg_id: string | null;
  /** When the gateway says the message was sent (ms). */
  fecha: number;
}

export interface RecibidoRow {
  id: number;
  cliente_id: number;
  celular_id: number;
  de: string;
  tipo: string;
  texto: string | null;
  /** JSON of the metadata, or null. */
  media: string | null;
  gateway_msg_id: string | null;
  fecha: number;
  /** When pasarela recorded it (ms, the store's writer's clock): the inbox's order, date filters and retention. */
  created_at: number;
}

export interface InboxFilter {
  cliente_id: number;
  celular_id?: number;
  de?: string;
  /** Inclusive start, ms (on created_at). */
  desde?: number;
  /** Exclusive end, ms. */
  hasta?: number;
  page: number;
  por_pagina: number;
}

export interface WebhookConfig {
  cliente_id: number;
  url: string;
  secret: string | null;
  /** Subscribed kinds: messages.received, message.status, session.status, or all. */
  eventos: string[];
  activo: boolean;
  updated_at: number;
}

export interface EntregaRow {
  id: string;
  cliente_id: number;
  evento: string;
  body: string;
  estado: 'pendiente' | 'entregado' | 'fallido';
  intentos: number;
  proximo_intento_at: number;
  created_at: number;
  entregado_at: number | null;
  ultimo_error: string | null;
}

/** Who claims deliveries (a token of one claim) and until when; `firstOnly`: only deliveries never attempted. */
export interface EntregaClaim {
  id: string;
  until: number;
  firstOnly?: boolean;
}

/**
 * A temporary extra destination of a client's events (`webhook listen`): it
 * gets a copy of each event it subscribes to, signed with its own secret,
 * while its lease (`expira_at`) is renewed.
 */
export interface EscuchaRow {
  id: string;
  cliente_id: number;
  url: string;
  /** Signs the copies; generated by the server, returned once. */
  secret: string;
  eventos: string[];
  created_at: number;
  expira_at: number;
}

export interface IntentoRow {
  n: number;
  fecha: number;
  status: number | null;
  duracion_ms: number;
  error: string | null;
}

/** An event as journaled with the change that caused it (docs/design.md §6 names and data). */
export interface JournalEvent {
  evento: string;
  cliente_id: number;
  celular_id: number | null;
  data: Record<string, unknown>;
  fecha: number;
}

export type GatewayServerEstado = 'activo' | 'drenando';

/** One gateway server (an Evolution API or WAHA process) that holds line instances. */
export interface GatewayServerRow {
  id: number;
  nombre: string;
  /** Its kind: the `--gateway` adapter that speaks to it. */
  tipo: string;
  url: string;
  /** Its global API key: a secret, never answered by the API. */
  key: string;
  /** `drenando`: keeps its lines, takes no new ones. */
  estado: GatewayServerEstado;
  /** How many lines it should hold at most; null: no cap. */
  max_lineas: number | null;
  created_at: number;
  updated_at: number;
}

/** A server with how many lines it holds now. */
export interface GatewayServerLoad extends GatewayServerRow {
  lineas: number;
}

export type NewGatewayServer = Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key' | 'max_lineas'>;

/**
 * The store, one port per concern. Each method is one atomic operation; an
 * adapter stores and locks, and takes its decisions from the core (the money
 * and state rules are in core/ledger.ts, the caps in core/caps.ts). Every
 * adapter passes the same contract suite per port (test/contract/).
 */

/** Clients, lines, balances and their ledger, the audit trail. */
export interface AccountsStore {
  createCliente(input: NewCliente, now: number, done?: NewClienteDone): Promise<ClienteRow>;
  getCliente(id: number): Promise<ClienteRow | null>;
  listClientes(): Promise<ClienteRow[]>;
  updateCliente(id: number, patch: ClientePatch, now: number): Promise<ClienteRow | null>;

  /** Atomic: checks the number is free and the client's cap, then inserts. */
  insertCelular(input: NewCelular, now: number, done?: NewCelularDone): Promise<InsertCelularResult>;
  getCelular(id: number): Promise<CelularRow | null>;
  getCelularByNumero(numero: string): Promise<CelularRow | null>;
  getCelularByInstancia(instancia: string): Promise<CelularRow | null>;
  /** Looks a presented token up by its hash among gateway and legacy tokens. */
  getCelularByTokenHash(hash: string): Promise<CelularRow | null>;
  listCelulares(clienteId: number): Promise<CelularRow[]>;
  /** Every line that has a gateway instance, in id order, a page at a time (the health check walks them). */
  listLineas(afterId: number, limit: number): Promise<Linea[]>;
  /** With `event`, the event is journaled in the same transaction. */
  updateCelular(id: number, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null>;
  /**
   * The same, only while the row still holds `expect` (a compare-and-set):
   * null, writing and journaling nothing, when another writer changed it
   * since it was read (or it is gone). Session statuses are applied through it.
   */
  updateCelularIf(id: number, expect: CelularExpect, patch: CelularPatch, now: number, event?: JournalEvent): Promise<CelularRow | null>;
  /** Atomic: removes the row and writes the audit record together. */
  deleteCelular(id: number, audit: AuditEntry, now: number): Promise<boolean>;

  /** Atomic: applies a change, refusing any that would leave a balance negative, and records it. */
  changeBalance(change: BalanceChange, now: number): Promise<BalanceResult>;

  audit(entry: AuditEntry, now: number): Promise<void>;
  listAudit(filter: { cliente_id?: number; limit: number }): Promise<AuditRecord[]>;

  /** Metrics: how many lines there are of each estado and last known session status (null: never known). */
  lineCounts(): Promise<LineCount[]>;
}

/** The gateway servers lines are spread over (core/gateway-servers.ts holds the rules). */
export interface GatewayServersStore {
  /** Atomic: inserts the server unless its name is taken. */
  addGatewayServer(input: NewGatewayServer, now: number): Promise<{ ok: true; servidor: GatewayServerRow } | { ok: false; reason: 'taken' }>;
  /** Atomic: inserts the server, or sets the kind, URL and key of the one with that name (its estado and max_lineas are kept). */
  putGatewayServer(input: Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key'>, now: number): Promise<GatewayServerRow>;
  getGatewayServer(id: number): Promise<GatewayServerRow | null>;
  getGatewayServerByNombre(nombre: string): Promise<GatewayServerRow | null>;
  /** Every server with how many lines it holds, in id order. */
  listGatewayServers(): Promise<GatewayServerLoad[]>;
  setGatewayServerEstado(id: number, estado: GatewayServerEstado, now: number): Promise<GatewayServerRow | null>;
  /**
   * Atomic: when the line has no server yet, `choose` picks one among every
   * server and its load (or none), and the line is given to it. Returns the
   * line's server id (the one it had, or the one chosen); null when the line
   * is gone or `choose` picked none.
   */
  assignGatewayServer(celularId: number, choose: (servers: GatewayServerLoad[]) => number | null, now: number): Promise<number | null>;
  /** Gives every line without a server to this one (the `--gateway-url` server at start); returns how many. */
  adoptUnassignedLines(servidorId: number, now: number): Promise<number>;
}

/** Messages: acceptance with its charge, the queue's claims, state changes and receipts, history, the event journal. */
export interface MessagesStore {
  messageStats(clienteId: number, monthStart: number, since30d: number): Promise<MessageStats>;
  /**
   * Atomic: refuses when a queued line already holds `maxPending` messages,
   * charges one credit when `charge` (the celular's balance first, then the
   * client's global one; neither: `saldo`), records the charge, inserts the
   * message as `pendiente`. With `slot` (a direct send), also takes the send's
   * slot in its line's caps, or refuses with `cap` (see core/caps.ts).
   *
   * With `idem`, the key is bound to the message in the same transaction:
   * refused with `idempotencia` (nothing written) when the client's key is
   * bound already and unexpired, checked before any other refusal; and up to
   * a few keys expired by `now` are removed.
   */
  acceptMensaje(m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult>;
  /** The client's key, unless it expired by `now`. */
  idemGet(clienteId: number, clave: string, now: number): Promise<IdemRow | null>;
  /** Records a bound key's final answer; a key no longer bound to `msgId` is left alone. */
  idemFinish(clienteId: number, clave: string, msgId: string, answer: IdemAnswer): Promise<void>;
  /** Unbinds a key whose send provably never went out (the same guard): a retry under it is a fresh send. */
  idemRelease(clienteId: number, clave: string, msgId: string): Promise<void>;
  getMensaje(msgId: string): Promise<MensajeRow | null>;
  getMensajeByGatewayId(gatewayMsgId: string): Promise<MensajeRow | null>;
  /** `pendiente` -> `enviado`, then any receipts parked for its gateway id. Returns null when the message was not pending. */
  markSent(msgId: string, gatewayMsgId: string, now: number): Promise<MensajeRow | null>;
  /**
   * Atomic: a send that failed, `pendiente` -> `error` with a reason, refunding
   * its charge once. Null, changing nothing, when the message is no longer
   * pendiente: a send recorded meanwhile (a slow node's, while another node's
   * recovery gave up on it) stays sent and charged. A failure the network
   * reports for a sent message is a receipt (`receipt`).
   */
  failMensaje(msgId: string, error: string, now: number): Promise<MensajeRow | null>;
  /**
   * Atomic: moves a sent message forward to `entregado` or `leido` (never
   * backwards), or ends a sent one in `error` with its refund. A receipt for a
   * gateway id no message has yet is parked, and markSent applies it: the
   * network's ack can beat the gateway's answer to the send. Null when nothing changed.
   * Only a message of `celularId` (the line whose instance reported the
   * receipt) is changed, and only its parked receipts applied to it; a line
   * holding PARKED_PER_LINE parked ones parks no more (null).
   */
  receipt(celularId: number, gatewayMsgId: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome>;
  /** The oldest pending queued message of every line that has one. */
  queueHeads(): Promise<MensajeRow[]>;
  /**
   * Atomic: claims a pending queued message and its slot in its line's caps
   * until `slot.holdUntil`; `taken` when another worker holds a live claim or
   * it is no longer pending, `cap` when the slot would pass a cap.
   */
  claimQueued(msgId: string, slot: SlotClaim, now: number): Promise<ClaimResult>;
  /** Releases every claim and its slot (at start, when no other worker can be alive on this store). */
  releaseLeases(): Promise<number>;
  /**
   * Direct sends still `pendiente` whose slot ended before `before` (a direct
   * send holds its slot until the end of its claim), oldest first: sends a
   * crash or a failed write left behind. See core/direct-recovery.ts.
   */
  strandedDirect(before: number, limit: number): Promise<MensajeRow[]>;
  /** Gives a claimed message (and its slot) back for a later attempt. */
  retryLater(msgId: string, at: number, error: string): Promise<void>;
  /** The media references (`payload.file`) pending messages still need; every other accepted media may go. */
  pendingFiles(): Promise<string[]>;
  listMensajes(filter: HistoryFilter): Promise<{ total: number; rows: MensajeRow[] }>;
  /**
   * Metrics: how many queued messages are pending, and when the oldest of
   * them was accepted (null: none). Its cost follows the queue, never the history.
   */
  queueDepth(): Promise<{ pending: number; oldest_at: number | null }>;

  /** Journals an event that has no state change of its own. */
  journalEvent(ev: JournalEvent): Promise<void>;
  /**
   * Atomic: unless `clave` (the gateway's key for it) was seen before, keeps
   * the incoming message in the inbox (created_at `now`) and journals its
   * event, together; false for a repeat, which writes nothing.
   */
  journalInbound(ev: JournalEvent, clave: string | null, now: number, recibido: NewRecibido): Promise<boolean>;
  /** One page of the inbox, newest first (created_at, then arrival), with the total matching the filter. */
  listRecibidos(filter: InboxFilter): Promise<{ total: number; rows: RecibidoRow[] }>;
  /**
   * Removes up to `limit` inbox rows created before `before`, oldest first;
   * returns how many. Safe to run from several nodes at once (each skips the
   * rows another is removing).
   */
  purgeRecibidos(before: number, limit: number): Promise<number>;
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

/** Small durable key-value space for adapters (the simulator's sessions live here). */
export interface KvStore {
  kvGet<T>(ns: string, key: string): Promise<T | null>;
  /** With `expiraAt`, the entry is forgotten after then (kvExpire removes it). */
  kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void>;
  /** Stores `value` unless the key holds one already (never expiring); returns what the key holds after. Atomic across nodes. */
  kvFirst<T>(ns: string, key: string, value: T): Promise<T>;
  /** Removes up to `limit` entries expired before `now` (any namespace); returns how many. */
  kvExpire(now: number, limit: number): Promise<number>;
  kvDelete(ns: string, key: string): Promise<void>;
  kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>>;
}

/** A serving process, as the others see it (see core/node-presence.ts). */
export interface NodeInfo {
  id: string;
  /** Host and pid, for people. */
  label: string;
  /** How long after its last heartbeat this node's leases may be taken: its longest send plus a margin. */
  staleMs: number;
}

export interface NodeRow {
  id: string;
  label: string;
  heartbeat_at: number;
  started_at: number;
  /** Within its stale time (its leases still its own). */
  alive: boolean;
  /** How long ago its last beat was, on the store's clock (PostgreSQL's, not a node's). */
  silent_ms: number;
}

/** What a take found for one stream: taken by the caller, or how long before it is due (0: held by a live node). */
export interface LeaseAnswer {
  stream: string;
  taken: boolean;
  restMs: number;
}

/**
 * Serial streams shared by the nodes of one store: a line's queue with its
 * human gaps, a line's health check, a client's webhook stream. Each is a
 * lease row: one holder at a time, and a durable `next_at` before which
 * nobody takes it. A holder whose heartbeats stopped for longer than its
 * `staleMs` is dead and its leases are free. `now` is the node's clock; a
 * store shared by several nodes uses its own clock instead, so no two
 * nodes' clocks are ever compared.
 */
export interface LeasesStore {
  /** Records the node alive; its first beat registers it. */
  nodeBeat(node: NodeInfo, now: number): Promise<void>;
  /** The node stops: its row goes and its leases are free (their next_at kept). */
  nodeLeave(nodeId: string): Promise<void>;
  nodes(now: number): Promise<NodeRow[]>;
  /** Takes, of `streams`, each that is due and free (unheld, held by this node, or by a dead one); never waits on another taker. */
  leaseTake(nodeId: string, streams: string[], now: number): Promise<LeaseAnswer[]>;
  /** Gives a held stream back, not to be taken again for `restMs`; a stream taken over meanwhile is left alone. */
  leaseGive(nodeId: string, stream: string, restMs: number, now: number): Promise<void>;
}

export interface Store extends AccountsStore, GatewayServersStore, MessagesStore, WebhooksStore, KvStore, LeasesStore {
  readonly dialect: string;
  /**
   * Whether the store takes writes. Free while no write has failed; after a
   * write met a full disk or an I/O error, a probe write tells whether it
   * has recovered.
   */
  writeHealth(): Promise<StoreWriteHealth>;
  /**
   * A consistent copy of the whole store into `file` (which must not be
   * read until this resolves), taken while the store keeps serving; the
   * copy's schema version is returned. Only an embedded store has one: on
   * PostgreSQL the operator uses pg_dump.
   */
  backupTo?(file: string): Promise<{ schemaVersion: number }>;
  close(): Promise<void>;
}

/**
 * Where the bytes of accepted base64 media live from the accept until the
 * send ends (core/accepted-media.ts holds the rules): this node's tmp/
 * directory beside SQLite (src/store/local-media.ts), chunks in the
 * database on PostgreSQL, where any node may send a queued message
 * (src/store/pg/pg-media.ts). Uploads are first staged in tmp/ (decoded and
 * sniffed there); a reference names the bytes in a message row.
 */
export interface AcceptedMedia {
  /**
   * Makes a staged upload readable by whichever node sends its message and
   * returns the reference for the row. Resolves once the bytes are durable;
   * the staged file is the adapter's from the call on (kept or moved).
   */
  keep(msgId: string, stagedPath: string, now: number): Promise<string>;
  /**
   * The bytes of `ref` as a local file for a gateway, until `release`. When
   * they are gone the path names no file, as a lost temp file would.
   */
  open(ref: string): Promise<LocalMediaFile>;
  /** Removes the bytes of `ref` (or a staged file); nothing when already gone. */
  remove(ref: string): Promise<void>;
  /**
   * Removes everything no reference in `keep` names, except, where other
   * nodes write, what was kept at or after `before` (an accept may be in
   * flight there: its bytes are kept before its row commits). Returns how many.
   */
  sweep(keep: Iterable<string>, before: number): Promise<number>;
}

export interface LocalMediaFile {
  path: string;
  /** Drops the local copy, if one was made for the send. */
  release(): Promise<void>;
}

/**
 * Fixed-window counters: the shared memory of docs/design.md §1 and §5. In memory for one
 * node (src/core/counters-memory.ts); Redis when several nodes share the load
 * (src/counters). Every adapter passes test/contract/counters.test.ts.
 */
export interface Counters {
  /** Adds one and returns the count in the current window and when it resets. */
  incr(key: string, windowMs: number): Promise<{ count: number; resetAt: number }>;
  get(key: string): Promise<{ count: number; resetAt: number } | null>;
  /** Takes one back (never below zero); the window is unchanged. */
  decr(key: string): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Holds `key` for `holder` for `ttlMs` when no one else holds it, or when
   * `from` does (a holder found gone); returns who holds it after and when
   * that hold ends. Holding it again as its holder renews it.
   */
  hold(key: string, holder: string, ttlMs: number, from?: string): Promise<{ holder: string; resetAt: number }>;
  /** Ends `holder`'s hold of `key`; another holder's is left alone. */
  unhold(key: string, holder: string): Promise<void>;
  /**
   * Shared counters only: whether they answer from this node's memory now
   * (the shared backend failed or timed out), so a count known only there
   * (another node's duplicate block) may be missing.
   */
  degraded?(): boolean;
  /** What holds the counts now, for /health and the start banner: 'memory', 'redis', 'redis (unreachable: memory)'. */
  backend(): string;
}

export interface QrResult {
  status: SessionStatus;
  /** QR content to render; empty when there is nothing to scan (already connected). */
  qr: string;
}

export interface PairingResult {
  status: SessionStatus;
  /** The code the person types on the phone (Linked devices > Link with phone number); empty when already connected. */
  code: string;
}

/** What the core hands a gateway to send. */
export interface OutboundMessage {
  /** Our msg_id: the idempotency key, so a retry after a crash is not a second send where the gateway supports it. */
  msgId: string;
  tipo: Tipo;
  /** Digits with country code, no `+`. */
  destinatario: string;
  texto?: string;
  url?: string;
  /** Local file with the decoded bytes (base64 sends), readable for the whole call. */
  filePath?: string;
  mime?: string;
  filename?: string;
  caption?: string;
  /** Audio as a voice note. */
  ptt?: boolean;
  previewUrl?: boolean;
}

export type GatewayEvent =
  | { type: 'session'; instancia: string; status: SessionStatus; at: number }
  | {
      type: 'receipt';
      instancia: string;
      gatewayMsgId: string;
      /** `error`: the network reports the message failed after accepting it. */
      estado: ReceiptEstado;
      at: number;
      error?: string;
    }
  | {
      type: 'inbound';
      instancia: string;
      /** Sender: digits with country code, or the gateway's contact id (e.g. `...@lid`) when it hides the number. */
      de: string;
      tipo: string;
      texto: string | null;
      media: Record<string, unknown> | null;
      gatewayMsgId: string;
      at: number;
      /** Stable key of this message at the gateway; a second delivery with the same key is dropped. */
      dedupeKey?: string;
    };

/**
 * How a gateway failure is treated: `permanent` ends the message in `error`
 * (not on the network, bad media; 422 in direct mode); `rate_limited` pauses
 * the line and tries again after `retryAfterMs`; `transient` (timeout,
 * gateway down, session closed) is retried with backoff in queue mode and
 * answered 502 in direct mode.
 */
export type FailureKind = 'permanent' | 'rate_limited' | 'transient';

/** A gateway failure, classified so callers know whether a retry can help. */
export class GatewayFailure extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly retryAfterMs?: number,
    /**
     * The call may have reached the network before it failed (no answer in
     * time, a connection lost mid-call, a success without a message id): the
     * message may have gone. False when the gateway answered a refusal or
     * was never reached.
     */
    readonly mayHaveSent = false,
  ) {
    super(message);
    this.name = 'GatewayFailure';
  }
  get permanent(): boolean {
    return this.kind === 'permanent';
  }
}

/** One HTTP call a gateway made to pasarela's inbound endpoint (`/gateway/<name>/<instancia>`). */
export interface InboundCall {
  instancia: string;
  /** Path after the instance (Evolution's "webhook by events" appends `/event-name`); '' otherwise. */
  subpath: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
}

/** An inbound call the adapter refuses: `status` 401 (not authenticated) or 400 (not understood). */
export class InboundRefused extends Error {
  constructor(
    readonly status: 400 | 401,
    message: string,
  ) {
    super(message);
    this.name = 'InboundRefused';
  }
}

export interface GatewayCapabilities {
  /** Message kinds this gateway cannot send, each with the reason given to the caller. */
  unsupported: Partial<Record<Tipo, string>>;
}

export interface InstanceSpec {
  /** The line's own number (digits). */
  numero: string;
  /** The celular's gateway token, for gateways that take a per-instance token (only known at creation). */
  token?: string;
}

/**
 * A messaging gateway (docs/design.md §2). Adapters translate; they hold no business
 * rules (queue, dedupe, caps and billing are the core's). Every method may
 * throw GatewayFailure; `transient` when the gateway cannot be reached.
 */
export type StoreWriteHealth = { writable: true } | { writable: false; reason: string; since: number };

export interface Gateway {
  readonly name: string;
  /** True for the in-process simulator: nothing reaches a real network. */
  readonly simulated: boolean;
  readonly capabilities: GatewayCapabilities;
  /** Creates the instance, or adopts an existing one with that name, and points its events at pasarela. Idempotent. */
  ensureInstance(instancia: string, spec: InstanceSpec): Promise<void>;
  /** Returns the session's QR (creating the instance and starting the session if needed). */
  connect(instancia: string, numero: string): Promise<QrResult>;
  /** Asks for a pairing code for `numero`, the alternative to scanning a QR. */
  pairingCode(instancia: string, numero: string): Promise<PairingResult>;
  /**
   * The session's status, checked as far as the gateway allows: where a
   * gateway may report a dead session as open, the adapter verifies before
   * answering `connected`. `act: false` (a session event's re-read) asks
   * without anything that acts on the session: no repair started from here
   * (Evolution's restart of a socket its presence probe finds dead), so the
   * events a repair posts cannot start another one.
   */
  status(instancia: string, opts?: { act?: boolean }): Promise<SessionStatus>;
  logout(instancia: string): Promise<void>;
  /** Removes the instance; used when a celular is deleted. Idempotent. */
  deleteInstance(instancia: string): Promise<void>;
  send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }>;
  /**
   * Whether the network took the message sent as `msgId`, for a send whose
   * answer was lost (a crash mid-send): its id and when, or null when it never
   * went. Absent where the gateway cannot tell (it knows nothing of our ids).
   */
  sentMessage?(instancia: string, msgId: string): Promise<{ gatewayMsgId: string; at: number } | null>;
  /**
   * Events the gateway reports. A listener's promise resolves once the event
   * is durable; HTTP-fed adapters answer the gateway only after that.
   */
  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void;
  /**
   * Deployments spread over several gateway servers (gateways/router.ts): the
   * adapter of one server, for a call about a line whose row no longer says
   * where its instance is (deleted) or is about to say otherwise (moved).
   */
  onServer?(servidorId: number): Promise<Gateway>;
  /** HTTP-fed gateways: authenticates and handles one call to the inbound endpoint. Absent when the gateway is in-process. */
  handleInbound?(call: InboundCall): Promise<{ eventos: number }>;
  start(): Promise<void>;
  close(): Promise<void>;
}
