import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { systemClock, type Clock } from '../core/clock.js';
import { systemTz, type Core } from '../core/context.js';
import { MemoryCounters } from '../core/counters-memory.js';
import type { AcceptedMedia, Counters, Store } from '../core/ports.js';
import { FailoverCounters } from '../counters/failover.js';
import { RedisCounters, redactUrl } from '../counters/redis.js';
import { EventBus } from '../core/events.js';
import { hashSecret } from '../core/keys.js';
import { syncGatewayEvents } from '../core/session-sync.js';
import { createGateway, type HttpGatewayOptions } from '../gateways/index.js';
import { registerDefaultServer } from '../core/gateway-servers.js';
import { LineHealth } from '../core/line-health.js';
import { ADMIN_TOKEN_FILE, DB_FILE, GATEWAY_SECRET_FILE } from '../paths.js';
import { SqliteStore } from '../store/sqlite.js';
import { LocalMedia } from '../store/local-media.js';
import { DataDirLock } from '../store/dir-lock.js';
import { VERSION } from '../version.js';
import { buildApp, loggerOptions } from './app.js';
import { logBusEvents } from './log-events.js';
import { prettyStream } from './log-format.js';
import { logSink } from './log-sink.js';
import { completeConfig, derivedLeaseMs, SERVE_DEFAULTS, type ServeConfig, type ServeOverrides } from './config.js';
import { TempFiles } from '../core/media.js';
import { sweepAcceptedMedia } from '../core/accepted-media.js';
import { QueueWorker } from '../core/queue-worker.js';
import { DirectRecovery } from '../core/direct-recovery.js';
import { InboxRetention } from '../core/recibidos.js';
import { NodePresence } from '../core/node-presence.js';
import { countersSettings, sharedCounters, sharedSettings } from '../core/shared-settings.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { Metrics } from './metrics/metrics.js';
import { countBusEvents } from './metrics/bus.js';
import { countGatewayCalls } from './metrics/gateway.js';
import { listenMetrics, type MetricsListener } from './metrics/listener.js';
import { BackgroundThread } from './background/handle.js';
import type { BackgroundSettings } from './background/protocol.js';
import { mainGate, newGateBuffer } from '../store/write-gate.js';
import type { WebhookControl } from '../webhooks/dispatcher.js';

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
  inbox: InboxRetention;
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
  queue: Pick<QueueWorker, 'poke' | 'idle'> | null;
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

/** A secret given in the environment, or kept in a 0600 file of the data directory (made on first start). */
function secretOf(dataDir: string, given: string | undefined, envName: string, fileName: string): { token: string; source: string } {
  if (given) {
    if (given.length < 16) throw new Error(`${envName} must be at least 16 characters`);
    return { token: given, source: envName };
  }
  const file = join(dataDir, fileName);
  try {
    const t = readFileSync(file, 'utf8').trim();
    if (t.length >= 16) return { token: t, source: file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // Hex, so the token never starts with '-' and can be passed as a command-line value.
  const t = randomBytes(32).toString('hex');
  return { token: t, source: keepSecret(dataDir, fileName, t) };
}

/** Writes a secret into its 0600 file of the data directory; returns the file's path. */
function keepSecret(dataDir: string, fileName: string, secret: string): string {
  const file = join(dataDir, fileName);
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/**
 * The store `--store` names: the data directory's SQLite file (the default),
 * served by this process alone, or a PostgreSQL database (`postgres://...`)
 * that any number of nodes serve together; and where accepted media is kept
 * with it: in `tmp` beside SQLite, in the database on PostgreSQL (any node
 * may send a queued message).
 */
async function openStore(
  opts: ServeConfig,
  tmp: TempFiles,
  onCheckpointError: (message: string) => void,
): Promise<{ store: Store; media: AcceptedMedia; source: string; schemaVersion: number; shared: boolean; close(): Promise<void> }> {
  if (opts.store && /^postgres(ql)?:\/\//.test(opts.store)) {
    const { PgStore } = await import('../store/pg/pg-store.js');
    const { PgMedia } = await import('../store/pg/pg-media.js');
    const pg = await PgStore.open(opts.store);
    try {
      return { store: pg, media: new PgMedia(pg.db, tmp), source: pg.name, schemaVersion: await pg.schemaVersion(), shared: true, close: () => pg.close() };
    } catch (err) {
      await pg.close();
      throw err;
    }
  }
  const file = join(opts.dataDir, DB_FILE);
  const sqlite = new SqliteStore(file, { background: { checkpointMs: opts.checkpointMs, onError: onCheckpointError } });
  return { store: sqlite, media: new LocalMedia(tmp), source: file, schemaVersion: sqlite.schemaVersion(), shared: false, close: () => sqlite.close() };
}

/** The adapter options a thread can be handed: all but the clock and the media fetcher, which it makes. */
function plainHttp({ clock: _clock, media: _media, ...plain }: HttpGatewayOptions): BackgroundSettings['http'] {
  return plain;
}

/**
 * Makes the data directory and any missing parents (0700), one level at a
 * time, each tried once. Node's recursive mkdirSync never returns where
 * mkdir answers ENOENT under a parent that exists (/proc, some FUSE mounts):
 * it retries the parent forever, at full CPU, deaf to signals. Here a level
 * that cannot be made is an error naming the data directory.
 */
export function makeDataDir(dir: string): void {
  const abs = resolve(dir);
  const missing: string[] = [];
  // Up to the first that exists: at most one step per component of the path.
  for (let d = abs; !existsSync(d);) {
    missing.push(d);
    const parent = dirname(d);
    if (parent === d) break;
    d = parent;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      // Made by someone else meanwhile: fine, if it is a directory.
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && existsSync(d) && statSync(d).isDirectory()) continue;
      throw new Error(`cannot create the data directory ${abs}: ${(err as Error).message}`);
    }
  }
  if (!statSync(abs).isDirectory()) throw new Error(`the data directory ${abs} is not a directory`);
}

export async function startServer(given: ServeOptions): Promise<RunningServer> {
  const { clock = systemClock, random, logStream, logNotice, logColor } = given;
  const opts = completeConfig(given);
  makeDataDir(opts.dataDir);
  // First, so that two starts on a new directory cannot both make its secrets.
  const lock = DataDirLock.acquire(opts.dataDir);
  try {
    // The token next: a bad one stops the start before the store (and its checkpoint thread) exists.
    const admin = secretOf(opts.dataDir, opts.adminToken, 'PASARELA_ADMIN_TOKEN', ADMIN_TOKEN_FILE);
    return await startLocked(
      opts,
      { clock, random, logStream, logNotice, logColor, drivenClock: given.clock !== undefined && given.clock !== systemClock },
      admin,
      lock,
    );
  } catch (err) {
    lock.release();
    throw err;
  }
}

/** What only code gives startServer, beside the configuration. */
interface Runtime {
  clock: Clock;
  random?: () => number;
  logStream?: NodeJS.WritableStream;
  logNotice?: NodeJS.WritableStream;
  logColor?: boolean;
  /** A clock other than the system's: the background thread cannot follow it. */
  drivenClock: boolean;
}

async function startLocked(opts: ServeConfig, rt: Runtime, ownAdmin: { token: string; source: string }, lock: DataDirLock): Promise<RunningServer> {
  const { clock } = rt;
  let admin = ownAdmin;
  const app0: { log?: { error(o: unknown, m: string): void; warn(o: unknown, m: string): void; info(o: unknown, m: string): void } } = {};
  const tmp = new TempFiles(join(opts.dataDir, 'tmp'));
  const opened = await openStore(opts, tmp, (message) => app0.log?.error({ err: message }, 'background WAL checkpoint failed'));
  const { store, media } = opened;
  let core: Core | undefined;
  // What has started, stopped in reverse if the start fails further on (a port in use, a store that stops answering).
  const undo: Array<() => Promise<unknown>> = [];
  let redis: FailoverCounters | undefined;
  try {
    // Shared with the adapter, which reads callbackUrl when it registers an instance: set below once listening.
    const http: HttpGatewayOptions = {
      url: opts.gatewayUrl ?? '',
      key: opts.gatewayKey ?? '',
      callbackUrl: opts.gatewayCallbackUrl?.replace(/\/+$/, '') ?? '',
      secret: opts.gateway === 'sim' ? '' : secretOf(opts.dataDir, opts.gatewaySecret, 'PASARELA_GATEWAY_SECRET', GATEWAY_SECRET_FILE).token,
      timeoutMs: opts.gatewayTimeoutMs,
      sendTimeoutMs: opts.gatewaySendTimeoutMs,
      clock,
    };
    let tz = opts.tz ?? systemTz();
    if (opened.shared) {
      // Nodes of one store share these (core/shared-settings.ts): what this node was not given, it takes from the store.
      const mine = { adminToken: admin.token, gateway: opts.gateway, gatewaySecret: http.secret, callbackUrl: http.callbackUrl, tz };
      const shared = await sharedSettings(store, mine, {
        adminToken: Boolean(opts.adminToken),
        gateway: true,
        gatewaySecret: Boolean(opts.gatewaySecret),
        callbackUrl: Boolean(opts.gatewayCallbackUrl),
        tz: Boolean(opts.tz),
      });
      if (shared.adminToken !== admin.token) admin = { token: shared.adminToken, source: keepSecret(opts.dataDir, ADMIN_TOKEN_FILE, shared.adminToken) };
      http.secret = shared.gatewaySecret;
      http.callbackUrl = shared.callbackUrl;
      tz = shared.tz;
      await sharedCounters(store, countersSettings(opts.counters || 'memory', opts.countersPrefix));
    }
    const metrics = new Metrics({
      store,
      clock,
      storeCacheMs: opts.metricsCacheMs,
      info: { store: store.dialect, gateway: opts.gateway },
      onError: (err) => app0.log?.warn({ err }, 'the store gauges of /metrics could not be read: they keep their last values'),
    });
    // The same for this thread's gateway and the background thread's.
    const sim = { qrRotateMs: opts.simQrMs, deliveryMs: opts.simDeliveryMs, readMs: opts.simReadMs };
    // A fetch is part of a send: it gets the send's time.
    const mediaFetch = { allowPrivate: opts.allowPrivateUrls, timeoutMs: http.sendTimeoutMs };
    const gateway = countGatewayCalls(
      await createGateway(opts.gateway, store, clock, {
        sim,
        http,
        media: { tmp, ...mediaFetch },
        gatewayFetchesMedia: opts.gatewayFetchesMedia,
      }),
      metrics,
    );
    // `--gateway-url` is the server named `default`; lines without a server are on it.
    const servers =
      gateway.onServer && opts.gatewayUrl
        ? await registerDefaultServer(store, opts.gateway, opts.gatewayUrl.replace(/\/+$/, ''), opts.gatewayKey ?? '', clock.now())
        : undefined;
    // A log output that fails drops lines (counted), never stops the server (docs/logs.md).
    const logOut = logSink(rt.logStream ?? process.stdout, { onDrop: (n) => metrics.logLinesDropped.inc(n), notice: rt.logNotice });
    const logger = loggerOptions(opts.logLevel, opts.logFormat === 'pretty' ? prettyStream(logOut, { color: rt.logColor ?? false }) : logOut);
    const bus = new EventBus((err, event) => app0.log?.error({ err, event }, 'event listener failed'));
    countBusEvents(bus, metrics);
    const memory = new MemoryCounters(clock);
    let counters: Counters = memory;
    let countersSource = 'memory (this process)';
    if (opts.counters && opts.counters !== 'memory') {
      const primary = new RedisCounters({ url: opts.counters, prefix: opts.countersPrefix, clock, commandTimeoutMs: opts.countersTimeoutMs });
      // Logged through the app's logger once it exists; a failure at start is also in the banner.
      redis = new FailoverCounters(primary, memory, {
        clock,
        probeMs: opts.countersProbeMs,
        log: { warn: (o, m) => app0.log?.warn(o, m), info: (o, m) => app0.log?.info(o, m) },
      });
      await redis.start();
      counters = redis;
      countersSource = `${redactUrl(opts.counters)} (keys ${opts.countersPrefix}*)`;
    }
    core = {
      store,
      counters,
      gateway,
      clock,
      bus,
      config: {
        adminTokenHash: hashSecret(admin.token),
        authMaxFailures: opts.authMaxFailures,
        authWindowMs: opts.authWindowMs,
        tz,
        allowPrivateUrls: opts.allowPrivateUrls,
        webhookListenLeaseMs: opts.webhookListenLeaseMs,
        listenHost: opts.host,
        trustProxy: opts.trustProxy !== false,
        queue: { ...opts.queue, leaseMs: opts.queue.leaseMs ?? derivedLeaseMs(http.sendTimeoutMs) },
      },
      random: rt.random ?? Math.random,
    };
    // Base64 media of sends that ended while the process was down, or of a crash mid-request or mid-fetch.
    const swept = await sweepAcceptedMedia(store, media, clock.now());
    const onThread = opts.background === 'thread' && !opened.shared;
    if (onThread && (rt.drivenClock || rt.random)) throw new Error('the background thread runs on the system clock: a driven clock needs background inline');
    let worker: QueueWorker | undefined;
    const inFlight = new Set<string>();
    // A silent node's streams outlive its longest work: a send's claim, or a webhook attempt (headers, then body, each up to the timeout).
    const { webhookTimeoutMs } = opts;
    const sendMs = Math.max(core.config.queue.leaseMs, 2 * webhookTimeoutMs);
    const presence = { sendMs, beatMs: opts.nodeBeatMs, takeoverMarginMs: opts.nodeTakeoverMarginMs };
    const node = new NodePresence(store, clock, { ...presence, onError: (err) => app0.log?.error({ err }, 'node heartbeat failed') });
    await node.start();
    undo.push(() => node.stop());
    const webhookOptions = {
      retryBaseMs: opts.webhookRetryMs,
      timeoutMs: webhookTimeoutMs,
      concurrency: opts.webhookConcurrency,
      clientConcurrency: opts.webhookClientConcurrency,
      pollMs: opts.webhookPollMs,
      heldRetryMs: opts.webhookHeldRetryMs,
      listenerConcurrency: opts.webhookListenerConcurrency,
      listenerRetryMs: opts.webhookListenerRetryMs,
      listenerRecheckMs: opts.webhookListenerRecheckMs,
      revetMs: opts.webhookRevetMs,
      agentIdleMs: opts.webhookAgentIdleMs,
      userAgent: `pasarela-webhooks/${VERSION}`,
    };
    let thread: BackgroundThread | null = null;
    let dispatcher: WebhookDispatcher | null = null;
    if (onThread) {
      const gate = newGateBuffer();
      (store as SqliteStore).shareWrites(mainGate(gate));
      thread = new BackgroundThread(
        {
          dbFile: opened.source,
          tmpDir: tmp.dir,
          gate,
          gateway: opts.gateway,
          sim,
          http: plainHttp(http),
          media: mediaFetch,
          gatewayFetchesMedia: opts.gatewayFetchesMedia,
          config: core.config,
          webhooks: webhookOptions,
          queuePollMs: opts.queuePollMs,
          presence,
          resume: false,
        },
        {
          bus,
          metrics,
          log: (level, obj, msg) => app0.log?.[level](obj, msg),
          releaseClaims: () => store.releaseLeases(),
        },
        { restartMs: opts.backgroundRestartMs, healthyMs: opts.backgroundHealthyMs, clock },
      );
    } else {
      dispatcher = new WebhookDispatcher(core, node, { ...webhookOptions, onError: (err) => app0.log?.error({ err }, 'webhook delivery step failed') });
    }
    const webhooks: WebhookControl = thread ?? dispatcher!;
    const health = new LineHealth(core, node, {
      intervalMs: opts.healthIntervalMs,
      concurrency: opts.healthConcurrency,
      onError: (err, instancia) => app0.log?.error({ err, instancia }, 'line health check failed'),
    });
    const app = await buildApp({
      core,
      logger,
      trustProxy: opts.trustProxy,
      node,
      send: { tmp, media, queued: (celularId) => (thread ? thread.queued(celularId) : worker?.queued(celularId)), inFlight, keysAccepting: new Map(), node },
      webhooks,
      health,
      limits: opts.limits,
      metrics,
      publicUrl: opts.publicUrl,
    });
    app0.log = app.log;
    // Line state changes, messages ending in error, webhook receivers failing: info and warn lines (docs/logs.md).
    logBusEvents(bus, app.log);
    if (redis?.unreachable)
      app.log.warn(
        { counters: countersSource, err: redis.unreachable },
        "Redis counters unreachable at start: counting in this node's memory until Redis answers",
      );
    if (swept > 0) app.log.info({ swept }, 'removed the media of ended sends');
    if (servers?.adoptadas)
      app.log.info({ lineas: servers.adoptadas, servidor: servers.servidor.nombre }, 'lines without a gateway server were given to the --gateway-url server');
    if (!thread)
      worker = new QueueWorker(core, media, node, { pollMs: opts.queuePollMs, onError: (err) => app.log.error({ err }, 'queue worker step failed') });
    const sync = syncGatewayEvents(core, (err) => app.log.error({ err }, 'gateway event handling failed'));
    await gateway.start();
    if (dispatcher) {
      const d = dispatcher;
      d.start();
      undo.push(() => d.stop());
    }
    // Served alone (SQLite), nothing of this store is in flight before this process starts: every claim is stale.
    if (!opened.shared) await store.releaseLeases();
    if (thread) {
      const t = thread;
      await t.start();
      undo.push(() => t.stop());
    }
    if (worker) {
      const w = worker;
      w.start();
      undo.push(() => w.stop());
    }
    const recovery = new DirectRecovery(
      core,
      { files: media, inFlight },
      {
        intervalMs: opts.directRecoveryMs,
        onError: (err) => app.log.error({ err }, 'recovery of stranded direct sends failed'),
        onResolved: (c) => app.log.warn(c, 'direct sends left pending by a crash were resolved'),
      },
    );
    // Before listening. Served alone, every pending direct send is stranded; shared, only those whose slot ended long ago.
    await recovery.run(!opened.shared);
    recovery.start();
    undo.push(() => recovery.stop());
    const inbox = new InboxRetention(core, {
      retentionMs: opts.inboxRetentionMs,
      intervalMs: opts.inboxPurgeIntervalMs,
      onError: (err) => app.log.error({ err }, 'inbox retention purge failed'),
    });
    inbox.start();
    undo.push(() => inbox.stop());
    // Before the API's listener: a refused address stops the start with nothing listening.
    let metricsListener: MetricsListener | undefined;
    if (opts.metricsListen) {
      const { host: mHost, port: mPort } = opts.metricsListen;
      metricsListener = await listenMetrics(metrics, mHost, mPort, (err) => app.log.error({ err }, 'metrics scrape failed')).catch((err: unknown) => {
        throw new Error(`--metrics-listen ${mHost}:${mPort}: ${err instanceof Error ? err.message : String(err)}`);
      });
      const ml = metricsListener;
      undo.push(() => ml.close());
    }
    await app.listen({ host: opts.host, port: opts.port });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : opts.port;
    const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    if (!http.callbackUrl) http.callbackUrl = `http://${/^(0\.0\.0\.0|::)$/.test(opts.host) ? '127.0.0.1' : host}:${port}`;
    thread?.setCallbackUrl(http.callbackUrl);
    health.start();
    let closed: Promise<{ complete: boolean }> | undefined;
    return {
      url: `http://${host}:${port}`,
      dataDir: opts.dataDir,
      callbackUrl: opts.gateway === 'sim' ? null : http.callbackUrl,
      health,
      recovery,
      inbox,
      adminTokenSource: admin.source,
      core,
      schemaVersion: opened.schemaVersion,
      storeSource: opened.source,
      countersSource,
      metricsUrl: metricsListener?.url ?? null,
      background: thread ? 'thread' : 'inline',
      thread,
      queue: worker ?? null,
      drain: (reason) => app.markDraining(reason),
      close: () =>
        (closed ??= (async () => {
          // Readiness first: a load balancer stops sending here while the node still serves what it gets.
          app.markDraining('the node is stopping');
          app.markClosing();
          // At once, beside the rest: a receiver may take up to --webhook-timeout to answer, and what is abandoned stays due.
          const hooks = dispatcher?.stop();
          const graceful = (async () => {
            await app.close();
            await metricsListener?.close();
            await worker?.stop();
            await thread?.stop();
            await recovery.stop();
            await inbox.stop();
            await health.stop();
            await hooks;
            await sync.idle();
          })();
          const complete = await settlesWithin(graceful, opts.stopTimeoutMs);
          if (!complete) {
            // What is still in flight is abandoned: its claims run out, and another node or the next start sends it.
            graceful.catch(() => undefined);
            app.log.warn({ stopTimeoutMs: opts.stopTimeoutMs }, 'the graceful stop timed out: work still in flight is abandoned');
            app.server.closeAllConnections();
            await thread?.kill();
          }
          await node
            .stop()
            .catch((err: unknown) => app.log.warn({ err }, 'could not tell the store this node stopped: its streams are free once its heartbeat is stale'));
          await gateway.close();
          await opened.close();
          await redis?.close();
          lock.release();
          return { complete };
        })()),
    };
  } catch (err) {
    for (const stop of undo.reverse()) await stop().catch(() => undefined);
    await opened.close();
    await redis?.close();
    throw err;
  }
}

/** Whether `p` settles within `ms` (its failure counts as settled: the stop goes on). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function banner(s: RunningServer, gateway: string): string {
  const lines = [
    `pasarela ${VERSION} listening on ${s.url}`,
    `  data directory   ${s.dataDir}`,
    `  store            ${s.storeSource} (schema v${s.schemaVersion})`,
    `  gateway          ${gateway}${s.core.gateway.simulated ? ' (SIMULATED)' : ''}`,
    ...(s.callbackUrl ? [`  gateway events   ${s.callbackUrl}/gateway/${gateway}/<instance>`] : []),
    `  background       ${s.background === 'thread' ? 'queue, receipts and webhooks on a thread of their own' : 'queue, receipts and webhooks on the request thread'}`,
    `  counters         ${s.countersSource}${/unreachable/.test(s.core.counters.backend()) ? " - UNREACHABLE: counting in this process's memory until it answers" : ''}`,
    `  operator token   ${s.adminTokenSource}`,
    `  metrics          ${s.url}/metrics (operator token)${s.metricsUrl ? `, ${s.metricsUrl} (no credentials)` : ''}`,
    `  API reference    ${s.url}/docs (the page), ${s.url}/openapi.json (OpenAPI 3)`,
  ];
  if (s.core.gateway.simulated) {
    lines.push(
      '',
      '  !!! SIMULATOR: the sim gateway is an in-process stand-in for the messaging network.',
      '  !!! Nothing is delivered to real phones. Link a line with `pasarela celular qr ID`',
      '  !!! and `pasarela sim scan ID`; start with --gateway NAME to reach a real gateway.',
    );
  }
  return lines.join('\n') + '\n';
}
