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
} as const;
