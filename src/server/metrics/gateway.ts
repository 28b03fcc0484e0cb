import { GatewayFailure, type Gateway } from '../../core/ports/gateway.js';
import type { GatewayOperation, GatewayOutcome } from './metrics.js';

/** The port's calls that reach the gateway, and their operation label. */
const OPERATIONS = new Map<PropertyKey, GatewayOperation>(
  Object.entries({
    ensureInstance: 'ensure_instance',
    connect: 'connect',
    pairingCode: 'pairing_code',
    status: 'status',
    statuses: 'status',
    logout: 'logout',
    restart: 'restart',
    profile: 'profile',
    deleteInstance: 'delete_instance',
    send: 'send',
    sentMessage: 'sent_message',
  } satisfies Partial<Record<keyof Gateway, GatewayOperation>>),
);

/** Where counted calls go: the metrics of this thread, or a message to the request thread's (server/background/). */
export interface GatewayCallSink {
  gatewayCall(operation: GatewayOperation, outcome: GatewayOutcome, seconds: number): void;
}

const outcomeOf = (err: unknown): GatewayOutcome => (err instanceof GatewayFailure ? err.kind : 'error');

/**
 * The gateway port, counted: every call the core makes (by operation,
 * outcome and time taken), the adapters untouched. A proxy rather than a
 * wrapper class, so whatever else the adapter offers (the simulator's
 * controls, its class for instanceof) stays reachable; calls an adapter
 * makes on itself are not counted, only the core's. The adapters of single
 * gateway servers (`onServer`) are counted the same way.
 */
export function countGatewayCalls(gateway: Gateway, m: GatewayCallSink): Gateway {
  const servers = new WeakMap<Gateway, Gateway>();
  // What get() handed out per property, made again when the property changes (a test's spy).
  const made = new Map<PropertyKey, { of: unknown; f: unknown }>();
  const timed = (operation: GatewayOperation, fn: (...args: unknown[]) => Promise<unknown>) => {
    return async (...args: unknown[]) => {
      const t0 = performance.now();
      let outcome: GatewayOutcome = 'ok';
      try {
        return await fn.apply(gateway, args);
      } catch (err) {
        outcome = outcomeOf(err);
        throw err;
      } finally {
        m.gatewayCall(operation, outcome, (performance.now() - t0) / 1000);
      }
    };
  };
  return new Proxy(gateway, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const hit = made.get(prop);
      if (hit?.of === value) return hit.f;
      const operation = OPERATIONS.get(prop);
      let f: unknown;
      if (operation) f = timed(operation, value as (...a: unknown[]) => Promise<unknown>);
      else if (prop === 'onServer') {
        f = async (id: number) => {
          const gw = await (value as (id: number) => Promise<Gateway>).call(target, id);
          let counted = servers.get(gw);
          if (!counted) servers.set(gw, (counted = countGatewayCalls(gw, m)));
          return counted;
        };
      } else f = (value as (...a: unknown[]) => unknown).bind(target);
      made.set(prop, { of: value, f });
      return f;
    },
  });
}
