import { SIM_DEFAULTS } from '../gateways/sim.js';

const MiB = 1024 * 1024;

/**
 * How requests may arrive (docs/decisions.md, "Request bodies"): header and
 * body timeouts (the body must start within bodyTimeoutMs, then keep at
 * least bodyMinRate bytes/s), a hard cap on the whole request, and the body
 * bytes in flight without a verified credential, per address and in all.
 */
export const REQUEST_LIMITS = {
  headerTimeoutMs: 20_000,
  bodyTimeoutMs: 20_000,
  bodyMinRate: 500,
  requestTimeoutMs: 600_000,
  unauthPerAddress: 128 * MiB,
  unauthServerWide: 512 * MiB,
};

export type RequestLimits = typeof REQUEST_LIMITS;

/**
 * Where `serve` runs the queue worker, its receipts and webhook delivery
 * (`--background`): a thread of their own on SQLite. Apart from
 * SERVE_DEFAULTS, whose other values in-process servers (tests) take as they
 * are: those run inline unless they ask.
 */
export const BACKGROUND_DEFAULT = 'thread';

/** Defaults of `serve`, apart from the server code so the CLI can show them without loading it. */
export const SERVE_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  gateway: 'sim',
  logLevel: 'info',
  trustProxy: false,
  authMaxFailures: 20,
  authWindowMs: 60_000,
  /** A graceful stop: /ready says draining this long before the listener closes. */
  drainDelayMs: 0,
  simQrMs: SIM_DEFAULTS.qrRotateMs,
  simDeliveryMs: SIM_DEFAULTS.deliveryMs,
  simReadMs: SIM_DEFAULTS.readMs,
  /** A webhook attempt without an answer (headers, then body) within this is a failure. */
  webhookTimeoutMs: 10_000,
  /** Webhook deliveries in flight at once, across clients. */
  webhookConcurrency: 64,
  /** Webhook deliveries in flight at once for one client. */
  webhookClientConcurrency: 16,
  /** How often the event journal is looked at without a poke (a safety net; new events poke). */
  webhookPollMs: 500,
  /** How long incoming messages stay in the inbox (recorded before now minus this are purged); 0 keeps them for ever. */
  inboxRetentionMs: 90 * 86_400_000,
  /** How often the inbox's purge runs (it also runs at start). */
  inboxPurgeIntervalMs: 600_000,
} as const;
