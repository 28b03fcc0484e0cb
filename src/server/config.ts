import type { QueueConfig } from '../core/context.js';
import type { BrakeConfig } from '../core/accounts/line-brake.js';
import type { PresenceTiming } from '../core/nodes/node-presence.js';
import type { DispatcherOptions } from '../webhooks/dispatcher.js';
import type { LogFormat } from './log-format.js';
import { knobDefaults, type KnobValues, type TrustProxy } from './config-knobs.js';

/*
 * The configuration object of `serve` (ServeConfig): made from the settings
 * table (config-knobs.ts) by the CLI, or from SERVE_DEFAULTS and a few
 * settings by a test, and passed down. Free of server code, like the table.
 */

/** The queue's settings as `serve` takes them: without `leaseMs` the claim is derived from the send timeout. */
export type QueueSettings = Omit<QueueConfig, 'leaseMs'> & { leaseMs?: number };

/** How requests may arrive (docs/decisions.md D-19). */
export interface RequestLimits {
  headerTimeoutMs: number;
  /** The body must start within this, then keep at least bodyMinRate bytes/s. */
  bodyTimeoutMs: number;
  bodyMinRate: number;
  requestTimeoutMs: number;
  /** Body bytes in flight without a verified credential, per address and in all. */
  unauthPerAddress: number;
  unauthServerWide: number;
}

/**
 * The configuration object of `serve`: built once, at the edge (the CLI,
 * from flags, environment and SERVE_KNOBS; a test, from SERVE_DEFAULTS and
 * what it shrinks), and passed down. Each field is the setting of the same
 * name in SERVE_KNOBS; the queue's and the request limits' are grouped as
 * their modules take them.
 */
export interface ServeConfig {
  host: string;
  port: number;
  /** The URL clients reach this server at (http(s), no trailing slash): the API document's server. */
  publicUrl?: string;
  dataDir: string;
  gateway: string;
  gatewayUrl?: string;
  gatewayKey?: string;
  /** baileys: the network's web socket; absent, the real one. */
  baileysWsUrl?: string;
  nodeUrl?: string;
  /** baileys: the key file of the lines' authentication state. */
  engineKeyFile?: string;
  gatewayCallbackUrl?: string;
  gatewaySecret?: string;
  gatewayTimeoutMs: number;
  /** A send's call (and its media fetch): 4 times the gateway timeout. */
  gatewaySendTimeoutMs: number;
  healthIntervalMs: number;
  healthConcurrency: number;
  limits: RequestLimits;
  store: string;
  counters: string;
  countersPrefix: string;
  countersTimeoutMs: number;
  countersProbeMs: number;
  drainDelayMs: number;
  /** After the drain delay, how long a graceful stop waits for work in flight before abandoning it. */
  stopTimeoutMs: number;
  logLevel: string;
  /** `json` (in-process servers) or `pretty`: readable lines (log-format.ts). */
  logFormat?: LogFormat;
  metricsListen?: { host: string; port: number };
  metricsCacheMs: number;
  inboxRetentionMs: number;
  inboxPurgeIntervalMs: number;
  eventPruneIntervalMs: number;
  adminToken?: string;
  trustProxy: TrustProxy;
  authMaxFailures: number;
  authWindowMs: number;
  tz?: string;
  allowPrivateUrls: boolean;
  gatewayFetchesMedia: boolean;
  queue: QueueSettings;
  /** The lines' brake thresholds (core/accounts/line-brake.ts). */
  brake: BrakeConfig;
  queuePollMs: number;
  webhookRetryMs: number;
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  webhookClientConcurrency: number;
  webhookPollMs: number;
  webhookHeldRetryMs: number;
  webhookListenLeaseMs: number;
  webhookListenerConcurrency: number;
  webhookListenerRetryMs: number;
  webhookListenerRecheckMs: number;
  webhookRevetMs: number;
  webhookAgentIdleMs: number;
  nodeBeatMs: number;
  nodeTakeoverMarginMs: number;
  engineSettleMs: number;
  backgroundRestartMs: number;
  backgroundHealthyMs: number;
  /**
   * Where the queue worker, the receipts of its sends and the webhook
   * dispatcher run: `thread` (a thread of their own, SQLite only; `serve`'s
   * default) or `inline` (the request thread: PostgreSQL, and tests that
   * drive a clock or the simulator's in-process controls).
   */
  background: 'thread' | 'inline';
  simQrMs: number;
  simDeliveryMs: number;
  simReadMs: number;
  directRecoveryMs: number;
  checkpointMs: number;
}

/** A queued message's claim without `--queue-lease`: it must outlive the longest send (a media fetch and the gateway call, each up to the send timeout), and is never under a minute. */
export const derivedLeaseMs = (sendTimeoutMs: number): number => Math.max(60_000, 2 * sendTimeoutMs + 10_000);

/*
 * Each module's settings, read from the configuration in one place and
 * handed whole to the module (and, plain, to the background thread).
 */

/** The webhook dispatcher's settings (webhooks/dispatcher.ts). */
export function webhookSettings(c: ServeConfig, userAgent: string): Omit<DispatcherOptions, 'onError'> {
  return {
    retryBaseMs: c.webhookRetryMs,
    timeoutMs: c.webhookTimeoutMs,
    concurrency: c.webhookConcurrency,
    clientConcurrency: c.webhookClientConcurrency,
    pollMs: c.webhookPollMs,
    heldRetryMs: c.webhookHeldRetryMs,
    listenerConcurrency: c.webhookListenerConcurrency,
    listenerRetryMs: c.webhookListenerRetryMs,
    listenerRecheckMs: c.webhookListenerRecheckMs,
    revetMs: c.webhookRevetMs,
    agentIdleMs: c.webhookAgentIdleMs,
    userAgent,
  };
}

/**
 * The node's presence timing (core/nodes/node-presence.ts): a silent node's
 * streams outlive its longest work, a send's claim (`leaseMs`) or a webhook
 * attempt (headers, then body, each up to the timeout).
 */
export function presenceSettings(c: ServeConfig, leaseMs: number): PresenceTiming {
  return { sendMs: Math.max(leaseMs, 2 * c.webhookTimeoutMs), beatMs: c.nodeBeatMs, takeoverMarginMs: c.nodeTakeoverMarginMs };
}

/** The configuration object the table's values make. */
export function configOf(v: KnobValues, dataDir: string): ServeConfig {
  const [gapMinMs, gapMaxMs] = v.queueGapMs;
  return {
    host: v.host,
    port: v.port,
    publicUrl: v.publicUrl?.replace(/\/+$/, ''),
    dataDir: v.dataDir ?? dataDir,
    gateway: v.gateway,
    gatewayUrl: v.gatewayUrl,
    gatewayKey: v.gatewayKey,
    baileysWsUrl: v.baileysWsUrl,
    nodeUrl: v.nodeUrl?.replace(/\/+$/, ''),
    engineKeyFile: v.engineKeyFile,
    gatewayCallbackUrl: v.gatewayCallbackUrl,
    gatewaySecret: v.gatewaySecret,
    gatewayTimeoutMs: v.gatewayTimeoutMs,
    gatewaySendTimeoutMs: 4 * v.gatewayTimeoutMs,
    healthIntervalMs: v.healthIntervalMs,
    healthConcurrency: v.healthConcurrency,
    limits: {
      headerTimeoutMs: v.headerTimeoutMs,
      bodyTimeoutMs: v.bodyTimeoutMs,
      bodyMinRate: v.bodyMinRate,
      requestTimeoutMs: v.requestTimeoutMs,
      unauthPerAddress: v.unauthPerAddress,
      unauthServerWide: v.unauthServerWide,
    },
    store: v.store,
    counters: v.counters,
    countersPrefix: v.countersPrefix,
    countersTimeoutMs: v.countersTimeoutMs,
    countersProbeMs: v.countersProbeMs,
    drainDelayMs: v.drainDelayMs,
    stopTimeoutMs: v.stopTimeoutMs,
    logLevel: v.logLevel,
    logFormat: v.logFormat === 'pretty' || v.logFormat === 'json' ? v.logFormat : undefined,
    metricsListen: v.metricsListen ?? undefined,
    metricsCacheMs: v.metricsCacheMs,
    inboxRetentionMs: v.inboxRetentionMs,
    inboxPurgeIntervalMs: v.inboxPurgeIntervalMs,
    eventPruneIntervalMs: v.eventPruneIntervalMs,
    adminToken: v.adminToken,
    trustProxy: v.trustProxy,
    authMaxFailures: v.authMaxFailures,
    authWindowMs: v.authWindowMs,
    tz: v.tz,
    allowPrivateUrls: v.allowPrivateUrls,
    gatewayFetchesMedia: v.gatewayFetchesMedia,
    queue: {
      gapMinMs,
      gapMaxMs,
      ttlMs: v.queueTtlMs,
      maxPending: v.queueMaxPending,
      ...(v.queueLeaseMs === undefined ? {} : { leaseMs: v.queueLeaseMs }),
      retryMs: v.queueRetryMs,
      rateLimitPauseMs: v.queueRateLimitPauseMs,
      recheckMs: v.queueRecheckMs,
      inactiveHoldMs: v.queueInactiveHoldMs,
    },
    brake: { minMensajes: v.brakeMinMessages, fallosPct: v.brakeFailurePct, rechazadosPct: v.brakeRefusedPct, sinEntregarPct: v.brakeUndeliveredPct },
    queuePollMs: v.queuePollMs,
    webhookRetryMs: v.webhookRetryMs,
    webhookTimeoutMs: v.webhookTimeoutMs,
    webhookConcurrency: v.webhookConcurrency,
    webhookClientConcurrency: v.webhookClientConcurrency,
    webhookPollMs: v.webhookPollMs,
    webhookHeldRetryMs: v.webhookHeldRetryMs,
    webhookListenLeaseMs: v.webhookListenLeaseMs,
    webhookListenerConcurrency: v.webhookListenerConcurrency,
    webhookListenerRetryMs: v.webhookListenerRetryMs,
    webhookListenerRecheckMs: v.webhookListenerRecheckMs,
    webhookRevetMs: v.webhookRevetMs,
    webhookAgentIdleMs: v.webhookAgentIdleMs,
    nodeBeatMs: v.nodeBeatMs,
    nodeTakeoverMarginMs: v.nodeTakeoverMarginMs,
    engineSettleMs: v.engineSettleMs,
    backgroundRestartMs: v.backgroundRestartMs,
    backgroundHealthyMs: v.backgroundHealthyMs,
    background: v.background === 'inline' ? 'inline' : 'thread',
    simQrMs: v.simQrMs,
    simDeliveryMs: v.simDeliveryMs,
    simReadMs: v.simReadMs,
    directRecoveryMs: v.directRecoveryMs,
    checkpointMs: v.checkpointMs,
  };
}

/**
 * The table's defaults as a configuration object, for servers started in
 * process (tests, benchmarks): those run the background work inline unless
 * they ask, and log JSON. Their data directory is theirs to give.
 */
export const SERVE_DEFAULTS: Omit<ServeConfig, 'dataDir'> = (({ dataDir: _d, ...rest }) => ({ ...rest, background: 'inline' as const }))(
  configOf(knobDefaults(), ''),
);

/** What a caller of startServer may leave out: everything but the data directory, the queue's and the limits' fields one by one. */
export type ServeOverrides = Partial<Omit<ServeConfig, 'queue' | 'limits'>> & {
  dataDir: string;
  queue?: Partial<QueueSettings>;
  limits?: Partial<RequestLimits>;
};

/** The whole configuration: what was given over SERVE_DEFAULTS (a send timeout not given is 4 times the gateway timeout). */
export function completeConfig(overrides: ServeOverrides): ServeConfig {
  const given = defined(overrides);
  const gatewayTimeoutMs = given.gatewayTimeoutMs ?? SERVE_DEFAULTS.gatewayTimeoutMs;
  return {
    ...SERVE_DEFAULTS,
    ...given,
    gatewayTimeoutMs,
    gatewaySendTimeoutMs: given.gatewaySendTimeoutMs ?? 4 * gatewayTimeoutMs,
    dataDir: overrides.dataDir,
    queue: { ...SERVE_DEFAULTS.queue, ...defined(given.queue ?? {}) },
    limits: { ...SERVE_DEFAULTS.limits, ...defined(given.limits ?? {}) },
  };
}

/** `o` without the fields whose value is undefined: given as undefined is not given. */
function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
