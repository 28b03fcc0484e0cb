import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';

/**
 * The event loop's lag as this thread's own periodic timers meet it (D-190):
 * each call of one comes this much later than its period after the last. A
 * timer of its own to sample the lag (prom-client's, once a second) was an
 * idle node's most frequent wake-up; the node's heartbeat samples it instead,
 * every 2 s by default, so a stall still shows when it holds a beat back.
 * Nanoseconds, as node's own event-loop delay histogram.
 */
export const loopLag: RecordableHistogram = createHistogram();

/** For a timer every `periodMs`: call the result at each call of the timer. */
export function lagSampler(periodMs: number): () => void {
  let last = performance.now();
  return () => {
    const now = performance.now();
    // A histogram takes positive integers only: on time reads as 1 ns.
    loopLag.record(Math.max(1, Math.round((now - last - periodMs) * 1e6)));
    last = now;
  };
}
