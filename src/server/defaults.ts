import { SIM_DEFAULTS } from '../gateways/sim.js';

/** Defaults of `serve`, apart from the server code so the CLI can show them without loading it. */
export const SERVE_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  gateway: 'sim',
  logLevel: 'info',
  trustProxy: false,
  authMaxFailures: 20,
  authWindowMs: 60_000,
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
} as const;
