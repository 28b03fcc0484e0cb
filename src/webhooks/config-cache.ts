import type { WebhookConfig } from '../core/ports/model.js';
import type { Signals } from '../core/ports/signals.js';

/** The channel a configuration change is announced on (payload: the client's id). */
export const WEBHOOK_CONFIG_CHANNEL = 'webhook-config';

/** How long a configuration is trusted without a signal: a lost signal delays a change by at most this. */
export const WEBHOOK_CONFIG_TTL_MS = 1_000;
const MAX = 10_000;

/**
 * Clients' webhook configurations as the dispatcher uses them (whether an
 * event wants a look, each attempt's URL and secret), read from the store at
 * most once a second per client instead of once per attempt. A change made
 * through any node drops the entry on every node (webhooks/config.ts
 * publishes it; the SQLite background thread hears it from its handle), and
 * a gap in the signals drops them all.
 */
export class WebhookConfigCache {
  private readonly entries = new Map<number, { cfg: WebhookConfig | null; at: number }>();
  /** Moves at each clear: a read begun before it is not kept. */
  private gen = 0;
  /** Clients dropped while a read of theirs may be in flight: that read's answer is not kept. */
  private readonly dropped = new Set<number>();

  constructor(
    private readonly read: (clienteId: number) => Promise<WebhookConfig | null>,
    private readonly ticks: () => number,
    private readonly ttlMs = WEBHOOK_CONFIG_TTL_MS,
  ) {}

  async get(clienteId: number): Promise<WebhookConfig | null> {
    const t = this.ticks();
    const e = this.entries.get(clienteId);
    if (e && t - e.at < this.ttlMs) return e.cfg;
    // Stamped with the time before the read; a drop or clear during the read keeps its answer out.
    this.dropped.delete(clienteId);
    const gen = this.gen;
    const cfg = await this.read(clienteId);
    if (gen === this.gen && !this.dropped.has(clienteId)) {
      if (this.entries.size >= MAX) this.entries.clear();
      this.entries.set(clienteId, { cfg, at: t });
    }
    return cfg;
  }

  drop(clienteId: number): void {
    this.entries.delete(clienteId);
    if (this.dropped.size < MAX) this.dropped.add(clienteId);
  }

  clear(): void {
    this.entries.clear();
    this.dropped.clear();
    this.gen += 1;
  }

  /** Follows the signals of configuration changes; returns the unsubscribe. */
  listen(signals: Signals): () => void {
    return signals.subscribe(WEBHOOK_CONFIG_CHANNEL, {
      message: (payload) => this.drop(Number(payload)),
      gap: () => this.clear(),
    });
  }
}

/** Called after a committed change of a client's configuration: every node's cache drops it. */
export function announceWebhookConfig(signals: Signals, clienteId: number): Promise<void> {
  return signals.publish(WEBHOOK_CONFIG_CHANNEL, String(clienteId));
}
