import type { EntregaRow } from '../core/ports/model.js';

/**
 * What the dispatcher knows of one client's outbox between looks, so that
 * the database is read once per batch of deliveries and not at all while the
 * client has nothing due.
 */
export class ClientQueue {
  /** Due deliveries claimed (all under `claim`) and not started yet, in the order they fell due; given back at the end of each look. */
  ready: EntregaRow[] = [];
  /** The claim `ready` was taken under (store.claimEntregas). */
  claim = '';
  /** Ids being posted: each leaves when its receiver answered, before its record is written (D-192). */
  readonly inFlight = new Set<string>();
  /** The last claim took first attempts only (the retries' slots were full): due retries may wait unclaimed for a slot. */
  retriesWait = false;
  /** From the last claim: when the next delivery it did not take may be claimed (Infinity: none). */
  readAt = 0;
  /** The earliest due time of what changed the client's deliveries since that read (an event, a test event, a redelivery, a retry). */
  hintAt = Infinity;
  /**
   * How many may be in flight: one more per delivered attempt up to the
   * maximum, one again after any failure, so a dead receiver holds one slot
   * and a healthy one soon has all of its own.
   */
  window = 1;
  /** This node held the client's stream lease at its last read. */
  leased = false;
  /**
   * Another node held the stream at this node's last take: not asked for
   * again before then, whatever this node's events hint (its holder posts
   * them, told by a signal: dispatcher.ts WEBHOOK_CHANNEL).
   */
  heldUntil = 0;
  /** That node was live and held it (no rest given back): it hears the signal. */
  heldLive = false;
  /** When (clock ticks) this node last signalled that holder: the next signal waits for the claim gap after it. */
  toldAt = -Infinity;
  /** When (clock ticks) the lease was last found with nothing in hand; null while something is. */
  emptySince: number | null = null;
  /** When (clock ticks) the last claim started: the next waits for the dispatcher's claim gap after it, unless that claim was full. */
  claimedAt = -Infinity;
  /** The node's lapse count at that read (core/nodes/node-presence.ts): `ready` is stale once it moves. */
  lapses = 0;

  constructor(readonly clienteId: number) {}

  hint(at: number): void {
    this.hintAt = Math.min(this.hintAt, at);
  }

  /** When the outbox may hold a due delivery that was not read yet. */
  get unreadAt(): number {
    return Math.min(this.readAt, this.hintAt);
  }

  get idle(): boolean {
    return this.ready.length === 0 && this.inFlight.size === 0 && this.unreadAt === Infinity && !this.retriesWait;
  }

  settled(ok: boolean, max: number): void {
    this.window = ok ? Math.min(this.window + 1, max) : 1;
  }
}
