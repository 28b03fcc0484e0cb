import type { Clock } from '../../core/time/clock.js';
import { registerDefaultServer } from '../../core/accounts/gateway-servers.js';
import type { TempFiles } from '../../core/media/media.js';
import type { Gateway } from '../../core/ports/gateway.js';
import type { Store } from '../../core/ports/store.js';
import { createGateway, type HttpGatewayOptions } from '../../gateways/index.js';
import { RoutedEngine } from '../../gateways/baileys/routed.js';
import type { ServeConfig } from '../config.js';
import { countGatewayCalls } from '../metrics/gateway.js';
import type { Metrics } from '../metrics/metrics.js';
import type { NodeSettings } from './settings.js';
import type { Log, Part } from './part.js';
import { engineOptions } from './engine.js';

export interface GatewayPart {
  gateway: Gateway;
  /** Shared with the adapter, which reads callbackUrl when it registers an instance: set once listening (serve.ts). */
  http: HttpGatewayOptions;
  /** The same for this thread's gateway and the background thread's. */
  sim: { qrRotateMs: number; deliveryMs: number; readMs: number };
  /** A fetch is part of a send: it gets the send's time. */
  mediaFetch: { allowPrivate: boolean; timeoutMs: number };
  /** Lines without a gateway server given to the `--gateway-url` server, to log. */
  adopted?: Awaited<ReturnType<typeof registerDefaultServer>>;
  /** `--gateway baileys`: the engine, whose lines the keeper hands it (parts/background.ts). */
  engine?: RoutedEngine;
}

/** The gateway adapter `--gateway` names, its calls counted in the metrics; `--gateway-url` is the server named `default`. */
export function gatewayPart(
  opts: ServeConfig,
  d: { store: Store; clock: Clock; tmp: TempFiles; metrics: Metrics; settings: NodeSettings; log: Log; engine?: { ca?: string } },
): Part<GatewayPart> {
  return {
    name: 'gateway',
    start: async () => {
      const http: HttpGatewayOptions = {
        url: opts.gatewayUrl ?? '',
        key: opts.gatewayKey ?? '',
        callbackUrl: d.settings.callbackUrl,
        secret: d.settings.gatewaySecret,
        timeoutMs: opts.gatewayTimeoutMs,
        sendTimeoutMs: opts.gatewaySendTimeoutMs,
        clock: d.clock,
      };
      const sim = { qrRotateMs: opts.simQrMs, deliveryMs: opts.simDeliveryMs, readMs: opts.simReadMs };
      const mediaFetch = { allowPrivate: opts.allowPrivateUrls, timeoutMs: http.sendTimeoutMs };
      const adapter = await createGateway(opts.gateway, d.store, d.clock, {
        sim,
        http,
        media: { tmp: d.tmp, ...mediaFetch },
        gatewayFetchesMedia: opts.gatewayFetchesMedia,
        baileys: opts.gateway === 'baileys' ? await engineOptions(opts, { ...d, sharedSecret: d.settings.gatewaySecret }) : undefined,
      });
      const engine = adapter instanceof RoutedEngine ? adapter : undefined;
      const gateway = countGatewayCalls(adapter, d.metrics);
      const stop = () => gateway.close();
      try {
        // Lines without a server are on `default`.
        const adopted =
          gateway.onServer && opts.gatewayUrl
            ? await registerDefaultServer(d.store, opts.gateway, opts.gatewayUrl.replace(/\/+$/, ''), opts.gatewayKey ?? '', d.clock.now())
            : undefined;
        return { value: { gateway, http, sim, mediaFetch, adopted, engine }, base: true, stop };
      } catch (err) {
        await stop().catch(() => undefined);
        throw err;
      }
    },
  };
}
