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
    // The event-loop lag is sampled every 100 ms, not prom-client's 10: its timer woke an idle node
    // 100 times a second (+3-4 ms/s of CPU per node, which showed in the several-nodes figure).
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  }
  return registry;
}
