import { Worker } from 'node:worker_threads';
import type { Signals } from '../../core/ports/signals.js';
import { WEBHOOK_CONFIG_CHANNEL } from '../../webhooks/config-cache.js';
import type { Clock } from '../../core/time/clock.js';
import type { BusEventName, BusEvents, EventBus } from '../../core/events/events.js';
import { freeDeadHolder } from '../../store/write-gate.js';
import { JOURNALED_EVENTS, type WebhookControl } from '../../webhooks/dispatcher.js';
import type { GatewayCallSink } from '../metrics/gateway.js';
import type { BackgroundSettings, FromBackground, LogLevel, ToBackground } from './protocol.js';

/**
 * The request thread's side of the background thread (thread.ts): the
 * queue worker, the receipts of its sends and the webhook dispatcher run
 * there, so that under any load they take no CPU from accepting requests
 * (docs/decisions.md D-11).
 *
 * What the request thread does that the background must know (a message
 * queued on a line, new journal events, a redelivery, a listener removed)
 * is sent once per turn of the loop, however many requests made it. What
 * the background publishes comes back the same way and is published on
 * this thread's bus, for metrics and logs.
 *
 * Supervised: a thread that dies is started again (its sends in flight are
 * freed first, as at a restart of `serve`), after 1 s, doubling to 30 s.
 */
export interface BackgroundHooks {
  bus: EventBus;
  /** The request thread's signals: configuration changes made there reach the thread's dispatcher. */
  signals: Signals;
  metrics: GatewayCallSink;
  log: (level: LogLevel, obj: Record<string, unknown>, msg: string) => void;
  /** Frees the queue claims of a thread that died (store.releaseLeases). */
  releaseClaims: () => Promise<unknown>;
}

/** The compiled thread, from the sources (tests) and from dist alike: both sit two levels under the package root. */
const ENTRY = new URL('../../../dist/server/background/thread.js', import.meta.url);

/** How a dead thread is started again (server/config-knobs.ts): after `restartMs`, doubling to 30 times it; a thread that ran `healthyMs` before dying starts again after `restartMs`. */
export interface RestartTiming {
  restartMs: number;
  healthyMs: number;
  clock: Clock;
}

/** One event of the thread's on this thread's bus; generic, so the name and its data stay paired. */
function republish<K extends BusEventName>(bus: EventBus, [name, data]: [K, BusEvents[K]]): void {
  bus.publish(name, data);
}

export class BackgroundThread implements WebhookControl {
  private worker: Worker | undefined;
  private wake = { queued: new Set<number>(), journal: false, clients: new Set<number>(), events: new Set<string>(), forget: [] as string[] };
  private scheduled = false;
  private readonly replies = new Map<number, { resolve: (id: string | null) => void; reject: (err: Error) => void }>();
  private rid = 0;
  private stopping = false;
  private restartMs: number;
  private restartTimer: NodeJS.Timeout | undefined;
  /** True while this thread republishes the background's events: they are not news for the background. */
  private republishing = false;
  private readonly unsubscribe: Array<() => void> = [];
  /** Restarts so far (tests and logs). */
  restarts = 0;

  constructor(
    private readonly settings: BackgroundSettings,
    private readonly hooks: BackgroundHooks,
    private readonly timing: RestartTiming,
  ) {
    this.restartMs = timing.restartMs;
  }

  /** Starts the thread; resolves once it works, rejects when it cannot start. */
  async start(): Promise<void> {
    for (const kind of JOURNALED_EVENTS) {
      // Events logged on this thread (accepts, direct sends, gateway callbacks, linking): the dispatcher looks at that client.
      this.unsubscribe.push(this.hooks.bus.subscribe(kind, (e) => this.republishing || this.eventMade(e.cliente_id, kind)));
    }
    // Posted at once, not coalesced: a test event asked for right after the change must find the thread's copy gone.
    this.unsubscribe.push(
      this.hooks.signals.subscribe(WEBHOOK_CONFIG_CHANNEL, {
        message: (p) => this.worker?.postMessage({ t: 'webhookConfig', clienteId: Number(p) } satisfies ToBackground),
        gap: () => this.worker?.postMessage({ t: 'webhookConfig', clienteId: null } satisfies ToBackground),
      }),
    );
    await this.spawn(false);
  }

  /** A message was queued on a line. */
  queued(celularId: number): void {
    this.wake.queued.add(celularId);
    this.schedule();
  }

  poke(clienteId?: number): void {
    if (clienteId === undefined) this.wake.journal = true;
    else this.wake.clients.add(clienteId);
    this.schedule();
  }

  /** An event logged on this thread, for the dispatcher's look at its client (coalesced per client and kind). */
  eventMade(clienteId: number, kind: string): void {
    this.wake.events.add(`${clienteId} ${kind}`);
    this.schedule();
  }

  forgetListener(id: string): void {
    this.wake.forget.push(id);
    this.schedule();
  }

  enqueueTest(clienteId: number, data: Record<string, unknown>): Promise<string | null> {
    const w = this.worker;
    if (!w) return Promise.reject(new Error('webhook delivery is restarting: try again in a few seconds'));
    const rid = ++this.rid;
    return new Promise<string | null>((resolve, reject) => {
      this.replies.set(rid, { resolve, reject });
      w.postMessage({ t: 'test', rid, clienteId, data } satisfies ToBackground);
    });
  }

  /** The address gateways call back on, known once the API listens. */
  setCallbackUrl(url: string): void {
    this.settings.http.callbackUrl = url;
    this.worker?.postMessage({ t: 'callbackUrl', url } satisfies ToBackground);
  }

  /** Stops the thread: its sends and deliveries in flight are recorded first. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    for (const u of this.unsubscribe) u();
    const w = this.worker;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.postMessage({ t: 'stop' } satisfies ToBackground);
    await exited;
  }

  /** Ends the thread at once, as a crash would (tests of the supervision): it is started again as after any death. */
  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const w = this.wake;
      if (!this.worker) return; // a restarting thread looks at everything when it starts
      this.wake = { queued: new Set(), journal: false, clients: new Set(), events: new Set(), forget: [] };
      this.worker.postMessage({
        t: 'wake',
        queued: [...w.queued],
        journal: w.journal,
        clients: [...w.clients],
        events: [...w.events],
        forget: w.forget,
      } satisfies ToBackground);
    });
  }

  private spawn(resume: boolean): Promise<void> {
    const worker = new Worker(ENTRY, { workerData: { ...this.settings, resume } });
    const startedAt = this.timing.clock.ticks();
    let ready = false;
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromBackground) => {
        switch (m.t) {
          case 'ready':
            ready = true;
            this.worker = worker;
            resolve();
            this.schedule();
            return;
          case 'failed':
            reject(new Error(`the background thread could not start: ${m.message}`));
            return;
          case 'out':
            this.republishing = true;
            try {
              for (const record of m.events) republish(this.hooks.bus, record);
            } finally {
              this.republishing = false;
            }
            for (const [operation, outcome, seconds] of m.calls) this.hooks.metrics.gatewayCall(operation, outcome, seconds);
            for (const l of m.logs) this.hooks.log(l.level, l.obj, l.msg);
            return;
          case 'reply': {
            const r = this.replies.get(m.rid);
            this.replies.delete(m.rid);
            if (m.error !== undefined) r?.reject(new Error(m.error));
            else r?.resolve(m.id ?? null);
            return;
          }
        }
      });
      worker.on('error', (err) => {
        this.hooks.log('error', { err }, 'the background thread failed');
        if (!ready) reject(err);
      });
      worker.on('exit', (code) => {
        if (this.worker === worker) this.worker = undefined;
        freeDeadHolder(this.settings.gate);
        for (const r of this.replies.values()) r.reject(new Error('webhook delivery restarted: try again'));
        this.replies.clear();
        if (!ready) return reject(new Error(`the background thread exited (code ${code}) before it started`));
        if (this.stopping) return;
        if (this.timing.clock.ticks() - startedAt >= this.timing.healthyMs) this.restartMs = this.timing.restartMs;
        const delay = this.nextRestartDelay();
        this.hooks.log('error', { code, restartInMs: delay }, 'the background thread (queue, receipts, webhooks) stopped: starting it again');
        this.restartTimer = setTimeout(() => void this.restart(), delay);
      });
    });
  }

  private async restart(): Promise<void> {
    if (this.stopping) return;
    try {
      // Sends cut by the thread's death are taken again, with the same msg_id, as after a crash of serve.
      await this.hooks.releaseClaims();
      await this.spawn(true);
      this.restarts += 1;
      this.hooks.log('warn', { restarts: this.restarts }, 'the background thread is working again');
    } catch (err) {
      this.hooks.log('error', { err }, 'the background thread could not start again');
      const delay = this.nextRestartDelay();
      if (!this.stopping) this.restartTimer = setTimeout(() => void this.restart(), delay);
    }
  }

  /** The wait before this restart; the next one waits twice as long, up to 30 times `restartMs`. */
  private nextRestartDelay(): number {
    const delay = this.restartMs;
    this.restartMs = Math.min(30 * this.timing.restartMs, this.restartMs * 2);
    return delay;
  }
}
