import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { iso } from '../core/clock.js';
import type { Core } from '../core/context.js';
import type { BusEventName } from '../core/events.js';
import type { EntregaRow, JournalEvent, WebhookConfig } from '../core/ports.js';
import { KeyedRunner } from '../core/keyed-runner.js';
import { pinnedAgent } from '../core/media-url.js';
import { subscribed, vetWebhookHost } from './config.js';
import { retryDelayMs, sign } from './sign.js';

export interface DispatcherOptions {
  /** First retry delay; the schedule multiplies it (DESIGN §7, `--webhook-retry-ms`). */
  retryBaseMs: number;
  timeoutMs: number;
  /** Deliveries in flight at once, across clients (one per client at a time). */
  concurrency: number;
  pollMs: number;
  userAgent: string;
  onError: (err: unknown) => void;
}

export const TEST_EVENT = 'webhook.test';

/**
 * Webhook delivery through a durable outbox. Each event for a subscribed,
 * active configuration becomes a row (its id is the `webhook-id` of every
 * attempt) before anything is sent; the dispatcher posts it with fresh
 * timestamp and signatures per attempt, records every attempt, and retries
 * non-2xx answers and timeouts on the schedule until about a day has passed.
 * Each client has at most one delivery in flight, taken in event order; a
 * delivery waiting for its retry does not hold back the client's later ones,
 * so order holds except around retries. A slow client never delays another.
 */
export class WebhookDispatcher {
  private readonly runner: KeyedRunner<number>;
  private retrying = 0;
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly core: Core,
    private readonly opts: DispatcherOptions,
  ) {
    this.runner = new KeyedRunner(() => this.look(), opts.onError);
  }

  start(): void {
    for (const kind of ['message.status', 'session.status', 'messages.received'] as const satisfies readonly BusEventName[]) {
      // Events reach the outbox through the journal (written with each change); the bus only says "look now".
      this.unsubscribe.push(this.core.bus.subscribe(kind, () => this.poke()));
    }
    this.runner.start();
  }

  async stop(): Promise<void> {
    for (const u of this.unsubscribe) u();
    await this.runner.stop();
  }

  poke(): void {
    this.runner.poke();
  }

  /** The delivery an event becomes for a configuration, or null when the configuration does not want it. */
  static route(ev: JournalEvent, cfg: WebhookConfig | null): { id: string; body: string } | null {
    if (!cfg) return null;
    if (ev.evento !== TEST_EVENT && (!cfg.activo || !subscribed(cfg, ev.evento))) return null;
    const { cliente_id: _c, ...data } = ev.data;
    const id = `evt_${randomUUID().replace(/-/g, '')}`;
    return { id, body: JSON.stringify({ id, evento: ev.evento, fecha: iso(ev.fecha), cliente_id: ev.cliente_id, celular_id: ev.celular_id, data }) };
  }

  /** Writes a signed test event to the outbox, whatever the subscription; returns its id (null: no configuration). */
  async enqueueTest(clienteId: number, data: Record<string, unknown>): Promise<string | null> {
    const now = this.core.clock.now();
    const out = WebhookDispatcher.route({ evento: TEST_EVENT, cliente_id: clienteId, celular_id: null, data, fecha: now }, await this.core.store.getWebhook(clienteId));
    if (!out) return null;
    await this.core.store.enqueueEntrega({ id: out.id, cliente_id: clienteId, evento: TEST_EVENT, body: out.body }, now);
    this.poke();
    return out.id;
  }

  private async look(): Promise<number> {
    // Journaled events first: each becomes a delivery (or nothing) and leaves the journal in one transaction.
    while ((await this.core.store.moveEventsToOutbox(500, WebhookDispatcher.route, this.core.clock.now())) === 500);
    for (const e of await this.core.store.dueEntregas(this.core.clock.now(), 1000)) {
      if (this.runner.inFlight >= this.opts.concurrency) break;
      if (this.runner.isBusy(e.cliente_id)) continue;
      // Retries (receivers that already failed) may take only half the slots, so dead
      // receivers cannot starve healthy clients.
      const retry = e.intentos > 0;
      if (retry && this.retrying >= Math.floor(this.opts.concurrency / 2)) continue;
      if (retry) this.retrying += 1;
      this.runner.run(e.cliente_id, () =>
        this.deliver(e).finally(() => {
          if (retry) this.retrying -= 1;
        }),
      );
    }
    return this.opts.pollMs;
  }

  private async deliver(e: EntregaRow): Promise<void> {
    const { core } = this;
    const cfg = await core.store.getWebhook(e.cliente_id);
    let status: number | null = null;
    let error: string | null = null;
    let retryAfterMs = 0;
    const t0 = performance.now();
    const write = (estado: 'pendiente' | 'entregado' | 'fallido', next?: number) =>
      core.store.recordAttempt(e.id, { status, duracion_ms: Math.round(performance.now() - t0), error }, { estado, proximo_intento_at: next }, core.clock.now());
    if (!cfg) {
      error = 'the webhook configuration was removed';
      return write('fallido');
    }
    if (!cfg.activo && e.evento !== TEST_EVENT) {
      error = 'the webhook configuration is not active';
      return write('fallido');
    }
    try {
      const url = new URL(cfg.url);
      // Checked again before each attempt (DNS may have changed) and the connection pinned to what was checked.
      const agent = pinnedAgent(url.hostname, await vetWebhookHost(url, core.config.allowPrivateUrls));
      const ts = Math.floor(core.clock.now() / 1000);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': this.opts.userAgent,
        'x-service-event': e.evento,
        'webhook-id': e.id,
        'webhook-timestamp': String(ts),
        ...(cfg.secret ? sign(cfg.secret, e.id, ts, e.body) : {}),
      };
      const res = await request(url, { method: 'POST', headers, body: e.body, dispatcher: agent, headersTimeout: this.opts.timeoutMs, bodyTimeout: this.opts.timeoutMs }).catch(
        (err: unknown) => {
          void agent.destroy().catch(() => {});
          throw err;
        },
      );
      status = res.statusCode;
      // A receiver that says when to come back (429, 503) is not retried sooner than that.
      const header = res.headers['retry-after'];
      const raw = Array.isArray(header) ? header[0] : header;
      if (raw) {
        // Seconds, or an HTTP date (RFC 9110).
        const ms = /^\d+$/.test(raw.trim()) ? Number(raw) * 1000 : Date.parse(raw) - Date.now();
        if (Number.isFinite(ms) && ms > 0) retryAfterMs = Math.min(ms, 86_400_000);
      }
      await res.body.dump().finally(() => void agent.close().catch(() => {}));
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (err) {
      error = (err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' ? `timeout after ${this.opts.timeoutMs / 1000} s` : (err as Error).message;
    }
    if (error === null) return write('entregado');
    if (status === 410) {
      // Gone: the receiver asks us to stop; the configuration is turned off.
      await core.store.deactivateWebhook(e.cliente_id, core.clock.now());
      return write('fallido');
    }
    const delay = retryDelayMs(this.opts.retryBaseMs, e.intentos + 1, core.random);
    if (delay === null) return write('fallido');
    return write('pendiente', core.clock.now() + Math.max(delay, retryAfterMs));
  }
}
