import { loadEngineCipher } from '../../core/engine-key.js';
import type { Store } from '../../core/ports/store.js';
import { storeAuthSource } from '../../gateways/baileys/auth.js';
import type { GatewayOptions } from '../../gateways/index.js';
import type { ServeConfig } from '../config.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Log } from './part.js';

/**
 * The engine's settings (`--gateway baileys`): the network's address, where
 * the lines' authentication state is kept, its log lines (a fixed phrase,
 * the line and a code: never a key, a number's message or its text) and its
 * metrics (sessions by status, reconnects).
 */
export async function engineOptions(
  opts: ServeConfig,
  d: { store: Store; metrics: Metrics; log: Log; engine?: { ca?: string } },
): Promise<NonNullable<GatewayOptions['baileys']>> {
  return {
    // Sealed in the store with the key kept outside it (core/engine-key.ts); a missing or wrong key stops the start.
    auth: storeAuthSource(d.store, await loadEngineCipher({ dataDir: opts.dataDir, keyFile: opts.engineKeyFile })),
    wsUrl: opts.baileysWsUrl,
    ca: d.engine?.ca,
    log: d.log,
    onStatus: (instancia, status) => d.metrics.engineLines.set(instancia, status),
    onReconnect: () => d.metrics.engineReconnects.inc(),
  };
}
