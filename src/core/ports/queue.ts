import type { CapHit, SlotClaim, SlotCount } from '../sending/caps.js';
import type { MensajeRow } from './model.js';

/** Taking a queued message to send it: claimed, already taken (or no longer pending), or over a cap. */
export type ClaimResult = { ok: true } | { ok: false; reason: 'taken' } | ({ ok: false; reason: 'cap' } & CapHit);

/** A queued message as the queue lists it: its row and its place in the queue (`seq`, the listing's cursor). */
export type QueuedRow = MensajeRow & { seq: number };

/**
 * A cancel's outcome for one message: cancelled with its refund (credits put
 * back), or why not: no longer pending (`no_pendiente`), claimed by a worker
 * that may be sending it (`enviando`), or a direct send (`directo`, always in
 * flight while pending).
 */
export type CancelResult = { ok: true; mensaje: MensajeRow; reembolso: number } | { ok: false; reason: 'no_pendiente' | 'enviando' | 'directo' };

/**
 * How work is taken: a queued message claimed with its caps slot (the queue
 * worker), given back for later, released at start; and the direct sends a
 * crash left pending (core/sending/direct-recovery.ts). A direct send takes its slot
 * at acceptance (MessagesStore.acceptMensaje).
 */
/** A line with a backlog as the queue worker's look sees it: its head's next attempt (null: none set since it was accepted). */
export interface BacklogLine {
  celular_id: number;
  proximo_intento_at: number | null;
}

/**
 * The expiry sweep's work as a look sees it (docs/validity.md): whether a pending queued message's validity ended by
 * `now` with no live claim on it (the sweep has something to end), and when it next will (ExpiryLook.next as expireDue's).
 */
export interface ExpiryLook {
  expired: boolean;
  next: number | null;
}

export interface QueueStore {
  /** The oldest pending queued message of every line that has one. */
  queueHeads(): Promise<MensajeRow[]>;
  /**
   * The queue worker's look at `now`: every line with a pending queued
   * message and its head's next attempt, read from the queue's own index,
   * and the heads due by `now` whole. A head waiting for a retry costs an
   * index seek, never a read of its message, so a look's cost follows the
   * lines, not the waiting backlog (D-143). `expiry` rides on the same read: an idle node's look is one
   * round trip, and the sweep runs only when it has something to end (D-191). The lines in `unread` (the
   * worker's lines sending or in their pause) stay in `lines`, as lines with a head due, but their heads are
   * not read: a look after one line's send reads one message, not every line's (D-143).
   */
  queueLook(now: number, unread?: readonly number[]): Promise<{ lines: BacklogLine[]; due: MensajeRow[]; expiry: ExpiryLook }>;
  /**
   * Atomic: claims a pending queued message and its slot in its line's caps
   * until `slot.holdUntil`; `taken` when another worker holds a live claim or
   * it is no longer pending, or with `onlyHead` when it is not its line's
   * head (an older queued message of the line is pending: a guess that
   * missed, core/queue/queue-worker.ts), `cap` when the slot would pass a cap.
   * The claim keeps `nodo` and its time on the message (its story, D-98).
   */
  claimQueued(msgId: string, slot: SlotClaim, now: number, onlyHead?: boolean, nodo?: string | null): Promise<ClaimResult>;
  /** Releases every claim and its slot (at start, when no other worker can be alive on this store). */
  releaseLeases(): Promise<number>;
  /**
   * Direct sends still `pendiente` whose slot ended before `before` (a direct
   * send holds its slot until the end of its claim), oldest first: sends a
   * crash or a failed write left behind. See core/sending/direct-recovery.ts.
   */
  strandedDirect(before: number, limit: number): Promise<MensajeRow[]>;
  /** Gives a claimed message (and its slot) back for a later attempt. */
  retryLater(msgId: string, at: number, error: string): Promise<void>;
  /**
   * Metrics: how many queued messages are pending, and when the oldest of
   * them was accepted (null: none). Its cost follows the queue, never the history.
   */
  queueDepth(): Promise<{ pending: number; oldest_at: number | null }>;
  /**
   * The pending queued messages of these lines after queue place `after`, in
   * queue order, at most `limit`: per line a range of its queue index, so the
   * cost follows the lines and the page, never the backlog or the history.
   */
  listQueue(celularIds: number[], after: number, limit: number): Promise<QueuedRow[]>;
  /** How many queued messages each line has pending: its counter (`pendientes`), a primary-key read per line. */
  queueSizes(celularIds: number[]): Promise<Array<{ celular_id: number; pendientes: number }>>;
  /**
   * What the queue view reads of a line's caps: the slots in each window
   * (`windows`: lengths, ms, as a SlotClaim lists them) and the line's last
   * send that has happened by `now` (null: none kept).
   */
  lineSlots(celularId: number, windows: number[], now: number): Promise<{ counts: SlotCount[]; last: number | null }>;
  /**
   * Atomic: cancels a pending queued message no worker holds a live claim on
   * (the claim's own test, so a cancel and a claim never both win), as
   * failMensaje ends it: `error` with class `cancelado`, its refund and its
   * `message.status` event in the same transaction.
   */
  cancelQueued(msgId: string, error: string, now: number): Promise<CancelResult>;
  /**
   * The expiry sweep (docs/validity.md): at most `limit` pending queued
   * messages whose validity ended by `now` and that no worker holds a live
   * claim on, each ended as failMensaje ends one (`error` with class
   * `caducado`, its refund and its `message.status` event, in one
   * transaction; on several nodes each is ended once, and a claim and the
   * sweep never both win). Found through the validity index of the pending
   * messages, so its cost follows the expired ones, never the backlog or the
   * history. `next`: when the sweep next has work: the earliest validity end
   * after `now`, or the end of a live claim on an expired message (null: none).
   */
  expireDue(now: number, error: string, limit: number): Promise<{ ended: MensajeRow[]; next: number | null }>;
}
