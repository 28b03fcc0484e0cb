import type { Clock } from './time/clock.js';
import type { BrakeConfig } from './accounts/line-brake.js';
import type { LineReads } from './accounts/line-reads.js';
import type { CredentialCache } from './auth/credential-cache.js';
import type { EventBus } from './events/events.js';
import type { Counters } from './ports/counters.js';
import type { Gateway } from './ports/gateway.js';
import type { Signals } from './ports/signals.js';
import type { Store } from './ports/store.js';

/** Settings the core reads; the server fills them from flags and environment. */
export interface CoreConfig {
  /** SHA-256 of the operator token. */
  adminTokenHash: string;
  /** Failed authentications of one credential from one address per window before 429 (core/auth/auth-throttle.ts). */
  authMaxFailures: number;
  authWindowMs: number;
  /** IANA zone of allowed hours and of history dates (`serve --tz`). */
  tz: string;
  /** Media and webhook URLs may point at loopback/private addresses (tests, closed networks). */
  allowPrivateUrls: boolean;
  /** How long a webhook listener lives after its last renewal (webhooks/listeners.ts). */
  webhookListenLeaseMs: number;
  /** The address `serve --host` listens on: a loopback listener URL needs a loopback one (webhooks/listeners.ts). */
  listenHost: string;
  /** `serve --trust-proxy`: requests come through a proxy, which must name a loopback client for a loopback listener. */
  trustProxy: boolean;
  queue: QueueConfig;
  /** The lines' brake thresholds (`serve --brake-*`); core/accounts/line-brake.ts BRAKE_DEFAULTS when absent. */
  brake?: BrakeConfig;
}

export interface QueueConfig {
  /** Human-like random pause between two sends of one line. */
  gapMinMs: number;
  gapMaxMs: number;
  /** A queued message not sent within this long ends as `error`. */
  ttlMs: number;
  /** Pending messages per line beyond which queue sends get 429. */
  maxPending: number;
  /** How long a worker's claim on a message lasts before another may take it. */
  leaseMs: number;
  /** First retry delay of a transient failure; the backoff doubles it up to 120 times (core/queue/queue-worker.ts). */
  retryMs: number;
  /** How long a line pauses when the network rate-limits it without saying for how long. */
  rateLimitPauseMs: number;
  /** The longest a line waits before its state (hours, caps, estado, TTL) is looked at again. */
  recheckMs: number;
  /** How long a line that cannot send (client suspended, line not active or not linked) waits before it is looked at again. */
  inactiveHoldMs: number;
}

export const systemTz = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** Everything the core's operations need, passed explicitly (no globals). */
export interface Core {
  store: Store;
  counters: Counters;
  gateway: Gateway;
  clock: Clock;
  bus: EventBus;
  config: CoreConfig;
  /** Uniform in [0, 1): the source of queue gaps and retry jitter (injected for tests). */
  random: () => number;
  /** Notices to every node serving the store (in-process on SQLite, LISTEN/NOTIFY on PostgreSQL). */
  signals: Signals;
  /** Resolved credentials for about a second, dropped by signals (core/auth/credential-cache.ts, D-67). */
  credentials: CredentialCache;
  /** A line and its client as the queue worker and gateway events read them, ten seconds on a shared store (core/accounts/line-reads.ts, D-80). */
  lines: LineReads;
}
