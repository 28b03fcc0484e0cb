import { withLocalMedia } from '../media/accepted-media.js';
import { slotClaim } from '../sending/caps.js';
import type { Core } from '../context.js';
import { sendingWindow } from '../time/hours.js';
import { publishMessageStatus } from '../events/message-events.js';
import { KeyedRunner } from './keyed-runner.js';
import { stream } from '../nodes/leases.js';
import type { NodePresence } from '../nodes/node-presence.js';
import type { LeaseAnswer } from '../ports/leases.js';
import { outbound } from '../sending/outbound.js';
import { GatewayFailure } from '../ports/gateway.js';
import type { AcceptedMedia } from '../ports/media.js';
import type { ErrorClase, MensajePayload, MensajeRow } from '../ports/model.js';
import { REFUSED_FOR_GOOD } from '../sending/idempotency.js';
import { failureClase } from '../sending/failure-class.js';
import { backoffMs, type Backoff } from '../time/backoff.js';
import { noteFallido, noteLineFailure } from '../accounts/line-brake.js';

/** See QueueWorker.keepIdleMs. */
export const KEEP_IDLE_MS = 5_000;

/** An idle kept lease no take carried this long past KEEP_IDLE_MS is given back alone (the look wakes for it). */
export const GIVE_ALONE_AFTER_MS = 500;

/**
 * The signal (core/ports/signals.ts) that a line has a queued message this
 * node could not send: its lease or its engine session is another node's,
 * whose worker looks at the line when it hears it. The payload is the line's id.
 */
export const QUEUE_CHANNEL = 'cola';

/** The expiry sweep's batch: expired messages ended in one transaction; a look ends up to EXPIRE_BATCHES of them. */
export const EXPIRE_BATCH = 100;
const EXPIRE_BATCHES = 10;

/** The `error` of a message whose validity passed in the queue (class `caducado`, docs/validity.md). */
export const CADUCADO_ERROR = 'expired: not handed to the gateway within its validity (vigencia)';

/** Transient failures are retried after the base (5 s), then twice as long each time up to 120 times it (10 min), until the TTL. */
export const queueBackoff = (retryMs: number): Backoff => ({ baseMs: retryMs, factors: [1, 2, 4, 8, 16, 32, 64, 120], past: 'repeat' });

/**
 * The humanized queue (docs/design.md §5/§6). Each line's pending messages are sent
 * in arrival order, one at a time, with a random gap after each attempt,
 * never above the line's caps and only inside its allowed hours. Lines are
 * independent: a slow or blocked line never delays another.
 *
 * Several nodes: a line's queue is a stream lease (core/nodes/leases.ts). A node
 * sends on a line only while it holds the line's lease. It keeps the lease
 * between sends, through the line's human gap (no node may send the line
 * then anyway) and KEEP_IDLE_MS more (5 s; `recheckMs` if longer: as long
 * as another node waits before asking again), then gives it back, its
 * look sending meanwhile what other nodes queued on the line (they signal
 * it: QUEUE_CHANNEL); given back sooner (on stop), the lease
 * carries what is left of the gap as its rest, so the gap holds whichever
 * node sends next. The lease of a dead node is taken over once it has been
 * silent longer than its longest send (core/nodes/node-presence.ts).
 *
 * Looks (D-85): a message accepted on a line with no backlog here is its
 * line's head, sent without reading every line's head; the claim checks it
 * is the head, and a wrong guess costs a look, never an out-of-order send.
 * A send that leaves its line empty asks for no look. A node that cannot
 * send an accepted message itself (another node holds its line's lease or
 * engine session) signals the line, and the holder looks. Nothing else wakes
 * an idle worker: its look every `pollMs` (5 s by default) is the safety net
 * that bounds a lost signal, and a kept lease's give-back wakes it on time.
 *
 * Durability: a message is committed before its 200; a worker claims it with
 * a lease before calling the gateway and records the outcome after. After a
 * crash the claim is freed (at start on a store served alone, on expiry
 * otherwise) and the message is sent again with the same msg_id, which the
 * gateway uses as an idempotency key, so nothing accepted is lost and nothing
 * is sent twice where the gateway honours it.
 */
export class QueueWorker {
  /**
   * Per line: not before `until` (clock time: a gap, a cap, the window, a state
   * to wait out). Waits on a line's state are also looked at again after
   * `recheck` (the clock's ticks), so an edit of its hours or caps, a reconnection
   * or its first message's TTL takes effect within `recheckMs` whatever the wall clock says.
   */
  private readonly notBefore = new Map<number, { until: number; recheck: number }>();
  private readonly runner: KeyedRunner<number>;
  /**
   * Lines that may have a pending queued message: those with a head at the
   * last look, and those queued on since. A message accepted on any other
   * line is its line's head (a guess the claim checks).
   */
  private backlog = new Set<number>();
  /** The lines queued on while a look reads the heads: still in the backlog after it. */
  private queuedSince: Set<number> | null = null;
  /**
   * Per line: when its next message falls due, when the last look found none due (every one waits for its
   * time: a retry, a scheduled send). A message accepted on such a line is sent at once without a look, as
   * on an empty line: its claim checks no older message of its line to its recipient is pending (D-162), so
   * a backlog waiting for its time neither holds it back nor costs a look per accept.
   */
  private waiting = new Map<number, number>();
  /**
   * Per line: recipients a guess found held back by an older message of theirs, while the line's
   * `waiting` time lasts: their next accepts are not guessed (a look per recipient, not per accept).
   */
  private heldTo = new Map<number, { until: number; to: Set<string> }>();
  /** Line leases kept between sends: when the line's last send and its rest ended (clock time and ticks), and the node's lapses then. */
  private readonly kept = new Map<number, { at: number; ticks: number; lapses: number }>();
  /** When (ticks) a message was last queued here or signalled: a beat's news older than it does not spare a look. */
  private queuedAt = Number.NEGATIVE_INFINITY;
  /** Line leases being given back: a take of the line waits for its give. */
  private readonly giving = new Map<number, Promise<void>>();
  private unsubscribe: (() => void) | null = null;
  private signalling = false;
  /** Lines an accept here queued on since the last look: a look refused one by a live holder tells that holder (D-142). */
  private askedHere = new Set<number>();
  /** Per line: when (clock time) a take here was last refused by a live holder, which keeps it KEEP_IDLE_MS past its last send (D-151). */
  private readonly heldElsewhere = new Map<number, number>();
  /** Per line: when this node last gave its lease back; a signal for it is still this node's to act on for a while (D-151). */
  private readonly gaveAt = new Map<number, number>();

  constructor(
    private readonly core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus' | 'config' | 'random' | 'lines' | 'signals'>,
    private readonly files: Pick<AcceptedMedia, 'open' | 'remove'>,
    private readonly node: NodePresence,
    private readonly opts: {
      pollMs: number;
      onError: (err: unknown) => void;
      /** Whether this node sends the line's messages: with the engine on several nodes, only the holder of its session does (D-136). */
      sendsHere?: (celularId: number) => boolean;
    } = { pollMs: 500, onError: () => {} },
  ) {
    this.runner = new KeyedRunner((safety) => this.look(safety), opts.onError, opts.pollMs);
  }

  start(): void {
    // Another node's line with a message for this node to send; signals lost: a look at everything.
    this.unsubscribe = this.core.signals.subscribe(QUEUE_CHANNEL, { message: (p) => this.signalled(Number(p)), gap: () => this.poke() });
    this.runner.start();
  }

  /**
   * Another node queued on the line and could not send it: a look finds it (this node holds the line, or will take it).
   * Every node hears the signal; only the holder looks (D-151). A node sending on the line looks when that send ends;
   * one that knows another live node holds the line, and has not held it lately, leaves it to that node.
   */
  private signalled(celularId: number): void {
    if (this.signalling || !Number.isInteger(celularId) || (this.opts.sendsHere && !this.opts.sendsHere(celularId))) return;
    this.queuedAt = this.core.clock.ticks();
    const known = this.backlog.has(celularId);
    this.backlogged(celularId);
    if (this.runner.isBusy(celularId)) return;
    const now = this.core.clock.now();
    // In a pause with a backlog known here: the look that found it timed the pause's end (as a local accept's, `queued`).
    // Not during a look: its read may predate the message, and it times only the lines it found.
    if (known && this.queuedSince === null && (this.notBefore.get(celularId)?.until ?? 0) > now) return;
    if (!this.kept.has(celularId) && !this.giving.has(celularId) && this.heldByAnother(celularId, now) && !this.gaveLately(celularId, now)) return;
    this.poke();
  }

  /** Whether a take of the line was refused here by a live holder within KEEP_IDLE_MS: it most likely still holds it. */
  private heldByAnother(celularId: number, now: number): boolean {
    const t = this.heldElsewhere.get(celularId);
    return t !== undefined && now - t >= 0 && now - t < this.keepIdleMs();
  }

  /** Whether this node gave the line's lease back lately: a node refused by it a moment before may count on it to act still. */
  private gaveLately(celularId: number, now: number): boolean {
    const t = this.gaveAt.get(celularId);
    return t !== undefined && now - t < 2 * this.keepIdleMs();
  }

  /** Tells the other nodes a message waits on the line (not awaited: a lost signal waits for a look). */
  private signal(celularId: number): void {
    // This node hears its own publish at once (before it returns): it already knows.
    this.signalling = true;
    try {
      void this.core.signals.publish(QUEUE_CHANNEL, String(celularId));
    } finally {
      this.signalling = false;
    }
  }

  /** Something changed (a new message, a send ended): look again soon. */
  poke(): void {
    this.runner.poke();
  }

  /**
   * A message was queued on a line (`m`: the accepted row, when the caller has
   * it). A line that is sending or pausing is looked at when its wait ends
   * anyway, so an accept on it costs no look: under the human-like gaps that is
   * nearly every accept. On a line with no backlog here the message is the
   * head: it is sent at once, without a look.
   */
  queued(celularId: number, m?: MensajeRow): void {
    this.queuedAt = this.core.clock.ticks();
    // A validity: the sweep looks when it ends, whatever the line does meanwhile (a look before then times it too).
    const vence = m?.vigencia_hasta ?? null;
    if (vence !== null) this.runner.wakeWithin(Math.max(1, vence - this.core.clock.now()));
    // Another node holds the line's session: its worker sends the message.
    if (this.opts.sendsHere && !this.opts.sendsHere(celularId)) return this.signal(celularId);
    const busy = this.runner.isBusy(celularId);
    const now = this.core.clock.now();
    // Another live node held the line a moment ago: told, with no take or look here (its look finds the message). If it
    // stopped meanwhile, or the signal is lost, this node's look within recheckMs takes the line (one look, however many accepts).
    if (!busy && !this.kept.has(celularId) && this.heldByAnother(celularId, now)) {
      this.signal(celularId);
      this.runner.wakeWithin(this.core.config.queue.recheckMs);
      return;
    }
    const held = this.notBefore.get(celularId);
    if (busy || (held?.until ?? 0) > now) {
      // A send's end looks when its line is in the backlog; a pause after a send that asked for no look was timed by none,
      // nor by a look under way (its read may predate this message: it times only the lines it found).
      if (!busy && (!this.backlog.has(celularId) || this.queuedSince !== null)) this.poke();
      this.mark(celularId);
      return;
    }
    // Scheduled (D-162): a look (one every pollMs at most) finds it and times the line for when it is due.
    if (m && m.proximo_intento_at !== null && m.proximo_intento_at > now) return this.mark(celularId);
    const allWaiting = (this.waiting.get(celularId) ?? 0) > now;
    // Behind an older message of its recipient that waits: found by the look timed for the line's next due time.
    const heldTo = this.heldTo.get(celularId);
    if (allWaiting && m && heldTo && heldTo.until > now && heldTo.to.has(m.destinatario)) return this.mark(celularId);
    if (!m || m.celular_id !== celularId || (this.backlog.has(celularId) && !allWaiting)) {
      this.mark(celularId);
      this.poke();
      return;
    }
    this.runner.run(celularId, () => this.guessed(m));
  }

  private mark(celularId: number): void {
    this.backlogged(celularId);
    this.askedHere.add(celularId);
  }

  /** The line may have a pending message (another node's signal): not one accepted here, so a refused look does not signal it again. */
  private backlogged(celularId: number): void {
    this.backlog.add(celularId);
    this.queuedSince?.add(celularId);
  }

  /** Stops taking messages, waits for the sends in flight to be recorded, then gives back the leases kept. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.runner.stop();
    await Promise.all(this.giving.values());
    const kept = [...this.kept.keys()];
    this.kept.clear();
    await Promise.all(kept.map((id) => this.node.give(stream.cola(id), this.restOf(id)).catch(this.opts.onError)));
  }

  /**
   * One look at the queue at the clock's time, and the sends it started,
   * ended: tests move the clock and step instead of waiting for the poll.
   */
  step(): Promise<void> {
    return this.runner.step();
  }

  /** Resolves when nothing is being sent (tests use it to wait for a drain step). */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  private async look(safety = false): Promise<number> {
    let wait = this.opts.pollMs;
    const now = this.core.clock.now();
    const asked = this.askedHere;
    this.askedHere = new Set();
    // What no longer tells anything (the windows of heldByAnother and gaveLately): forgotten, so the maps follow the lines in use.
    for (const [id, t] of this.gaveAt) if (now - t >= 2 * this.keepIdleMs()) this.gaveAt.delete(id);
    for (const [id, t] of this.heldElsewhere) if (now - t >= this.keepIdleMs()) this.heldElsewhere.delete(id);
    for (const [id, h] of this.heldTo) if (h.until <= now) this.heldTo.delete(id);
    const due: MensajeRow[] = [];
    const since = new Set<number>();
    this.queuedSince = since;
    let look: Awaited<ReturnType<Core['store']['queueLook']>>;
    let nextExpiry: number | null;
    // Lines sending, or in a pause no look cuts short: their heads are not read (D-143).
    const unread = this.unreadLines(now);
    const unreadIds = [...unread];
    try {
      // Each line's head retry time, and the heads due now whole: a head waiting for a retry is not read (D-143).
      // Not read by a safety look with no line here to look after, when a beat sent since the last message queued here
      // found no pending message (D-197): the answer is known, empty.
      const known = safety && this.backlog.size === 0 && this.runner.inFlight === 0 && this.node.quiet('queue', this.queuedAt);
      look = known ? { lines: [], due: [], expiry: { expired: false, next: null } } : await this.core.store.queueLook(now, unreadIds);
      nextExpiry = look.expiry.next;
      // Messages whose validity passed end whatever their line's state; the look told whether there are any (D-191).
      if (look.expiry.expired) {
        const swept = await this.sweep(now);
        nextExpiry = swept.next;
        // What it ended may be a line's head or its whole backlog: looked at again, as the sweep left the queue.
        if (swept.ended > 0) look = await this.core.store.queueLook(now, unreadIds);
      }
    } finally {
      this.queuedSince = null;
    }
    // The next one ending times the look.
    if (nextExpiry !== null) wait = Math.min(wait, Math.max(1, nextExpiry - now));
    const heads = new Map(look.due.map((h) => [h.celular_id, h]));
    this.backlog = new Set([...look.lines.map((l) => l.celular_id), ...since]);
    this.waiting = new Map(
      look.lines.flatMap((l) =>
        !heads.has(l.celular_id) && l.proximo_intento_at !== null && l.proximo_intento_at > now ? [[l.celular_id, l.proximo_intento_at]] : [],
      ),
    );
    for (const line of look.lines) {
      const id = line.celular_id;
      if (this.runner.isBusy(id)) continue;
      // Another node holds the line's session (D-136): its worker sends it.
      if (this.opts.sendsHere && !this.opts.sendsHere(id)) continue;
      const held = this.notBefore.get(id);
      const head = heads.get(id);
      if (!head) {
        // Every message of it waits for its time (a retry, a scheduled send): looked at again when the first is due.
        // A line left unread (its head not read) is looked at when its pause ends; one left unread while it was
        // sending and no longer held (a send that made no attempt) at once.
        const at = Math.max(held?.until ?? 0, line.proximo_intento_at ?? 0);
        if (at > now) wait = Math.min(wait, at - now);
        else if (line.proximo_intento_at === null && unread.has(id)) wait = 1;
        continue;
      }
      const retryAt = head.proximo_intento_at ?? 0;
      const at = Math.max(held?.until ?? 0, retryAt);
      const ticks = this.core.clock.ticks();
      if (at > now && !(held && ticks >= held.recheck && retryAt <= now)) {
        // Due at `at`, or sooner once its hold's recheck comes (with its retry time): the look is timed for it, not left to the poll.
        const recheckIn = held && Number.isFinite(held.recheck) ? Math.max(held.recheck - ticks, retryAt - now) : Number.POSITIVE_INFINITY;
        wait = Math.min(wait, Math.max(1, Math.min(at - now, recheckIn)));
        continue;
      }
      due.push(head);
    }
    // Idle leases no take carried: given back alone; the next look comes when the next one is due.
    const dueLines = new Set(due.map((h) => h.celular_id));
    this.giveBack(this.idleKept(this.keepIdleMs() + GIVE_ALONE_AFTER_MS, dueLines));
    wait = Math.min(wait, this.nextGiveIn(dueLines));
    if (due.length === 0) return wait;
    // A node that cannot tell the store it is alive starts no send: its streams may soon be another's.
    if (!this.node.fresh()) return Math.min(wait, this.core.config.queue.recheckMs);
    const byStream = new Map<string, MensajeRow>();
    for (const h of due) {
      if (this.holds(h.celular_id)) this.sendHead(h);
      else if (this.giving.has(h.celular_id)) wait = Math.min(wait, this.core.config.queue.recheckMs);
      else byStream.set(stream.cola(h.celular_id), h);
    }
    if (byStream.size === 0) return wait;
    // One take for every due line: with several nodes, a line another node holds costs nothing more.
    for (const a of await this.take([...byStream.values()].map((h) => h.celular_id))) {
      const head = byStream.get(a.stream);
      if (!head) continue;
      if (a.taken) {
        // A line an accept started meanwhile is sending under this same lease: it keeps it when it ends.
        if (!this.runner.isBusy(head.celular_id)) this.sendHead(head);
        else this.keep(head.celular_id);
        continue;
      }
      this.refused(head.celular_id, a.restMs, now);
      // Held by a live node: it sends what was accepted here once it hears, not at its own next look.
      if (a.restMs === 0 && asked.has(head.celular_id)) this.signal(head.celular_id);
      wait = Math.min(wait, a.restMs || this.core.config.queue.recheckMs);
    }
    return wait;
  }

  /**
   * The lines whose head a look would not send now, so it need not read them (D-143): those sending here, and
   * those in a pause that only its end lifts (the human gap, the gateway's rate-limit pause, another node's
   * rest). A hold with a recheck (the line's state, a cap) is not one of them: the recheck may lift it sooner.
   */
  private unreadLines(now: number): Set<number> {
    const out = new Set<number>();
    for (const id of this.backlog) {
      const held = this.notBefore.get(id);
      if (this.runner.isBusy(id) || (held && held.until > now && held.recheck === Number.POSITIVE_INFINITY)) out.add(id);
    }
    return out;
  }

  /** A guess on a line whose backlog all waits missed: its recipient's next accepts wait for the line's next due time unguessed. */
  private heldBack(m: MensajeRow): void {
    const until = this.waiting.get(m.celular_id) ?? 0;
    if (until <= this.core.clock.now()) return;
    const h = this.heldTo.get(m.celular_id);
    if (h && h.until === until) h.to.add(m.destinatario);
    else this.heldTo.set(m.celular_id, { until, to: new Set([m.destinatario]) });
  }

  /** Another node's gap is the line's own: waited out whole. A line another node is on: looked at again soon. */
  private refused(celularId: number, restMs: number, now: number): void {
    const { recheckMs } = this.core.config.queue;
    if (restMs === 0) this.heldElsewhere.set(celularId, now);
    else this.heldElsewhere.delete(celularId);
    this.notBefore.set(
      celularId,
      restMs > 0 ? { until: now + restMs, recheck: Number.POSITIVE_INFINITY } : { until: now + recheckMs, recheck: this.core.clock.ticks() + recheckMs },
    );
  }

  /**
   * An accepted message taken for its line's head without a look; false when
   * no look is needed: its send left the line empty, or another node holds
   * the line (it is waited for as a look would, and found by the look after).
   */
  private async guessed(m: MensajeRow): Promise<boolean> {
    const id = m.celular_id;
    const now = this.core.clock.now();
    const a = this.node.fresh() ? await this.acquire(id) : null;
    if (a && !a.taken) {
      this.refused(id, a.restMs, now);
      // Held by a live node (no rest to wait out): that node sends it once it hears. Another node's gap: looked at when it ends.
      if (a.restMs === 0) this.signal(id);
      else this.runner.wakeWithin(a.restMs);
    }
    if (a?.taken && (await this.processHeld(m, true)) && !this.backlog.has(id)) return false;
    this.mark(id);
    return a?.taken !== false;
  }

  /** The line's lease: the one kept from its last send (unless this node lapsed since), or taken now. */
  private async acquire(celularId: number): Promise<LeaseAnswer> {
    await this.giving.get(celularId);
    if (this.holds(celularId)) return { stream: stream.cola(celularId), taken: true, restMs: 0 };
    return (await this.take([celularId]))[0]!;
  }

  /** Takes the lines' leases; the kept ones idle past their rest and keepIdleMs are given back in the same round trip. */
  private take(celularIds: number[]): Promise<LeaseAnswer[]> {
    const carried = this.idleKept(this.keepIdleMs(), new Set(celularIds));
    const gifts = carried.map((id) => ({ stream: stream.cola(id), restMs: this.restOf(id) }));
    const taking = this.node.take(celularIds.map(stream.cola), gifts);
    this.onTheWay(carried, taking);
    return taking;
  }

  /** Whether this node still holds the line's lease from a send: a silence it survived may have let another take it. */
  private holds(celularId: number): boolean {
    const k = this.kept.get(celularId);
    if (k && k.lapses === this.node.lapses) return true;
    this.kept.delete(celularId);
    return false;
  }

  /** Takes out of `kept` the leases of lines idle here for `idleMs` past their rest, none running nor in `except`. */
  private idleKept(idleMs: number, except: Set<number>): number[] {
    const { clock } = this.core;
    const out: number[] = [];
    for (const [id, k] of this.kept) {
      // Idle by the clock or by the ticks, whichever says so first: a clock set back never keeps a lease longer.
      if (except.has(id) || this.runner.isBusy(id) || (clock.now() - k.at < idleMs && clock.ticks() - k.ticks < idleMs)) continue;
      this.kept.delete(id);
      out.push(id);
    }
    return out;
  }

  /** How long until the first kept lease is idle long enough to be given back alone (by the clock or the ticks). */
  private nextGiveIn(except: Set<number>): number {
    const { clock } = this.core;
    const after = this.keepIdleMs() + GIVE_ALONE_AFTER_MS;
    let next = Number.POSITIVE_INFINITY;
    for (const [id, k] of this.kept) {
      // A due line's lease is kept for its send (idleKept passed it over): it times no give.
      if (this.runner.isBusy(id) || except.has(id)) continue;
      next = Math.min(next, k.at + after - clock.now(), k.ticks + after - clock.ticks());
    }
    return Math.max(1, next);
  }

  /** Gives leases back on their own; not awaited: a take of the line waits for its give. */
  private giveBack(ids: number[]): void {
    for (const id of ids) this.onTheWay([id], this.node.give(stream.cola(id), this.restOf(id)));
  }

  /**
   * Leases on their way back: a take of the line waits for the give. One whose
   * give failed is not thought held (it may have been given): the line's next
   * take here finds out, and its next send keeps and gives it again.
   */
  private onTheWay(ids: number[], p: Promise<unknown>): void {
    const now = this.core.clock.now();
    for (const id of ids) {
      this.gaveAt.set(id, now);
      const g = p
        .then(() => undefined, this.opts.onError)
        .finally(() => {
          this.giving.delete(id);
          if (this.backlog.has(id)) this.poke();
        });
      this.giving.set(id, g);
    }
  }

  /** A head a look found, worked on its line's runner under the held lease; the job answers nothing, so a look follows it. */
  private sendHead(h: MensajeRow): void {
    this.runner.run(h.celular_id, () => this.processHeld(h).then(() => undefined));
  }

  /** Works the line's head under its lease, then keeps the lease; true when the message left the queue (sent or ended). */
  private async processHeld(m: MensajeRow, guess = false): Promise<boolean> {
    try {
      return await this.process(m, guess);
    } finally {
      this.keep(m.celular_id);
    }
  }

  /**
   * How long a kept lease outlives its line's rest with nothing to send:
   * KEEP_IDLE_MS, or recheckMs if longer. A line written to every few seconds
   * keeps its lease (no take and give a message); another node's message
   * for it meanwhile is signalled, and sent by this node's look.
   */
  private keepIdleMs(): number {
    return Math.max(KEEP_IDLE_MS, this.core.config.queue.recheckMs);
  }

  /** Idle is counted from the end of the line's rest: no other node may send the line before it anyway. */
  private keep(celularId: number): void {
    this.heldElsewhere.delete(celularId);
    const rest = this.restOf(celularId);
    this.kept.set(celularId, { at: this.core.clock.now() + rest, ticks: this.core.clock.ticks() + rest, lapses: this.node.lapses });
    // Its give-back is due then, whether or not the send asks for a look.
    this.runner.wakeWithin(rest + this.keepIdleMs() + GIVE_ALONE_AFTER_MS);
  }

  /**
   * What other nodes must wait before taking the line: its gap or rate-limit
   * pause, whole. A hold on the line's state (hours, caps, estado) is no rest:
   * every node keeps its own and looks again within a second, so an edit
   * takes effect at once whichever node sees it first.
   */
  private restOf(celularId: number): number {
    const h = this.notBefore.get(celularId);
    return h && h.recheck === Number.POSITIVE_INFINITY ? Math.max(0, h.until - this.core.clock.now()) : 0;
  }

  private gap(): number {
    const { gapMinMs, gapMaxMs } = this.core.config.queue;
    return gapMinMs + Math.floor(this.core.random() * (gapMaxMs - gapMinMs + 1));
  }

  /**
   * The expiry sweep (docs/validity.md): the pending queued messages whose validity ended by `now`, ended `caducado`
   * in batches with their refunds and events, wherever they stand in their line's queue. Any node may sweep: the
   * store ends each once and never one under a live claim. Returns how many it ended and when to sweep again (null: nothing to wait for).
   */
  private async sweep(now: number): Promise<{ ended: number; next: number | null }> {
    let count = 0;
    for (let i = 0; i < EXPIRE_BATCHES; i += 1) {
      const { ended, next } = await this.core.store.expireDue(now, CADUCADO_ERROR, EXPIRE_BATCH);
      count += ended.length;
      for (const m of ended) {
        publishMessageStatus(this.core, m, 'pendiente');
        await this.dropFile(m);
      }
      if (ended.length < EXPIRE_BATCH) return { ended: count, next };
    }
    // More left: the next look comes at once.
    return { ended: count, next: now };
  }
  /** An error of a side task (the line's health check): reported, and nothing braked by it. */
  private readonly failed = (err: unknown): false => {
    this.opts.onError(err);
    return false;
  };

  private async end(m: MensajeRow, error: string, clase: ErrorClase): Promise<void> {
    const after = await this.core.store.failMensaje(m.msg_id, error, clase, this.core.clock.now());
    if (after) publishMessageStatus(this.core, after, m.estado);
    await this.dropFile(m);
  }

  private async dropFile(m: MensajeRow): Promise<void> {
    const file = (JSON.parse(m.payload ?? '{}') as MensajePayload).file;
    if (file) await this.files.remove(file);
  }

  private async process(m: MensajeRow, guess: boolean): Promise<boolean> {
    const { core } = this;
    const now = core.clock.now();
    const hold = (ms: number) => this.notBefore.set(m.celular_id, { until: now + ms, recheck: this.core.clock.ticks() + this.core.config.queue.recheckMs });
    if (m.expira_at !== null && now >= m.expira_at) {
      await this.end(m, 'expired: not sent within the queue TTL', 'no_enviado');
      return true;
    }
    const celular = await core.lines.celular(m.celular_id);
    if (!celular) {
      await this.end(m, 'the celular was deleted', 'no_enviado');
      return true;
    }
    const cliente = await core.lines.cliente(celular.cliente_id);
    // A suspended client or a line that is not active waits (until the TTL), as a person would.
    if (!cliente || cliente.estado !== 'activo' || celular.estado !== 'activo' || !celular.gateway_instancia) {
      hold(core.config.queue.inactiveHoldMs);
      return false;
    }
    // Braked (core/accounts/line-brake.ts): its messages wait, within their TTL, for a resume; looked at again within recheckMs.
    if (celular.frenado === 1) {
      hold(core.config.queue.inactiveHoldMs);
      return false;
    }
    const window = sendingWindow(celular.hora_inicio_permitido, celular.hora_fin_permitido, now, core.config.tz);
    if (!window.open) {
      hold(window.opensInMs);
      return false;
    }
    const outcome = await this.attempt(m, celular.gateway_instancia, slotClaim(celular, now, core.config.queue.leaseMs, core.config.tz), hold, guess);
    if (outcome !== 'none') {
      // The human-like pause is never cut short (nor is a rate-limit pause).
      const pause = core.clock.now() + this.gap();
      if ((this.notBefore.get(m.celular_id)?.until ?? 0) < pause) this.notBefore.set(m.celular_id, { until: pause, recheck: Number.POSITIVE_INFINITY });
    }
    return outcome === 'ended';
  }

  /**
   * Claims the message and sends it: `none` when no attempt was made (a cap,
   * another worker has it, or a guessed head is not its line's head), `ended`
   * when the message left the queue, `retry` when it waits for another attempt.
   */
  private async attempt(
    m: MensajeRow,
    instancia: string,
    slot: ReturnType<typeof slotClaim>,
    hold: (ms: number) => void,
    guess: boolean,
  ): Promise<'none' | 'ended' | 'retry'> {
    const { core } = this;
    // Checked again as the last step before the send: the reads before it may have been slow.
    if (!this.node.fresh()) {
      hold(this.core.config.queue.recheckMs);
      return 'none';
    }
    // Its validity ended before its claim (the moment it is handed to the gateway): the sweep ends it, not a send.
    const vence = m.vigencia_hasta ?? null;
    if (vence !== null && core.clock.now() >= vence) {
      await this.sweep(core.clock.now());
      return 'none';
    }
    const claim = await core.store.claimQueued(m.msg_id, slot, core.clock.now(), guess, this.node.info.id);
    if (!claim.ok) {
      // A guess that missed (an older message to its recipient waits on the line) costs a look now, no hold.
      if (guess && claim.reason === 'taken') {
        this.heldBack(m);
        return 'none';
      }
      // Taken: another worker's claim on it is still live; looked at again soon, not at once.
      hold(claim.reason === 'cap' ? claim.retryAfterMs : this.core.config.queue.recheckMs);
      return 'none';
    }
    const payload = JSON.parse(m.payload ?? '{}') as MensajePayload;
    try {
      const { gatewayMsgId } = await withLocalMedia(this.files, payload, (p) => core.gateway.send(instancia, outbound(m.msg_id, m.tipo, m.destinatario, p)));
      const after = await core.store.markSent(m.msg_id, gatewayMsgId, core.clock.now());
      if (after) publishMessageStatus(core, after, 'pendiente');
      // A failure report parked before this record, applied by it, counts as one that came after (D-170).
      if (after && (await noteFallido(core, after, 'pendiente').catch(this.failed))) core.lines.invalidate({ celular: m.celular_id });
      await this.dropFile(m);
    } catch (err) {
      const kind = err instanceof GatewayFailure ? err.kind : 'transient';
      const reason = err instanceof Error ? err.message : String(err);
      // Rate-limited: the network's own pause, not our backoff; the whole line waits with its head message.
      const { queue } = core.config;
      const wait =
        kind === 'rate_limited'
          ? ((err as GatewayFailure).retryAfterMs ?? queue.rateLimitPauseMs)
          : (backoffMs(queueBackoff(queue.retryMs), m.intentos + 1, core.random) ?? queue.retryMs);
      const at = core.clock.now() + wait;
      // Said as a direct send's is, so the history reads the same whichever way a refusal came.
      const clase = failureClase(err);
      const expired = m.expira_at !== null && at >= m.expira_at;
      if (kind === 'permanent') await this.end(m, clase === 'rechazado' ? `${REFUSED_FOR_GOOD}${reason}` : reason, clase);
      else if (expired) await this.end(m, `expired after retries: ${reason}`, clase);
      else await core.store.retryLater(m.msg_id, at, kind === 'rate_limited' ? `rate-limited: ${reason}` : reason);
      // A send that ended failed counts toward its line's health; a brake it sets holds the line from its next look.
      if ((kind === 'permanent' || expired) && (await noteLineFailure(core, m.celular_id, clase).catch(this.failed)))
        core.lines.invalidate({ celular: m.celular_id });
      if (kind === 'rate_limited') this.notBefore.set(m.celular_id, { until: at, recheck: Number.POSITIVE_INFINITY });
      return kind === 'permanent' || expired ? 'ended' : 'retry';
    }
    return 'ended';
  }
}
