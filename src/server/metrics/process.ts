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
    // The event-loop lag is sampled once a second, not prom-client's every 10 ms: its timer is the one
    // thing that would wake an idle node 10-100 times a second, at 0.3-1 ms of CPU a wake on a shared
    // VM (D-188). A stall of the loop still shows in the histogram when it holds a sample back; the
    // lag gauge (nodejs_eventloop_lag_seconds) is measured at each scrape.
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  }
  return registry;
}
