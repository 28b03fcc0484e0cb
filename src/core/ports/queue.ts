import type { CapHit, SlotClaim } from '../caps.js';
import type { MensajeRow } from './model.js';

/** Taking a queued message to send it: claimed, already taken (or no longer pending), or over a cap. */
export type ClaimResult = { ok: true } | { ok: false; reason: 'taken' } | ({ ok: false; reason: 'cap' } & CapHit);

/**
 * How work is taken: a queued message claimed with its caps slot (the queue
 * worker), given back for later, released at start; and the direct sends a
 * crash left pending (core/direct-recovery.ts). A direct send takes its slot
 * at acceptance (MessagesStore.acceptMensaje).
 */
export interface QueueStore {
  /** The oldest pending queued message of every line that has one. */
  queueHeads(): Promise<MensajeRow[]>;
  /**
   * Atomic: claims a pending queued message and its slot in its line's caps
   * until `slot.holdUntil`; `taken` when another worker holds a live claim or
   * it is no longer pending, or with `onlyHead` when it is not its line's
   * head (an older queued message of the line is pending: a guess that
   * missed, core/queue-worker.ts), `cap` when the slot would pass a cap.
   * The claim keeps `nodo` and its time on the message (its story, D-98).
   */
  claimQueued(msgId: string, slot: SlotClaim, now: number, onlyHead?: boolean, nodo?: string | null): Promise<ClaimResult>;
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
  /**
   * Metrics: how many queued messages are pending, and when the oldest of
   * them was accepted (null: none). Its cost follows the queue, never the history.
   */
  queueDepth(): Promise<{ pending: number; oldest_at: number | null }>;
}
