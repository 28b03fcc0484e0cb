import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { join } from 'node:path';
import { systemClock, type Clock } from '../core/time/clock.js';
import type { Core } from '../core/context.js';
import { HolderReports } from '../core/engine/engine-holders.js';
import { nodeKey } from '../gateways/baileys/forward.js';
import { MAX_MEDIA_BYTES } from '../core/media/media.js';
import { EventBus } from '../core/events/events.js';
import type { LineHealth } from '../core/accounts/line-health.js';
import type { DirectRecovery } from '../core/sending/direct-recovery.js';
import type { Retention } from '../core/history/retention.js';
import type { QueueWorker } from '../core/queue/queue-worker.js';
import type { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { TempFiles } from '../core/media/media.js';
import { sweepAcceptedMedia } from '../core/media/accepted-media.js';
import { ADMIN_TOKEN_FILE } from '../paths.js';
import { completeConfig, SERVE_DEFAULTS, type ServeOverrides } from './config.js';
import { logBusEvents } from './log-events.js';
import { coreConfigOf, makeCore } from './make-core.js';
import { Metrics } from './metrics/metrics.js';
import { countBusEvents } from './metrics/bus.js';
import type { BackgroundThread } from './background/handle.js';
import { startBackground, startNode } from './parts/background.js';
import { countersPart } from './parts/counters.js';
import { dataDirPart, secretOf } from './parts/data-dir.js';
import { gatewayPart } from './parts/gateway.js';
import type { StreamTiming } from '../core/events/event-stream-pump.js';
import { appPart, listenerPart, metricsListenerPart } from './parts/http.js';
import { makeLogger } from './parts/log.js';
import { Parts } from './parts/part.js';
import { nodeSettings } from './parts/settings.js';
import { storePart } from './parts/store.js';
import type { ChartSampler } from '../core/charts/chart-samples.js';
import { chartsPart, healthPart, lineHealth, recoveryPart, retentionPart } from './parts/upkeep.js';

export { makeDataDir } from './parts/data-dir.js';
export { banner } from './banner.js';

/**
 * What startServer takes: the configuration object (config.ts), whole from
 * the CLI or in part from a test (the rest from SERVE_DEFAULTS), and what
 * only code can give: the clock, the randomness and where logs go.
 */
export type ServeOptions = ServeOverrides & {
  clock?: Clock;
  random?: () => number;
  /** Where logs go (stdout when serving for real). A failing one drops lines, never stops the server (log-sink.ts). */
  logStream?: NodeJS.WritableStream;
  /** Where a failing log output is said (stderr when serving for real); nowhere without it. */
  logNotice?: NodeJS.WritableStream;
  /** Pretty lines in colour. */
  logColor?: boolean;
  /** The event streams' timing (core/events/event-stream-pump.ts): tests shorten the poll, the ping and the stall cut. */
  streamTiming?: Partial<StreamTiming>;
  /** `--gateway baileys` in-process tests: the CA of their fake network's media server (a child takes NODE_EXTRA_CA_CERTS). */
  engine?: { ca?: string };
};

export { SERVE_DEFAULTS };

export interface RunningServer {
  url: string;
  dataDir: string;
  adminTokenSource: string;
  core: Core;
  /** Where the gateway sends its events (null for the simulator). */
  callbackUrl: string | null;
  health: LineHealth;
  /** Resolves direct sends a crash left pending (runs at start and periodically). */
  recovery: DirectRecovery;
  /** The inbox's retention: purges at start and periodically; `run()` is one pass now. */
  inbox: Retention;
  /** The event log's retention (D-69), likewise: its own period, `eventPruneIntervalMs`. */
  events: Retention;
  /** Expired kv rows (form tokens, shown-once pages), on the event log's period: `run()` is one pass now. */
  kv: Retention;
  /** The charts' samples of this node (D-101): `run()` is one pass now. */
  charts: ChartSampler;
  schemaVersion: number;
  /** Where the data lives, for the banner: the SQLite file, or the PostgreSQL URL without its password. */
  storeSource: string;
  /** Where the counters live, for the banner: "memory (this process)" or the Redis URL (password hidden) and key prefix. */
  countersSource: string;
  /** The `--metrics-listen` listener's URL (http://HOST:PORT/metrics); null without one. */
  metricsUrl: string | null;
  /** Where the queue worker and webhook dispatcher run: their own thread, or the request thread. */
  background: 'thread' | 'inline';
  /** The background thread's handle, when it runs on one. */
  thread: BackgroundThread | null;
  /** The queue worker on the request thread (null on the background thread): tests step it instead of waiting for its poll. */
  queue: Pick<QueueWorker, 'poke' | 'idle' | 'step'> | null;
  /** The webhook dispatcher on the request thread (null on the background thread), to step likewise. */
  dispatcher: Pick<WebhookDispatcher, 'step'> | null;
  /** The HTTP app: tests reach its routes through `inject`, without the socket. */
  app: FastifyInstance;
  /**
   * The first step of a graceful stop: /ready answers 503 (draining, with
   * `reason`) from now on, while everything else still serves. `serve`
   * then waits --drain-delay so a load balancer sees it, and closes.
   */
  drain(reason: string): void;
  /**
   * Stops taking requests (draining first, if not yet), abandons the webhook
   * attempts in flight (they stay due), lets the requests and sends in
   * flight finish for up to --stop-timeout and abandons what is left, then
   * closes the gateway and the database. `complete`: nothing was abandoned
   * but webhook attempts.
   */
  close(): Promise<{ complete: boolean }>;
}

/** This node's address for the others: its listener's, or the host's name when it listens on every address. */
function nodeUrlOf(l: { url: string; host: string; port: number }): string {
  return /^(0\.0\.0\.0|::)$/.test(l.host) ? `http://${hostname()}:${l.port}` : l.url;
}

/**
 * Starts `serve`: its parts (parts/), in this order, each stopped in
 * reverse by the one stop routine (parts/part.ts), on a failed start as on
 * `close()`. The logger comes first, so every part logs from its start.
 */
export async function startServer(given: ServeOptions): Promise<RunningServer> {
  const { clock = systemClock, random } = given;
  const opts = completeConfig(given);
  const { log, dropped } = makeLogger(opts, { stream: given.logStream, notice: given.logNotice, color: given.logColor });
  const parts = new Parts(log);
  try {
    // First, so that two starts on a new directory cannot both make its secrets.
    await parts.start(dataDirPart(opts.dataDir));
    // The token next: a bad one stops the start before the store (and its checkpoint thread) exists.
    const ownAdmin = secretOf(opts.dataDir, opts.adminToken, 'PASARELA_ADMIN_TOKEN', ADMIN_TOKEN_FILE);
    const tmp = new TempFiles(join(opts.dataDir, 'tmp'));
    const opened = await parts.start(
      storePart(
        opts,
        tmp,
        (message) => log.error({ err: message }, 'background WAL checkpoint failed'),
        (err) => log.warn({ err }, 'signals between nodes (LISTEN/NOTIFY): cached credentials expire by their TTL until it listens again'),
      ),
    );
    const { store, media } = opened;
    const settings = await nodeSettings(opts, store, opened.store.caps.shared, ownAdmin);
    const metrics = new Metrics({
      store,
      clock,
      storeCacheMs: opts.metricsCacheMs,
      info: { store: store.caps.name, gateway: opts.gateway },
      onError: (err) => log.warn({ err }, 'the store gauges of /metrics could not be read: they keep their last values'),
      logLinesDropped: dropped,
    });
    const gw = await parts.start(gatewayPart(opts, { store, clock, tmp, metrics, settings, log, engine: given.engine }));
    if (gw.adopted?.adoptadas)
      log.info({ lineas: gw.adopted.adoptadas, servidor: gw.adopted.servidor.nombre }, 'lines without a gateway server were given to the --gateway-url server');
    const bus = new EventBus((err, event) => log.error({ err, event }, 'event listener failed'));
    countBusEvents(bus, metrics);
    // Line state changes, messages ending in error, webhook receivers failing: info and warn lines (docs/logs.md).
    logBusEvents(bus, log);
    const { counters, source: countersSource } = await parts.start(countersPart(opts, clock, log));
    const config = coreConfigOf(opts, { adminToken: settings.admin.token, tz: settings.tz });
    const core = makeCore(config, { store, counters, gateway: gw.gateway, clock, bus, random, signals: opened.signals });
    // Base64 media of sends that ended while the process was down, or of a crash mid-request or mid-fetch.
    const swept = await sweepAcceptedMedia(store, media, clock.now());
    if (swept > 0) log.info({ swept }, 'removed the media of ended sends');
    // The engine's sockets live in this thread: its sends are made here too (D-119).
    const onThread = opts.background === 'thread' && !opened.store.caps.shared && opts.gateway !== 'baileys';
    const drivenClock = given.clock !== undefined && given.clock !== systemClock;
    if (onThread && (drivenClock || random)) throw new Error('the background thread runs on the system clock: a driven clock needs background inline');
    const node = await startNode(parts, opts, core, log);
    // Each change of holder this node makes: on the bus (counted, logged), then audited (D-137).
    const holders = new HolderReports(core, (err) => log.warn({ err }, "a line's change of engine node could not be audited"));
    const bg = await startBackground(parts, { opts, core, node, opened, media, tmp, gw, metrics, log, onThread, holders });
    const engine = gw.engine;
    if (engine) metrics.engineHeld = () => engine.sockets.held().length;
    const health = lineHealth(opts, core, node, log);
    const inFlight = new Set<string>();
    const send = { tmp, media, queued: bg.queued, inFlight, keysAccepting: new Map(), node };
    const appOptions = {
      core,
      trustProxy: opts.trustProxy,
      node,
      send,
      webhooks: bg.webhooks,
      health,
      limits: opts.limits,
      metrics,
      publicUrl: opts.publicUrl,
      streamTiming: given.streamTiming,
      engine:
        gw.engine && bg.keeper ? { router: gw.engine, keeper: bg.keeper, key: nodeKey(settings.gatewaySecret), tmp, maxFileBytes: MAX_MEDIA_BYTES } : undefined,
    };
    const app = await parts.start(appPart(appOptions, log));
    // Direct sends a crash left pending are resolved before the API listens (parts/upkeep.ts).
    const recovery = await parts.start(recoveryPart(opts, core, { media, inFlight, shared: opened.store.caps.shared }, log));
    const { inbox, events, kv } = await parts.start(retentionPart(opts, core, log));
    const charts = await parts.start(chartsPart(core, node, log));
    const metricsListener = opts.metricsListen ? await parts.start(metricsListenerPart(opts.metricsListen, metrics, log)) : null;
    const listening = await parts.start(listenerPart(app, opts.host, opts.port));
    // Where the other nodes hand this node calls for the lines it holds: recorded at its next beat.
    if (gw.engine) {
      node.info.engineUrl = opts.nodeUrl ?? nodeUrlOf(listening);
      if (opened.store.caps.shared && !opts.nodeUrl && /^http:\/\/(127\.|localhost|\[::1\])/.test(node.info.engineUrl))
        log.warn(
          { node_url: node.info.engineUrl },
          'other nodes reach this node at a loopback address: nodes on other machines cannot hand it calls for its lines; give --node-url',
        );
    }
    const { http } = gw;
    if (!http.callbackUrl) http.callbackUrl = `http://${/^(0\.0\.0\.0|::)$/.test(opts.host) ? '127.0.0.1' : listening.host}:${listening.port}`;
    bg.thread?.setCallbackUrl(http.callbackUrl);
    await parts.start(healthPart(health));
    return {
      url: listening.url,
      dataDir: opts.dataDir,
      callbackUrl: opts.gateway === 'sim' ? null : http.callbackUrl,
      health,
      recovery,
      inbox,
      events,
      kv,
      charts,
      adminTokenSource: settings.admin.source,
      core,
      schemaVersion: opened.schemaVersion,
      storeSource: opened.source,
      countersSource,
      metricsUrl: metricsListener?.url ?? null,
      background: bg.thread ? 'thread' : 'inline',
      thread: bg.thread,
      queue: bg.worker,
      dispatcher: bg.dispatcher,
      app,
      drain: (reason) => app.markDraining(reason),
      close: () => parts.stop(opts.stopTimeoutMs),
    };
  } catch (err) {
    // What started stops, in reverse; the start's own failure is what the caller hears.
    await parts.stop(opts.stopTimeoutMs).catch(() => undefined);
    throw err;
  }
}
