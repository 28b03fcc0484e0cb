import type { Clock } from '../core/time/clock.js';
import type { Core, CoreConfig } from '../core/context.js';
import { CredentialCache } from '../core/auth/credential-cache.js';
import { LineReads } from '../core/accounts/line-reads.js';
import type { EventBus } from '../core/events/events.js';
import { hashSecret } from '../core/auth/keys.js';
import type { Counters } from '../core/ports/counters.js';
import type { Gateway } from '../core/ports/gateway.js';
import type { Signals } from '../core/ports/signals.js';
import type { Store } from '../core/ports/store.js';
import { LocalSignals } from '../core/nodes/signals-local.js';
import { derivedLeaseMs, type ServeConfig } from './config.js';

/** What the core is given to work with: the ports' adapters, the clock, the bus and the source of chance. */
export interface CoreAdapters {
  store: Store;
  counters: Counters;
  gateway: Gateway;
  clock: Clock;
  bus: EventBus;
  /** Math.random unless a test drives it. */
  random?: () => number;
  /** The store's signals (parts/store.ts); in-process when not given. */
  signals?: Signals;
}

/**
 * The one place a Core is assembled: `serve` (serve.ts), the background
 * thread (background/thread.ts, from the request thread's CoreConfig) and
 * the OpenAPI generator (openapi.ts).
 */
export function makeCore(config: CoreConfig, adapters: CoreAdapters): Core {
  const { store, counters, gateway, clock, bus, random = Math.random, signals = new LocalSignals() } = adapters;
  const credentials = new CredentialCache({ ticks: () => clock.ticks() });
  credentials.listen(signals);
  // A line's estado follows its session; on SQLite the background thread's changes reach this bus and the counts
  // of background/changes.ts, not these signals.
  const lines = new LineReads(store, () => clock.ticks());
  lines.listen(signals);
  bus.subscribe('session.status', (e) => {
    credentials.invalidate({ celular: e.celular_id });
    lines.invalidate({ celular: e.celular_id });
  });
  return { store, counters, gateway, clock, bus, config, random, signals, credentials, lines };
}

/** The settings the core reads, from `serve`'s configuration and what the start resolved (the operator token, the zone). */
export function coreConfigOf(opts: ServeConfig, resolved: { adminToken: string; tz: string }): CoreConfig {
  return {
    adminTokenHash: hashSecret(resolved.adminToken),
    authMaxFailures: opts.authMaxFailures,
    authWindowMs: opts.authWindowMs,
    tz: resolved.tz,
    allowPrivateUrls: opts.allowPrivateUrls,
    webhookListenLeaseMs: opts.webhookListenLeaseMs,
    listenHost: opts.host,
    trustProxy: opts.trustProxy !== false,
    queue: { ...opts.queue, leaseMs: opts.queue.leaseMs ?? derivedLeaseMs(opts.gatewaySendTimeoutMs) },
    brake: opts.brake,
  };
}
