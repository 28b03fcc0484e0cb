import { loadEngineCipher } from '../../core/engine/engine-key.js';
import type { Store } from '../../core/ports/store.js';
import { storeAuthSource } from '../../gateways/baileys/auth.js';
import { nodeKey } from '../../gateways/baileys/forward.js';
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
  d: { store: Store; metrics: Metrics; log: Log; engine?: { ca?: string }; sharedSecret: string },
): Promise<NonNullable<GatewayOptions['baileys']>> {
  // The lines' state sealed in the store under a key file kept outside it (D-116, D-117); a key file others may read stops the start.
  const cipher = await loadEngineCipher({ dataDir: opts.dataDir, keyFile: opts.engineKeyFile });
  d.log.info({ key_id: cipher.keyId, key_file: cipher.keyFile, made: cipher.created }, "the engine's key (its id, never the key)");
  // Nodes of one store take over each other's lines: a node with another key could not open them (D-136).
  if (d.store.caps.shared) {
    const storeKey = await d.store.kvFirst('motor', 'clave_id', cipher.keyId);
    if (storeKey !== cipher.keyId)
      throw new Error(
        `this node's engine key (id ${cipher.keyId}, ${cipher.keyFile}) is not the one the store's lines are sealed with (id ${storeKey}): every node of a store needs the same key file: copy it from a node that serves this store and give it with --engine-key-file`,
      );
  }
  return {
    auth: storeAuthSource(d.store, cipher),
    nodeKey: nodeKey(d.sharedSecret),
    wsUrl: opts.baileysWsUrl,
    ca: d.engine?.ca,
    log: d.log,
    onStatus: (instancia, status) => d.metrics.engineLines.set(instancia, status),
    onReconnect: () => d.metrics.engineReconnects.inc(),
  };
}
