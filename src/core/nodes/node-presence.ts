import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../time/clock.js';
import { lagSampler } from '../time/loop-lag.js';
import type { LeaseAnswer, LeaseGift, LeasesStore, LinePage, NodeInfo, NodeRow, StoreNews } from '../ports/leases.js';
import { SALUD } from './leases.js';

/** The machine's monotonic clock in milliseconds: the same in every process (CLOCK_MONOTONIC). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

/** How a node keeps its streams (serve's settings, server/config-knobs.ts). */
export interface PresenceTiming {
  /** The node's longest send: its streams are not taken while it may still be sending. */
  sendMs: number;
  /** How often a node says it is alive. */
  beatMs: number;
  /** Beyond its longest send, how long a silent node is still given before its streams are taken. */
  takeoverMarginMs: number;
}

/** How often an alone node's timer samples the loop's lag (it has no beat to carry the sample). */
export const ALONE_LAG_MS = 5000;

/**
 * Whether a node is there, for what is not a lease: counting nodes
 * (`/health`'s nodos_vivos) and short holds such as an Idempotency-Key's
 * turn (core/sending/send.ts). A node is present while its last beat is younger
 * than the takeover margin (5 beats by default): a node silent that long
 * has stopped starting sends (NodePresence.fresh is half of it). Its leases
 * stay its own longer, for its longest send (its stale time), so that a
 * slow node's sends in flight are never taken over; a count or a turn need
 * not wait that long (minutes by default).
 */
export function present(n: NodeRow | undefined, presentMs: number): n is NodeRow {
  return n !== undefined && n.alive && n.silent_ms < presentMs;
}

/**
 * This process as one node among those serving a store: it beats every
 * `beatMs` and takes and gives stream leases (core/nodes/leases.ts) under its id.
 * A node alone on its store (SQLite) beats once: nobody else reads it.
 *
 * Its streams may be taken once it has been silent for its longest send
 * (`sendMs`, the queue's claim) plus `takeoverMarginMs`. So a node starts a
 * new send only while `fresh()`: its last good beat is less than half the
 * margin old. A send started then ends (its timeouts see to it) before
 * anyone may take its stream, even if that was the node's last beat.
 */
export class NodePresence {
  readonly info: NodeInfo;
  private lastBeat = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private readonly onError: (err: unknown) => void;
  /**
   * When the last beat the store recorded was sent, on the machine's
   * monotonic clock (never a driven one: what it guards is real time, and a
   * watchdog in another process reads the same clock). The engine's holds
   * are judged by it (core/engine/engine-holds.ts).
   */
  lastGoodBeatSent = Number.NEGATIVE_INFINITY;
  /** Silences survived (the first beat counts one): work read under a lease before the last one may be another node's now. */
  lapses = 0;
  /** What the last good beat found waiting in the store (null: a store that tells nothing), and when it was sent (ticks). */
  private news: StoreNews | null = null;
  private newsSent = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: LeasesStore,
    private readonly clock: Clock,
    private readonly opts: PresenceTiming & {
      onError: (err: unknown) => void;
      /**
       * The store is served by this process alone (SQLite, D-191): no other node reads a beat or takes a
       * stream, so after the first beat there is none, the node is always fresh and never lapses.
       */
      alone?: boolean;
      /** This thread's loop lag is sampled by the node's timer (the request thread's; core/time/loop-lag.ts). */
      sampleLag?: boolean;
    },
  ) {
    this.info = {
      id: randomUUID(),
      label: `pasarela serve pid ${process.pid} on ${hostname()}`,
      staleMs: opts.sendMs + opts.takeoverMarginMs,
      marginMs: opts.takeoverMarginMs,
      engineUrl: null,
      ...(opts.alone ? { alone: true } : {}),
    };
    this.onError = opts.onError;
  }

  /** The first beat is awaited: a node the store cannot record does not start. */
  async start(): Promise<void> {
    await this.beat();
    const { alone, sampleLag } = this.opts;
    // Alone, a timer would only wake an idle thread: it runs for the lag sample alone, and more slowly.
    if (alone && !sampleLag) return;
    const every = alone ? Math.max(this.opts.beatMs, ALONE_LAG_MS) : this.opts.beatMs;
    // The beat also samples the event loop's lag (core/time/loop-lag.ts): no timer of its own wakes an idle node for it.
    const sample = sampleLag ? lagSampler(every) : () => {};
    this.timer = setInterval(() => {
      sample();
      if (alone) return;
      this.beating ??= this.beat()
        .catch(this.onError)
        .finally(() => (this.beating = undefined));
    }, every);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    const t = this.clock.ticks();
    const sent = monotonicMs();
    // A beat that fails leaves no news in use: what it would have said is unknown.
    const news = await this.store.nodeBeat(this.info, this.clock.now()).catch((err: unknown) => {
      this.news = null;
      throw err;
    });
    this.lastGoodBeatSent = sent;
    this.news = news;
    this.newsSent = t;
    // Back from a silence long enough that its streams may have been taken: whoever holds work read under a lease reads again.
    if (t - this.lastBeat >= this.opts.takeoverMarginMs / 2) this.lapses += 1;
    this.lastBeat = t;
  }

  /** Recent enough a beat that a send started now ends before this node could be taken for dead. */
  fresh(): boolean {
    return this.opts.alone === true || this.clock.ticks() - this.lastBeat < this.opts.takeoverMarginMs / 2;
  }

  /**
   * Whether the last beat found nothing of `kind` in the store, sent after `sinceTicks` (the caller's last change of its
   * own that the store should show), while this node is fresh and its beats succeed. A safety look that gets true may skip
   * its read: what another node adds after the beat is found by the look after the next beat (D-197).
   */
  quiet(kind: keyof StoreNews, sinceTicks: number): boolean {
    return this.news !== null && !this.news[kind] && this.newsSent > sinceTicks && this.fresh();
  }

  /** `gives`: streams given back in the same round trip. */
  take(streams: string[], gives: LeaseGift[] = []): Promise<LeaseAnswer[]> {
    return this.store.leaseTake(this.info.id, streams, this.clock.now(), gives);
  }

  /** A page of lines with their health leases taken: held (`restMs` null) or left resting (LeasesStore.leaseTakeLines). */
  takeLines(afterId: number, limit: number, restMs: number | null): Promise<LinePage> {
    return this.store.leaseTakeLines(this.info.id, SALUD, afterId, limit, restMs, this.clock.now());
  }

  async takeOne(stream: string): Promise<LeaseAnswer> {
    return (await this.take([stream]))[0]!;
  }

  give(stream: string, restMs: number): Promise<void> {
    return this.store.leaseGive(this.info.id, stream, restMs, this.clock.now());
  }

  /** Gives several streams back in one call. */
  async giveAll(gives: LeaseGift[]): Promise<void> {
    if (gives.length > 0) await this.take([], gives);
  }

  /** The nodes of this store present now (this one included, once it has beaten). */
  async presentNodes(): Promise<NodeRow[]> {
    return (await this.store.nodes(this.clock.now())).filter((n) => present(n, this.opts.takeoverMarginMs));
  }

  /**
   * Node `id` as the holder of something short-lived: 0 when it is gone (no
   * longer present, or never a node of this store), so its hold may be taken
   * over; otherwise how long to wait before asking again: a second while it
   * beats, and while it is silent, until it counts as gone.
   */
  async holderWaitMs(id: string): Promise<number> {
    const n = (await this.store.nodes(this.clock.now())).find((x) => x.id === id);
    if (!present(n, this.opts.takeoverMarginMs)) return 0;
    return n.silent_ms < this.opts.takeoverMarginMs / 2 ? 1000 : this.opts.takeoverMarginMs - n.silent_ms;
  }

  /** Stops beating and frees this node's streams for the others at once. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
    await this.store.nodeLeave(this.info.id);
  }
}
