import type { Agent } from 'undici';
import type { Core } from '../core/context.js';
import type { BusEventName } from '../core/events/events.js';
import type { EntregaRow, EscuchaRow, JournalEvent, WebhookConfig } from '../core/ports/model.js';
import { eventBody, type LoggedEvent } from '../core/events/event-log.js';
import { KeyedRunner } from '../core/queue/keyed-runner.js';
import { stream } from '../core/nodes/leases.js';
import type { NodePresence } from '../core/nodes/node-presence.js';
import { ReceiverAgents } from './agents.js';
import { ClientQueue } from './client-queue.js';
import { AttemptDeadline } from './deadline.js';
import { post, type PostAnswer } from './post.js';
import { subscribed, vetWebhookHost } from './config.js';
import { COPY_BACKLOG, ListenerCopies } from './listener-copies.js';
import { announceWebhookConfig, WebhookConfigCache } from './config-cache.js';
import { AttemptBatch } from './attempt-batch.js';
import { vetListenerHost } from './listeners.js';
import { retryAfterMs as parseRetryAfter } from '../core/time/retry-after.js';
import { backoffMs } from '../core/time/backoff.js';
import { sign, webhookBackoff } from './sign.js';

export interface DispatcherOptions {
  /** First retry delay; the schedule multiplies it (docs/design.md §7, `--webhook-retry-ms`). */
  retryBaseMs: number;
  timeoutMs: number;
  /** Deliveries in flight at once, across clients. */
  concurrency: number;
  /** Deliveries in flight at once for one client, reached while its receiver keeps answering 2xx. */
  clientConcurrency: number;
  /**
   * The safety look (`--webhook-poll`, 5 s): how often the log's pending deliveries (any node's) and the listeners are
   * looked at with no wake-up. This node's events, other nodes' signals (WEBHOOK_CHANNEL) and the timer for the earliest
   * known due delivery wake it sooner; what it bounds is a lost signal, or deliveries left due by a node that stopped or died.
   */
  pollMs: number;
  /** How soon a client whose stream another node holds is asked for again. */
  heldRetryMs: number;
  userAgent: string;
  /** Copies to webhook listeners in flight at once, apart from the deliveries' slots. */
  listenerConcurrency: number;
  /** A listener copy's first quick retry (the second: 4 times as long), and how stale a listener's lease may be read. */
  listenerRetryMs: number;
  listenerRecheckMs: number;
  /** How long a vetted receiver's addresses are trusted; how long an unused receiver's connections are kept. */
  revetMs: number;
  agentIdleMs: number;
  onError: (err: unknown) => void;
}

export const TEST_EVENT = 'webhook.test';

/**
 * The signal (core/ports/signals.ts) that a client has deliveries this node
 * could not claim: another live node holds its stream, whose dispatcher
 * claims them when it hears (the payload is the client's id). Nodes that do
 * not hold the stream ignore it; the publisher asks again after heldRetryMs.
 */
export const WEBHOOK_CHANNEL = 'entregas';

/** The bus events whose changes are logged (core/events/event-log.ts): each one means "the log has news for this client". */
export const JOURNALED_EVENTS = [
  'message.status',
  'session.status',
  'messages.received',
  'celular.frenado',
  'celular.reanudado',
] as const satisfies readonly BusEventName[];

/** What the API asks of webhook delivery, wherever the dispatcher runs (this thread, or the background one: server/background/). */
export interface WebhookControl {
  /** Without a client: the log may have news for anyone. With one: that client's deliveries changed (an event, a redelivery). */
  poke(clienteId?: number): void;
  /** A signed test event to the client's receiver and live listeners; its id, or null when there is neither. */
  enqueueTest(clienteId: number, data: Record<string, unknown>): Promise<string | null>;
  /** A listener removed through this node: nothing more goes to it from here. */
  forgetListener(id: string): void;
}

/**
 * How long a claim outlives its attempt's deadline before the delivery is
 * due again for anyone: what a node that died mid-attempt delays it by, and
 * the room a live one has to record its outcome (a slow store write).
 */
export const CLAIM_MARGIN_MS = 30_000;
/** How long a client's stream lease is kept with nothing in hand: a flow of events pays one take, not one per event. */
const LEASE_LINGER_MS = 100;
/**
 * How long a finished attempt's record waits on PostgreSQL for the next claim
 * (any client's) to carry it (store.recordAndClaim) before it is written
 * alone: at a thin flow of events each delivery then costs one round trip,
 * not two (D-78). Its claim holds the delivery meanwhile; a node that dies in
 * this window sends it again once the claim runs out, as one that dies
 * mid-attempt. A listing may show a delivery the receiver has as pending for
 * this long.
 */
export const RECORD_LINGER_MS = 25;
/**
 * How far apart a client's claims start on PostgreSQL when the last one took
 * all that was due (fewer than it could take): the next waits until this
 * long after it started, so the events a busy flow makes meanwhile go in one
 * claim instead of one claim each (D-82). An event after a quiet spell is
 * claimed at once, and a full claim is followed at once (a backlog is not
 * held back). The cost: a delivery in a busy flow may start up to this much
 * later. As long as RECORD_LINGER_MS, so the records of a claim's attempts
 * still meet the next claim.
 */
export const CLAIM_GAP_MS = RECORD_LINGER_MS;
/** The longest a receiver's `Retry-After` holds a delivery back. */
const RETRY_AFTER_MAX_MS = 86_400_000;
/**
 * The longest a listener copy's attempt waits for an answer. `webhook listen
 * --forward-to` answers only after the app behind it did, so it gives up on
 * the app sooner (FORWARD_TIMEOUT_MS, 4 s, cli/webhook-listen.ts) and answers
 * 502 in time; a dead listener holds a copy slot no longer than this.
 */
export const LISTENER_TIMEOUT_MS = 5000;

/**
 * Webhook delivery from the event log (core/events/event-log.ts, D-69). The row of
 * each event a subscribed, active configuration wanted is its delivery (the
 * event's id is the `webhook-id` of every attempt), written with the change
 * before anything is sent; the dispatcher posts it with fresh
 * timestamp and signatures per attempt, records every attempt, and retries
 * non-2xx answers and timeouts on the schedule until about a day has passed.
 *
 * Several deliveries of a client are in flight at once over keep-alive
 * connections, started in the order they fell due, so a receiver sees them
 * in about event order but not strictly. Fairness: a client's window grows
 * by one per delivered attempt and falls to one at a failure (a dead
 * receiver holds one slot); deliveries beyond each client's first, and
 * retries, take at most half the slots each; clients with nothing in flight
 * are served first.
 *
 * Each attempt is made under a claim the store gives in the statement that
 * picks the delivery (claimEntregas) and clears with its outcome, so a due
 * delivery is attempted once per due time, whatever reads overlap; only a
 * node that dies mid-attempt leaves its claim to run out, and the delivery
 * is then sent again (at least once). A stop abandons the attempts in
 * flight and gives their claims back: they stay due, for the next start or
 * another node. Several nodes: each client's outbox is also a stream lease
 * (core/nodes/leases.ts), held by one node while it has that client's deliveries
 * in hand and given back LEASE_LINGER_MS after it has none, so one node serves a client's
 * window and fairness at a time.
 *
 * Webhook listeners (listeners.ts) get copies of their client's events from
 * the log: each listener has a cursor the store moves in the statement that
 * reads past it, so whichever node reads a batch sends it, once
 * (listener-copies.ts).
 *
 * Wake-ups: this node's events wake the dispatcher at once (on PostgreSQL,
 * no sooner than CLAIM_GAP_MS after its client's last claim when that one
 * took all that was due); another node's events are claimed by that node,
 * or, when this node holds the client's stream, signalled here
 * (WEBHOOK_CHANNEL); a retry wakes it when due. An idle dispatcher reads the
 * log's pending deliveries and the listeners only every pollMs (the safety
 * look, 5 s), which bounds a lost signal and finds what a stopped or dead
 * node left due, timing a wake-up for the earliest of it.
 */
export class WebhookDispatcher implements WebhookControl {
  private readonly runner: KeyedRunner<number>;
  private readonly agents: ReceiverAgents;
  /** Each cached configuration's URL, parsed once (the cache keeps a configuration's object while it is fresh). */
  private readonly urls = new WeakMap<WebhookConfig, URL>();
  /** The listener copies' own pool (their hosts are vetted by the listener rule); swept with the other. */
  private readonly copyAgents: ReceiverAgents;
  private readonly queues = new Map<number, ClientQueue>();
  private readonly half: number;
  private retrying = 0;
  /** Slots taken beyond a client's first delivery. */
  private extra = 0;
  /** When the log's pending deliveries were last looked up, for every client (any node's events). */
  private loadedAt = -Infinity;
  /** Live listeners as last read, and when; news for them from this node's bus. */
  private escuchas: EscuchaRow[] = [];
  private escuchasAt = -Infinity;
  private copiesDue = true;
  /** Copies were taken with a view of the listeners not read again: once it is stale, it is read and the copies taken again. */
  private escuchasRecheck = false;
  /** When (ticks) this node last made an event or heard of another's: a beat's news older than it does not spare a look. */
  private eventAt = Number.NEGATIVE_INFINITY;
  /** Configurations for a second at most, dropped on change by any node: what an event is checked against, and each attempt's URL and secret. */
  private readonly configs: WebhookConfigCache;
  /** Outcomes written together, many deliveries per statement, most with the next claim. */
  private readonly records: AttemptBatch;
  private stopping = false;
  /** Attempts in flight, by delivery id: a stop cuts them. */
  private readonly attempts = new Map<string, AttemptDeadline>();
  private claims = 0;
  private unsubscribe: Array<() => void> = [];
  private readonly copies: ListenerCopies;
  /** CLAIM_GAP_MS where statements are round trips (PostgreSQL); 0 on SQLite, whose claims cost no wait. */
  private readonly claimGapMs: number;

  constructor(
    private readonly core: Pick<Core, 'store' | 'clock' | 'bus' | 'config' | 'random' | 'signals'>,
    private readonly node: NodePresence,
    private readonly opts: DispatcherOptions,
  ) {
    this.runner = new KeyedRunner((safety) => this.look(safety), opts.onError, opts.pollMs);
    const ticks = () => core.clock.ticks();
    const timing = { revetMs: opts.revetMs, idleMs: opts.agentIdleMs };
    this.agents = new ReceiverAgents((url) => vetWebhookHost(url, core.config.allowPrivateUrls), ticks, timing);
    this.copyAgents = new ReceiverAgents(vetListenerHost(core.config.allowPrivateUrls), ticks, timing);
    this.copies = new ListenerCopies(core, this.copyAgents, {
      concurrency: opts.listenerConcurrency,
      timeoutMs: Math.min(opts.timeoutMs, LISTENER_TIMEOUT_MS),
      retryMs: opts.listenerRetryMs,
      recheckMs: opts.listenerRecheckMs,
      userAgent: opts.userAgent,
      onError: opts.onError,
    });
    this.half = Math.max(1, Math.floor(opts.concurrency / 2));
    this.configs = new WebhookConfigCache((id) => core.store.getWebhook(id), ticks);
    // Only where a statement is a round trip over the network (PostgreSQL); SQLite's records are written at once, as before.
    this.records = new AttemptBatch((list) => core.store.recordAttempts(list), core.store.caps.shared ? RECORD_LINGER_MS : 0);
    this.claimGapMs = core.store.caps.shared ? CLAIM_GAP_MS : 0;
  }

  start(): void {
    for (const kind of JOURNALED_EVENTS) {
      // Events are logged with each change; the bus only says "look at this client now".
      this.unsubscribe.push(this.core.bus.subscribe(kind, (e) => this.eventMade(e.cliente_id, kind)));
    }
    this.unsubscribe.push(this.configs.listen(this.core.signals));
    // Signals lost (a listening connection dropped): the pending deliveries are read again.
    this.unsubscribe.push(this.core.signals.subscribe(WEBHOOK_CHANNEL, { message: (p) => this.signalled(Number(p)), gap: () => this.poke() }));
    this.runner.start();
  }

  /** A client's configuration changed on another thread of this process (the SQLite background thread's handle says so); null: maybe any. */
  configChanged(clienteId: number | null): void {
    if (clienteId === null) this.configs.clear();
    else this.configs.drop(clienteId);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const u of this.unsubscribe) u();
    // Abandoned, not waited for (a receiver may trickle its answer up to the timeout): each gives its claim back.
    for (const d of this.attempts.values()) d.abort('stop');
    // Records waiting for a claim are written now: no claim comes after a stop.
    this.records.drain();
    await this.runner.stop();
    await this.records.idle();
    await this.copies.stop();
    await this.agents.close();
  }

  /**
   * One look now, the log read first, and the attempts it started, ended:
   * tests drive the clock and step instead of waiting for the poll.
   */
  async step(): Promise<void> {
    this.loadedAt = -Infinity;
    this.escuchasAt = -Infinity;
    // What is due now is claimed now, whenever the last claim was.
    for (const q of this.queues.values()) q.claimedAt = -Infinity;
    await this.runner.step();
    // The attempts' records too (they free no slot, so the runner does not wait for them).
    this.records.flush();
    await this.records.idle();
  }

  /** An event of this node: its client's deliveries are claimed at once when its configuration wants the kind; listeners look too. */
  eventMade(clienteId: number, kind: string): void {
    this.copiesDue = true;
    this.eventAt = this.core.clock.ticks();
    this.configs.get(clienteId).then(
      (cfg) => {
        if (cfg?.activo && subscribed(cfg, kind)) this.poke(clienteId);
        // A listener may want it: one known, or one added since the listeners were last read (no safety look waited for).
        else if (this.escuchas.length > 0 || this.core.clock.ticks() - this.escuchasAt >= this.opts.listenerRecheckMs) this.runner.poke();
      },
      (err: unknown) => this.opts.onError(err),
    );
  }

  /** Another node has deliveries of the client it could not claim: claimed now if this node holds the client's stream. */
  private signalled(clienteId: number): void {
    this.eventAt = this.core.clock.ticks();
    const q = this.queues.get(clienteId);
    // Not held here (this node's own publish, or a stream given back meanwhile): the publisher asks again itself.
    if (!q?.leased || q.lapses !== this.node.lapses) return;
    q.hint(this.core.clock.now());
    this.runner.poke();
  }

  /** A listener removed through this node: nothing more goes to it from here (other nodes see it within a second). */
  forgetListener(id: string): void {
    this.copies.forget(id);
  }

  /** Without a client: the log may have news for anyone. With one: that client's deliveries changed (an event, a redelivery). */
  poke(clienteId?: number): void {
    if (clienteId === undefined) {
      this.loadedAt = -Infinity;
      this.copiesDue = true;
    } else this.queue(clienteId).hint(0);
    this.runner.poke();
  }

  /** The listeners that want an event: those subscribed to its kind, and all of them for a test event. */
  static listenersOf(ev: JournalEvent, escuchas: EscuchaRow[]): EscuchaRow[] {
    return escuchas.filter((e) => ev.evento === TEST_EVENT || subscribed(e, ev.evento));
  }

  /**
   * A signed test event, whatever the subscriptions: a delivery when a
   * configuration exists (active or not), and copies to the live listeners
   * (they read it from the log). Its id; null when there is neither.
   */
  async enqueueTest(clienteId: number, data: Record<string, unknown>): Promise<string | null> {
    const now = this.core.clock.now();
    const cfg = await this.core.store.getWebhook(clienteId);
    if (!cfg && (await this.core.store.liveEscuchas(clienteId, now)).length === 0) return null;
    const ev: JournalEvent = { evento: TEST_EVENT, cliente_id: clienteId, celular_id: null, data, fecha: now };
    const id = await this.core.store.logTestEvent(ev, cfg !== null);
    this.escuchasAt = -Infinity;
    this.copiesDue = true;
    if (cfg) this.poke(clienteId);
    else this.runner.poke();
    return id;
  }

  private queue(clienteId: number): ClientQueue {
    let q = this.queues.get(clienteId);
    if (!q) this.queues.set(clienteId, (q = new ClientQueue(clienteId)));
    return q;
  }

  /**
   * The listeners' copies: each live listener's events past its cursor, read
   * and the cursor moved in one statement, then posted by this node (from
   * memory, best effort). Looked at when this node made events (other
   * nodes read their own), and at every safety look. `read`: the listeners as this look read them (null: not read).
   */
  private async tailListeners(t: number, read: EscuchaRow[] | null): Promise<void> {
    const now = this.core.clock.now();
    // A listener added since (on any node) is in the next read: this node's events then are copied to it within listenerRecheckMs.
    this.escuchasRecheck = read === null && t - this.escuchasAt < this.opts.listenerRecheckMs;
    if (read) {
      this.escuchas = read;
      this.escuchasAt = t;
    } else if (!this.escuchasRecheck) {
      this.escuchas = await this.core.store.allLiveEscuchas(now);
      this.escuchasAt = t;
    }
    for (const escucha of this.escuchas) {
      const evs: LoggedEvent[] = await this.core.store.takeEscuchaEvents(escucha.id, COPY_BACKLOG, now);
      const wanted = evs.filter((ev) => WebhookDispatcher.listenersOf(ev, [escucha]).length > 0);
      this.copies.add(wanted.map((ev) => ({ escucha, id: ev.id, evento: ev.evento, body: eventBody(ev) })));
    }
  }

  private async look(safety = false): Promise<number> {
    const { store } = this.core;
    const t = this.core.clock.ticks();
    let read: EscuchaRow[] | null = null;
    // A safety look whose read a beat sent since this node's last event found empty (no pending delivery, no live
    // listener, none known here) skips it (D-197); the listeners are read again with this node's next event, as ever.
    const known = safety && this.escuchas.length === 0 && this.node.quiet('outbox', this.eventAt) && this.node.quiet('listeners', this.eventAt);
    if (known && t - this.loadedAt >= this.opts.pollMs) this.loadedAt = t;
    else if (t - this.loadedAt >= this.opts.pollMs) {
      // After a start (or a crash), and every pollMs: every client with pending deliveries, whichever node made them
      // (a node that stopped or died leaves due deliveries no event of this node hints), each woken for when it is due.
      // The listeners, when due for a read, come in the same one (D-191).
      this.loadedAt = t;
      const look = await store.webhookLook(this.core.clock.now(), t - this.escuchasAt >= this.opts.listenerRecheckMs);
      for (const r of look.queues) this.queue(r.cliente_id).hint(r.next_at);
      read = look.escuchas;
      this.copiesDue = true;
    }
    this.agents.sweep();
    this.copyAgents.sweep();
    if (this.escuchasRecheck && t - this.escuchasAt >= this.opts.listenerRecheckMs) this.copiesDue = true;
    if (this.copiesDue) {
      // Cleared first: an event during the read sets it again.
      this.copiesDue = false;
      await this.tailListeners(t, read);
    }
    const now = this.core.clock.now();
    // Rounds of one start per client, those with fewest in flight first: an idle client never waits behind another's extra deliveries.
    const order = [...this.queues.values()].filter((q) => q.unreadAt <= now || this.retrySlotFor(q)).sort((a, b) => a.inFlight.size - b.inFlight.size);
    try {
      for (let more = true; more;) {
        more = false;
        for (const q of order) if (await this.startOne(q, now)) more = true;
      }
    } finally {
      await this.giveBack(order, now);
    }
    // Wake for the next due time nobody will poke about; completions and new events poke.
    let next = this.escuchasRecheck ? now + this.escuchasAt + this.opts.listenerRecheckMs - this.core.clock.ticks() : Infinity;
    for (const [id, q] of this.queues) {
      // Nothing in hand for LEASE_LINGER_MS (records on their way to the store keep their claims, D-192): the stream
      // goes back, so another node can post what it logged meanwhile (a retry due later is read by whichever node takes
      // the stream then, or by this node when its hint falls due). The linger spares a live flow of events a take and a
      // give per event; other nodes' events meanwhile are signalled here (WEBHOOK_CHANNEL), as while it is busy.
      if (q.leased && q.ready.length === 0 && q.inFlight.size === 0) {
        q.emptySince ??= t;
        const left = q.emptySince + LEASE_LINGER_MS - this.core.clock.ticks();
        if (left <= 0) {
          await this.node.give(stream.webhooks(id), 0);
          q.leased = false;
          q.emptySince = null;
        } else next = Math.min(next, now + left);
      } else q.emptySince = null;
      // Forgotten only once given.
      if (q.idle && !q.leased) this.queues.delete(id);
      else if (q.unreadAt > now) next = Math.min(next, q.unreadAt);
      // Hinted while another node holds it: asked again when this node's wait ends.
      else if (!q.leased && q.heldUntil > now) next = Math.min(next, q.hintAt <= now && this.tellLeft(q) > 0 ? now + this.tellLeft(q) : q.heldUntil);
      // Held for its claim gap: woken when the gap ends (nothing else may poke).
      else if (this.gapLeft(q) > 0) next = Math.min(next, now + this.gapLeft(q));
      // Due, but this node could not start it (not fresh): asked again once a beat may have come, not at the safety look.
      else if (!this.node.fresh()) next = Math.min(next, now + this.opts.heldRetryMs);
    }
    return Math.max(1, Math.min(this.opts.pollMs, next - now));
  }

  private async startOne(q: ClientQueue, now: number): Promise<boolean> {
    // A node that cannot tell the store it is alive starts nothing: its streams may soon be another's.
    if (this.stopping || !this.node.fresh()) return false;
    const extra = q.inFlight.size > 0;
    if (
      this.runner.inFlight >= this.opts.concurrency ||
      q.inFlight.size >= Math.min(q.window, this.opts.clientConcurrency) ||
      (extra && this.extra >= this.half)
    )
      return false;
    // Claimed before a silence of this node: the client's stream may be another's now, so take it again before the next claim
    // (what is claimed is this node's to send whoever holds the stream).
    if (q.lapses !== this.node.lapses) q.readAt = 0;
    if (q.ready.length === 0 && !(await this.read(q, now))) return false;
    if (this.stopping) return false;
    // Retries (receivers that already failed) may take only half the slots, so dead receivers cannot starve healthy clients.
    const i = this.retrying < this.half ? 0 : q.ready.findIndex((e) => e.intentos === 0);
    if (i < 0) return false;
    const e = q.ready.splice(i, 1)[0]!;
    const retry = e.intentos > 0;
    const claim = q.claim;
    q.inFlight.add(e.id);
    if (extra) this.extra += 1;
    if (retry) this.retrying += 1;
    this.runner.run(q.clienteId, () =>
      this.deliver(q, e, claim).finally(() => {
        q.inFlight.delete(e.id);
        if (extra) this.extra -= 1;
        if (retry) this.retrying -= 1;
      }),
    );
    return true;
  }

  /** Due retries wait unclaimed for a retry's slot, and one is free now. */
  private retrySlotFor(q: ClientQueue): boolean {
    return q.retriesWait && this.retrying < this.half;
  }

  /** Claimed deliveries a look did not start (the slots filled): given back, and claimed again at the next look. */
  private async giveBack(queues: ClientQueue[], now: number): Promise<void> {
    for (const q of queues) {
      if (q.ready.length === 0) continue;
      const ids = q.ready.map((e) => e.id);
      q.ready = [];
      q.hint(now);
      await this.core.store.releaseEntregas(ids, q.claim);
    }
  }

  /** Claims the client's next due deliveries into `ready`, under its stream lease; false when none is due (or another node holds it). */
  private async read(q: ClientQueue, now: number): Promise<boolean> {
    if (q.unreadAt > now && !this.retrySlotFor(q)) return false;
    // Too soon after a claim that took all that was due then: what came since waits for the gap's end (the look wakes for it).
    if (this.gapLeft(q) > 0 && !this.retrySlotFor(q)) return false;
    // Held since a read with no silence of this node in between: still ours (a lapse is what lets another node take it).
    if (q.leased && q.lapses === this.node.lapses) return this.claimDue(q);
    // Another node held it a moment ago: each event of this node asking again would cost a take for nothing; the holder is told.
    if (!q.leased && q.heldUntil > now) {
      this.tellHolder(q, now);
      return false;
    }
    const lease = await this.node.takeOne(stream.webhooks(q.clienteId));
    q.leased = lease.taken;
    q.lapses = this.node.lapses;
    if (!lease.taken) {
      // A live node holds it (no rest to wait out): it claims what is due once told. This node asks again after the rest, or soon.
      q.heldLive = lease.restMs === 0;
      this.tellHolder(q, now);
      q.readAt = q.heldUntil = now + (lease.restMs || this.opts.heldRetryMs);
      return false;
    }
    return this.claimDue(q);
  }

  /**
   * News of this node for a client another live node's stream holds (an
   * event, a redelivery, a retry it timed): the holder is signalled to claim
   * it, so it waits for no look. The news is the holder's then; a retry of
   * the take (after heldRetryMs) carries none, so it signals nothing.
   */
  private tellHolder(q: ClientQueue, now: number): void {
    if (q.hintAt > now) return;
    // Told less than a claim gap ago: the holder claims no sooner than that after a claim anyway (D-82), so what came
    // since is told when the gap ends (the look wakes for it): one signal for a flow of events, not one each (D-152).
    if (q.heldLive && this.tellLeft(q) > 0) return;
    q.hintAt = Infinity;
    if (!q.heldLive) return;
    q.toldAt = this.core.clock.ticks();
    void this.core.signals.publish(WEBHOOK_CHANNEL, String(q.clienteId));
  }

  /** How long until this node may signal the client's holder again (CLAIM_GAP_MS after its last signal; 0 on SQLite). */
  private tellLeft(q: ClientQueue): number {
    return Math.max(0, q.toldAt + this.claimGapMs - this.core.clock.ticks());
  }

  /** How long the client's next claim waits for its gap (CLAIM_GAP_MS); 0 when it may go now (the last claim was full, or long ago). */
  private gapLeft(q: ClientQueue): number {
    if (q.readAt !== Infinity) return 0;
    return Math.max(0, q.claimedAt + this.claimGapMs - this.core.clock.ticks());
  }

  /**
   * The claim itself, the lease held: as many due deliveries as the client
   * may start now (so few wait in `ready`), first attempts only while the
   * retries' slots are full.
   */
  private async claimDue(q: ClientQueue): Promise<boolean> {
    // The clock read here, not at the look's start: a hint that came while the look awaited (a take, another client's
    // claim) is cleared below, and its delivery, logged after the look began, is due by now (D-152).
    const now = this.core.clock.now();
    // Cleared before the claim: whatever changes the outbox meanwhile hints again. A hint due later (a retry timed
    // while a full claim had the client read again) stays: this claim cannot take it, and no safety look soon finds it.
    const hinted = q.hintAt;
    q.hintAt = hinted > now ? hinted : Infinity;
    q.claimedAt = this.core.clock.ticks();
    try {
      const room = Math.min(q.window, this.opts.clientConcurrency) - q.inFlight.size;
      const extras = this.half - this.extra + (q.inFlight.size === 0 ? 1 : 0);
      const limit = Math.max(1, Math.min(room, this.opts.concurrency - this.runner.inFlight, extras));
      const firstOnly = this.retrying >= this.half;
      const claim = { id: `${this.node.info.id}.${++this.claims}`, until: now + this.opts.timeoutMs + CLAIM_MARGIN_MS, firstOnly };
      const { store } = this.core;
      // The records waiting for a claim ride on this one (recordAndClaim): one round trip for both.
      q.ready = await this.records.carry(async (list) =>
        list.length > 0
          ? store.recordAndClaim(list, { clienteId: q.clienteId, now, limit, claim })
          : { recorded: [], claimed: await store.claimEntregas(q.clienteId, now, limit, claim) },
      );
      q.claim = claim.id;
      const full = q.ready.length === limit;
      q.retriesWait = firstOnly && !full;
      // Not full: nothing else is due now. What falls due later is hinted (a retry this node schedules, an event,
      // a redelivery, another node's signal) or found by the safety look every pollMs (a dead holder's claim that
      // ran out): no read of the next due time after every claim.
      q.readAt = full ? now : Infinity;
    } catch (err) {
      q.hint(hinted);
      throw err;
    }
    return q.ready.length > 0;
  }

  /** The configuration's URL, parsed at its first attempt; throws as `new URL` does. */
  private urlOf(cfg: WebhookConfig): URL {
    let url = this.urls.get(cfg);
    if (!url) this.urls.set(cfg, (url = new URL(cfg.url)));
    return url;
  }

  private async deliver(q: ClientQueue, e: EntregaRow, claim: string): Promise<void> {
    // First, before anything is awaited: a stop from now on cuts this attempt.
    const deadline = new AttemptDeadline(this.opts.timeoutMs);
    this.attempts.set(e.id, deadline);
    try {
      await this.attempt(q, e, claim, deadline);
    } finally {
      deadline.done();
      this.attempts.delete(e.id);
    }
  }

  private async attempt(q: ClientQueue, e: EntregaRow, claim: string, deadline: AttemptDeadline): Promise<void> {
    const { core } = this;
    const cfg = await this.configs.get(e.cliente_id);
    let status: number | null = null;
    let error: string | null = null;
    let retryAfterMs = 0;
    const t0 = core.clock.ticks();
    /** Records the attempt and clears its claim; `retryInMs` (from the same instant as the attempt's time) keeps it pending. */
    const write = (estado: 'pendiente' | 'entregado' | 'fallido', retryInMs?: number): void => {
      q.settled(estado === 'entregado', this.opts.clientConcurrency);
      const now = core.clock.now();
      const next = retryInMs === undefined ? undefined : now + retryInMs;
      const duracion_ms = Math.round(core.clock.ticks() - t0);
      // False only when the claim ran out (this node was stalled past it) and another holder has the delivery: it records its own.
      const rec = {
        id: e.id,
        claimId: claim,
        attempt: { status, duracion_ms, error },
        outcome: { estado, proximo_intento_at: next },
        now,
        nodo: this.node.info.id,
      };
      // A retry is hinted now, before this attempt's end asks for a look: that look times a wake for it and keeps the
      // client's queue (its record may land after the queue would otherwise be idle and forgotten). Early is harmless:
      // the delivery stays claimed, so not due to anyone, until its record is in.
      if (next !== undefined) q.hint(next);
      // The slot is free once the answer is in: the record rides on the next claim (D-192), which this attempt's end
      // asks for, so a client with more due pays one round trip per batch of deliveries, not a record's and a claim's.
      void this.records.record(rec).then((recorded) => {
        if (!recorded) return;
        core.bus.publish('webhook.attempt', {
          cliente_id: e.cliente_id,
          evento: e.evento,
          estado,
          status,
          error,
          duracion_ms,
          intentos: e.intentos + 1,
          edad_ms: Math.max(0, now - e.created_at),
        });
      }, this.opts.onError);
    };
    if (!cfg) {
      error = 'the webhook configuration was removed';
      return write('fallido');
    }
    if (!cfg.activo && e.evento !== TEST_EVENT) {
      error = 'the webhook configuration is not active';
      return write('fallido');
    }
    try {
      const url = this.urlOf(cfg);
      // Vetted again every `revetMs` or when the configuration changes, the connection pinned to what was vetted.
      const agent: Agent = this.agents.ready(e.cliente_id, url, cfg.updated_at) ?? (await deadline.race(this.agents.get(e.cliente_id, url, cfg.updated_at)));
      const ts = Math.floor(core.clock.now() / 1000);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': this.opts.userAgent,
        'x-service-event': e.evento,
        'webhook-id': e.id,
        'webhook-timestamp': String(ts),
        ...(cfg.secret ? sign(cfg.secret, e.id, ts, e.body) : {}),
      };
      const answer: PostAnswer = { status: null, retryAfter: undefined };
      try {
        // The whole answer within the deadline: a receiver that trickles it is cut there.
        await post(agent, url, headers, e.body, deadline, 128 * 1024, answer);
      } catch (err) {
        if (answer.status === null) this.agents.drop(e.cliente_id, url, agent);
        throw err;
      } finally {
        status = answer.status;
        // A receiver that says when to come back (429, 503) is not retried sooner than that.
        if (status !== null) retryAfterMs = Math.min(parseRetryAfter(answer.retryAfter, core.clock.now()) ?? 0, RETRY_AFTER_MAX_MS);
      }
      if (status === null || status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (err) {
      if (deadline.cut === 'stop') {
        // Abandoned by a stop: not an attempt of the schedule. Due again at once, here after a restart or on another node.
        await core.store.releaseEntregas([e.id], claim);
        return;
      }
      error = deadline.cut === 'timeout' ? `timeout after ${this.opts.timeoutMs / 1000} s` : (err as Error).message;
    }
    if (error === null) return write('entregado');
    if (status === 410) {
      // Gone: the receiver asks us to stop; the configuration is turned off.
      await core.store.deactivateWebhook(e.cliente_id, core.clock.now());
      await announceWebhookConfig(core.signals, e.cliente_id);
      return write('fallido');
    }
    const delay = backoffMs(webhookBackoff(this.opts.retryBaseMs), e.intentos + 1, core.random);
    if (delay === null) return write('fallido');
    return write('pendiente', Math.max(delay, retryAfterMs));
  }
}
