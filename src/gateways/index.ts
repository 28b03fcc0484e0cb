import type { Clock } from '../core/clock.js';
import type { Gateway, Store } from '../core/ports.js';
import { SimGateway, type SimOptions } from './sim.js';

/** Gateways this build can drive; `serve --gateway NAME` picks one. */
export const GATEWAYS = ['sim'] as const;
export type GatewayName = (typeof GATEWAYS)[number];

export interface GatewayOptions {
  sim: SimOptions;
}

export function createGateway(name: string, store: Store, clock: Clock, opts: GatewayOptions): Gateway {
  if (name === 'sim') return new SimGateway(store, clock, opts.sim);
  throw new Error(`unknown gateway "${name}"; this build supports: ${GATEWAYS.join(', ')}`);
}
