import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { loopLag } from '../../core/time/loop-lag.js';

let registry: Registry | undefined;

/** prom-client's event-loop metrics, which this module reports itself (names and meaning kept). */
const LAG = 'nodejs_eventloop_lag_seconds';
const LAG_STATS = {
  min: (): number => loopLag.min,
  max: (): number => loopLag.max,
  mean: (): number => loopLag.mean,
  stddev: (): number => loopLag.stddev,
  p50: (): number => loopLag.percentile(50),
  p90: (): number => loopLag.percentile(90),
  p99: (): number => loopLag.percentile(99),
};

/** A monitor's period that never comes (setTimeout's ceiling): prom-client's own lag timer is never armed. */
const NEVER_MS = 2 ** 31 - 1;

/**
 * The process metrics (CPU, memory, event loop lag, GC, handles): prom-client's
 * defaults, collected once per process. Each server's registry merges this
 * one, so several servers in one process (tests) do not each start a GC
 * observer. The event loop's lag is this module's (D-190): its histogram is
 * sampled by the node's heartbeat (core/time/loop-lag.ts) instead of a timer
 * that woke an idle node every second, and the lag gauge is measured at each
 * scrape, as prom-client did.
 */
export function processRegistry(): Registry {
  if (!registry) {
    const r = new Registry();
    registry = r;
    collectDefaultMetrics({ register: r, eventLoopMonitoringPrecision: NEVER_MS });
    r.removeSingleMetric(LAG);
    for (const stat of Object.keys(LAG_STATS)) r.removeSingleMetric(`nodejs_eventloop_lag_${stat}_seconds`);
    new Gauge({
      name: LAG,
      help: 'Lag of event loop in seconds.',
      registers: [r],
      async collect() {
        // Set before this collect's first await: a scrape reads every metric at once, in the order registered.
        // Since the last scrape; none when no beat came between two scrapes (the last values stay).
        if (loopLag.count > 0) {
          for (const [gauge, read] of stats) gauge.set(read() / 1e9);
          loopLag.reset();
        }
        const start = performance.now();
        await new Promise((resolve) => setImmediate(resolve));
        this.set((performance.now() - start) / 1000);
      },
    });
    // After the gauge whose collect sets them.
    const stats = Object.entries(LAG_STATS).map(
      ([stat, read]) =>
        [new Gauge({ name: `nodejs_eventloop_lag_${stat}_seconds`, help: `The ${stat} of the event loop's lag, in seconds.`, registers: [r] }), read] as const,
    );
  }
  return registry;
}
