import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;

/**
 * The process metrics (CPU, memory, event loop lag, GC, handles): prom-client's
 * defaults, collected once per process. Each server's registry merges this
 * one, so several servers in one process (tests) do not each start a GC
 * observer and an event-loop monitor.
 */
export function processRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}
