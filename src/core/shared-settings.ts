import type { KvStore } from './ports.js';

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
