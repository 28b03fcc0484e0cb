import type { SlotClaim } from '../sending/caps.js';
import type { ErrorClase, JournalEvent, MensajeEstado, MensajeEstadoRow, MensajePayload, MensajeRow, Modo, ReceiptEstado, RecibidoRow, Tipo } from './model.js';

export interface MessageStats {
  consumo_mes: number;
  mensajes_30d: number;
}

export type ReceiptOutcome = { before: MensajeEstadoRow; after: MensajeEstadoRow } | 'parked' | null;

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
  /** The failed message this send retries (core/queue/cola.ts), kept on the row. */
  reintento_de?: string | null;
  /** A queued send's validity end (docs/validity.md); a direct send has none. */
  vigencia_hasta?: number | null;
  /** A scheduled send's due time (D-162): its first attempt; null or absent: as soon as possible. */
  enviar_en?: number | null;
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
 * An answer kept for an Idempotency-Key (core/sending/idempotency.ts): the HTTP
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
  /** Only the messages after this one (msg_id) in the page's order: an export's next page, read without an offset. */
  despues?: string;
  /** Leave the total out (an export reads every page and needs none): `total` is then -1. */
  sinTotal?: boolean;
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

/** Messages: acceptance with its charge, Idempotency-Keys, state changes and receipts, history, the inbox, the event journal. */
/** A message's facts beyond its record (mensajeHechos). */
export interface MensajeHechos {
  nodo: string | null;
  reclamado_at: number | null;
  error_at: number | null;
  /** Its charge and refund, in ledger order (at most a few). */
  movimientos: Array<{ fecha: number; monto: number; saldo_resultante: number; motivo: string; celular_id: number | null }>;
}

export interface MessagesStore {
  messageStats(clienteId: number, monthStart: number, since30d: number): Promise<MessageStats>;
  /**
   * The operator's overview: messages of every client created at or after
   * `since`, by estado. Each client's part is a range of its (cliente_id,
   * created_at) index, so the cost follows the window and the number of
   * clients, never the history.
   */
  recentByEstado(since: number): Promise<Array<{ estado: MensajeEstado; n: number }>>;
  /**
   * Atomic: refuses when a queued line already holds `maxPending` messages,
   * charges one credit when `charge` (the celular's balance first, then the
   * client's global one; neither: `saldo`), records the charge, inserts the
   * message as `pendiente`. With `slot` (a direct send), also takes the send's
   * slot in its line's caps, or refuses with `cap` (see core/sending/caps.ts).
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
  /**
   * What a message's story (core/history/message-story.ts) needs beyond its record:
   * the node and time of its last claim, when it failed, and its ledger rows
   * (charge, refund) found by their motive through its index. Null for an
   * unknown id or another client's.
   */
  mensajeHechos(clienteId: number, msgId: string): Promise<MensajeHechos | null>;
  getMensajeByGatewayId(gatewayMsgId: string): Promise<MensajeRow | null>;
  /** `pendiente` -> `enviado`, then any receipts parked for its gateway id. Returns null when the message was not pending. */
  markSent(msgId: string, gatewayMsgId: string, now: number): Promise<MensajeEstadoRow | null>;
  /**
   * Atomic: a send that failed, `pendiente` -> `error` with a reason, refunding
   * its charge once. Null, changing nothing, when the message is no longer
   * pendiente: a send recorded meanwhile (a slow node's, while another node's
   * recovery gave up on it) stays sent and charged. A failure the network
   * reports for a sent message is a receipt (`receipt`, class `fallido`).
   */
  failMensaje(msgId: string, error: string, clase: ErrorClase, now: number): Promise<MensajeRow | null>;
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
  /** The media references (`payload.file`) pending messages still need; every other accepted media may go. */
  pendingFiles(): Promise<string[]>;
  listMensajes(filter: HistoryFilter): Promise<{ total: number; rows: MensajeRow[] }>;

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

/** What a store's messages module serves of MessagesStore; Idempotency-Keys, the inbox and the history have their own modules. */
export type MessagesOwn = Omit<MessagesStore, 'idemGet' | 'idemFinish' | 'idemRelease' | 'listRecibidos' | 'purgeRecibidos' | 'listMensajes'>;
