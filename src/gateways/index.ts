import type { Clock } from '../core/time/clock.js';
import type { Gateway } from '../core/ports/gateway.js';
import type { Store } from '../core/ports/store.js';
import { MediaFetcher, type MediaFetchOptions } from './media-fetch.js';
import { SimGateway, type SimOptions } from './sim.js';
import { GatewayRouter, type RoutedServer } from './router.js';
import { serverOfInstance } from '../core/accounts/gateway-servers.js';
import type { BaileysOptions } from './baileys/adapter.js';

/** Gateways this build can drive; `serve --gateway NAME` picks one. */
export const GATEWAYS = ['sim', 'evolution', 'waha', 'baileys'] as const;
export type GatewayName = (typeof GATEWAYS)[number];

/** What an adapter over HTTP needs (Evolution API, WAHA). */
export interface HttpGatewayOptions {
  /** Base URL of the gateway's API (`--gateway-url`). */
  url: string;
  /** The gateway's global API key (`--gateway-key`). */
  key: string;
  /**
   * Base URL at which the gateway reaches pasarela (`--gateway-callback-url`);
   * the adapter registers `${callbackUrl}/gateway/<name>/<instancia>` on each instance.
   */
  callbackUrl: string;
  /** Server secret; each instance's inbound secret is derived from it (inbound-secret.ts). */
  secret: string;
  /** Timeout of management calls (create, QR, status, logout). */
  timeoutMs: number;
  /** Timeout of a send. */
  sendTimeoutMs: number;
  clock: Clock;
  /** Fetches media URLs so the gateway gets bytes; absent, the gateway is handed the URL to fetch itself. */
  media?: MediaFetcher;
}

export interface GatewayOptions {
  sim: SimOptions;
  http?: HttpGatewayOptions;
  /** Where and how media URLs are fetched for gateways that get bytes (see gatewayGetsBytes). */
  media?: MediaFetchOptions;
  /** `serve --gateway-fetches-media`: the operator trusts the gateway to fetch media URLs itself. */
  gatewayFetchesMedia?: boolean;
  /** The engine's own settings (`--gateway baileys`); its deadlines are the HTTP gateways' (`--gateway-timeout`). */
  baileys?: Omit<BaileysOptions, 'clock' | 'timeoutMs' | 'sendTimeoutMs' | 'media'> & {
    /** The key the store's nodes share for calls between their engines (baileys/forward.ts). */
    nodeKey: string;
  };
}

/**
 * Who fetches a media URL. A real gateway (Evolution, WAHA) would fetch it
 * later, with its own DNS, from inside the operator's network: a name vetted
 * as public at accept time could point at a private address by then. So
 * pasarela fetches it and hands the gateway bytes, unless the operator opts
 * out. The simulator fetches nothing, so it keeps the URL.
 */
export function gatewayGetsBytes(name: string, gatewayFetchesMedia: boolean): boolean {
  return name !== 'sim' && !gatewayFetchesMedia;
}

export async function createGateway(name: string, store: Store, clock: Clock, opts: GatewayOptions): Promise<Gateway> {
  if (name === 'sim') return new SimGateway(store, clock, opts.sim);
  if (name === 'evolution' || name === 'waha') {
    if (!opts.http?.url) throw new Error(`--gateway ${name} needs --gateway-url (or PASARELA_GATEWAY_URL)`);
    if (!opts.http.key) throw new Error(`--gateway ${name} needs --gateway-key (or PASARELA_GATEWAY_KEY)`);
    const bytes = gatewayGetsBytes(name, opts.gatewayFetchesMedia ?? false);
    if (bytes && !opts.media) throw new Error(`--gateway ${name} needs a temp directory to fetch media into`);
    // Set on the shared options object, which the adapter reads at each call.
    opts.http.media = bytes && opts.media ? new MediaFetcher(opts.media) : undefined;
    return routedGateway(name, store, clock, opts.http);
  }
  if (name === 'baileys') {
    if (!opts.baileys) throw new Error("--gateway baileys needs a place for the lines' authentication state");
    if (!opts.media) throw new Error('--gateway baileys needs a temp directory to fetch media into');
    // Loaded on demand: neither the adapter nor the library is loaded on the simulator.
    const { BaileysGateway } = await import('./baileys/adapter.js');
    const { RoutedEngine } = await import('./baileys/routed.js');
    const { NodeForwarder } = await import('./baileys/forward.js');
    const { nodeKey, ...engine } = opts.baileys;
    const deadlines = { timeoutMs: opts.http?.timeoutMs ?? 10_000, sendTimeoutMs: opts.http?.sendTimeoutMs ?? 40_000 };
    const local = new BaileysGateway({
      ...engine,
      ...deadlines,
      clock,
      requireFence: store.caps.shared,
      // The engine always gets a local file: Baileys would fetch a URL itself, unvetted.
      media: new MediaFetcher(opts.media),
    });
    // Each line's calls go to the node holding its session (D-136).
    return new RoutedEngine(local, store, new NodeForwarder(nodeKey), { ...deadlines, now: () => clock.now() });
  }
  throw new Error(`unknown gateway "${name}"; this build supports: ${GATEWAYS.join(', ')}`);
}

/**
 * Options of one server's adapter: its URL and key, the rest read through
 * from the shared options (serve sets callbackUrl once it listens).
 */
export function serverOptions(shared: HttpGatewayOptions, server: { url: string; key: string }): HttpGatewayOptions {
  return {
    url: server.url,
    key: server.key,
    get callbackUrl() {
      return shared.callbackUrl;
    },
    get media() {
      return shared.media;
    },
    secret: shared.secret,
    timeoutMs: shared.timeoutMs,
    sendTimeoutMs: shared.sendTimeoutMs,
    clock: shared.clock,
  };
}

/** Evolution or WAHA over the deployment's gateway servers (see router.ts and core/accounts/gateway-servers.ts). */
async function routedGateway(name: 'evolution' | 'waha', store: Store, clock: Clock, http: HttpGatewayOptions): Promise<Gateway> {
  // Loaded on demand: a sim server never loads the HTTP adapters.
  const adapter =
    name === 'evolution'
      ? await import('./evolution.js').then((m) => ({
          capabilities: m.EVOLUTION_CAPABILITIES,
          proto: m.EvolutionGateway.prototype,
          make: (s: RoutedServer) => new m.EvolutionGateway(serverOptions(http, s)),
        }))
      : await import('./waha.js').then((m) => ({
          capabilities: m.WAHA_CAPABILITIES,
          proto: m.WahaGateway.prototype,
          make: (s: RoutedServer) => new m.WahaGateway(serverOptions(http, s)),
        }));
  return new GatewayRouter({
    kind: name,
    capabilities: adapter.capabilities,
    sentMessage: 'sentMessage' in adapter.proto,
    serverOf: (instancia) => serverOfInstance(store, name, instancia, clock.now()),
    server: (id) => store.getGatewayServer(id),
    make: adapter.make,
  });
}
