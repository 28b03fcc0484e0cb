import type { Clock } from './clock.js';
import type { EventBus } from './events.js';
import type { Counters, Gateway, Store } from './ports.js';

/** Settings the core reads; the server fills them from flags and environment. */
export interface CoreConfig {
  /** SHA-256 of the operator token. */
  adminTokenHash: string;
  /** Failed authentications allowed per address and window before 429. */
  authMaxFailures: number;
  authWindowMs: number;
}

/** Everything the core's operations need, passed explicitly (no globals). */
export interface Core {
  store: Store;
  counters: Counters;
  gateway: Gateway;
  clock: Clock;
  bus: EventBus;
  config: CoreConfig;
}
