import type { KvStore } from '../ports/kv.js';

/**
 * Settings every node of one store must share: the operator token (any node
 * answers any operator), the gateway kind and the secret its events are
 * signed with (an event lands on any node), the callback URL the gateway is
 * given, and the time zone of allowed hours and history dates. The first node
 * records them in the store; each later node takes the recorded value of
 * what it was not given, and refuses to start when a value it was given
 * (environment or flag) disagrees, naming the setting.
 */
export interface SharedSettings {
  adminToken: string;
  gateway: string;
  gatewaySecret: string;
  callbackUrl: string;
  tz: string;
}

export type Given = Record<keyof SharedSettings, boolean>;

const NAMES: Record<keyof SharedSettings, string> = {
  adminToken: 'the operator token (PASARELA_ADMIN_TOKEN)',
  gateway: 'the gateway (--gateway)',
  gatewaySecret: 'the gateway secret (PASARELA_GATEWAY_SECRET)',
  callbackUrl: 'the gateway callback URL (--gateway-callback-url)',
  tz: 'the time zone (--tz)',
};

export class SharedSettingsConflict extends Error {}

/** The settings this node runs with: the recorded ones, where it was not given its own. Throws on a disagreement. */
export function settle(recorded: SharedSettings, mine: SharedSettings, given: Given): SharedSettings {
  const out = { ...mine };
  const conflicts: string[] = [];
  for (const k of Object.keys(NAMES) as Array<keyof SharedSettings>) {
    if (recorded[k] === mine[k]) continue;
    // The gateway kind is always this node's own choice, defaulted or not: two kinds on one store never mix.
    if (given[k] || k === 'gateway') conflicts.push(NAMES[k]);
    else out[k] = recorded[k];
  }
  if (conflicts.length > 0) {
    throw new SharedSettingsConflict(
      `this node disagrees with the other nodes of this store on ${conflicts.join(', ')}; every node must run with the same value (or leave it unset to take the store's)`,
    );
  }
  return out;
}

export async function sharedSettings(store: KvStore, mine: SharedSettings, given: Given): Promise<SharedSettings> {
  return settle(await store.kvFirst<SharedSettings>('cluster', 'settings', mine), mine, given);
}

/**
 * Where duplicate protection and the auth throttle count (`--counters`,
 * `--counters-prefix`): one place for every node of a store, or a node's
 * blocks and throttles would be its own. Compared: memory or Redis, Redis's
 * database number and the key prefix. Not the Redis address, which may be
 * another name of the same server on another node (a proxy, a service name).
 * Every node gives these (a default is a choice too), so a difference is
 * refused, never taken from the store.
 */
export interface CountersSettings {
  /** `memory`, or `redis database N`. */
  counters: string;
  /** The key prefix; empty on memory, where it means nothing. */
  prefix: string;
}

const COUNTERS_NAMES: Record<keyof CountersSettings, string> = {
  counters: 'the counters (--counters: memory, or which Redis database)',
  prefix: 'the counters key prefix (--counters-prefix)',
};

/** This node's counters settings, from `--counters` (memory or a redis:// URL) and `--counters-prefix`. */
export function countersSettings(counters: string, prefix: string): CountersSettings {
  if (counters === 'memory') return { counters: 'memory', prefix: '' };
  let db = 0;
  try {
    db = Number(/^\/(\d+)/.exec(new URL(counters).pathname)?.[1] ?? 0);
  } catch {
    // Checked at the flag; an unparsable URL is database 0 here as for Redis.
  }
  return { counters: `redis database ${db}`, prefix };
}

/** Throws, naming each setting with both values, when this node's counters are not the store's. */
export function settleCounters(recorded: CountersSettings, mine: CountersSettings): void {
  const conflicts = (Object.keys(COUNTERS_NAMES) as Array<keyof CountersSettings>)
    .filter((k) => recorded[k] !== mine[k])
    .map((k) => `${COUNTERS_NAMES[k]}: this node ${JSON.stringify(mine[k])}, the other nodes ${JSON.stringify(recorded[k])}`);
  if (conflicts.length > 0) {
    throw new SharedSettingsConflict(
      `this node disagrees with the other nodes of this store on ${conflicts.join('; ')}; every node must count in the same place (docs/several-nodes.md)`,
    );
  }
}

/** Records this node's counters settings if it is the first; refuses a node whose settings are not the recorded ones. */
export async function sharedCounters(store: KvStore, mine: CountersSettings): Promise<void> {
  settleCounters(await store.kvFirst<CountersSettings>('cluster', 'counters', mine), mine);
}
