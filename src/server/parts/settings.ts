import { systemTz } from '../../core/context.js';
import type { Store } from '../../core/ports/store.js';
import { countersSettings, sharedCounters, sharedSettings } from '../../core/nodes/shared-settings.js';
import { ADMIN_TOKEN_FILE, GATEWAY_SECRET_FILE } from '../../paths.js';
import type { ServeConfig } from '../config.js';
import { keepSecret, secretOf } from './data-dir.js';

/** The settings a node of a shared store may take from the store: the secrets, the callback URL and the zone. */
export interface NodeSettings {
  admin: { token: string; source: string };
  gatewaySecret: string;
  /** Without a trailing slash; empty: set once listening (serve.ts). */
  callbackUrl: string;
  tz: string;
}

/**
 * This node's own settings, or, on a shared store, those the nodes share
 * (core/nodes/shared-settings.ts): what this node was not given, it takes from
 * the store; the counters' setting must agree with the store's.
 */
export async function nodeSettings(opts: ServeConfig, store: Store, shared: boolean, admin: NodeSettings['admin']): Promise<NodeSettings> {
  const mine: NodeSettings = {
    admin,
    gatewaySecret: opts.gateway === 'sim' ? '' : secretOf(opts.dataDir, opts.gatewaySecret, 'PASARELA_GATEWAY_SECRET', GATEWAY_SECRET_FILE).token,
    callbackUrl: opts.gatewayCallbackUrl?.replace(/\/+$/, '') ?? '',
    tz: opts.tz ?? systemTz(),
  };
  if (!shared) return mine;
  const got = await sharedSettings(
    store,
    { adminToken: admin.token, gateway: opts.gateway, gatewaySecret: mine.gatewaySecret, callbackUrl: mine.callbackUrl, tz: mine.tz },
    {
      adminToken: Boolean(opts.adminToken),
      gateway: true,
      gatewaySecret: Boolean(opts.gatewaySecret),
      callbackUrl: Boolean(opts.gatewayCallbackUrl),
      tz: Boolean(opts.tz),
    },
  );
  await sharedCounters(store, countersSettings(opts.counters || 'memory', opts.countersPrefix));
  return {
    admin: got.adminToken === admin.token ? admin : { token: got.adminToken, source: keepSecret(opts.dataDir, ADMIN_TOKEN_FILE, got.adminToken) },
    gatewaySecret: got.gatewaySecret,
    callbackUrl: got.callbackUrl,
    tz: got.tz,
  };
}
