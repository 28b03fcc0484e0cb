import { join } from 'node:path';
import { fileAuthSource } from '../../gateways/baileys/auth.js';
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
export async function engineOptions(opts: ServeConfig, d: { metrics: Metrics; log: Log }): Promise<NonNullable<GatewayOptions['baileys']>> {
  return {
    // Baileys' own folder per line in the data directory until the encrypted state in the store is wired.
    auth: fileAuthSource(join(opts.dataDir, 'engine-auth')),
    wsUrl: opts.baileysWsUrl,
    log: d.log,
    onStatus: (instancia, status) => d.metrics.engineLines.set(instancia, status),
    onReconnect: () => d.metrics.engineReconnects.inc(),
  };
}
