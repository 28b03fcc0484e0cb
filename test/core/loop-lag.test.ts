import { describe, expect, it } from 'vitest';
import { lagSampler, loopLag } from '../../src/core/time/loop-lag.js';
import { processRegistry } from '../../src/server/metrics/process.js';

/** One sample's value from the text exposition. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`${name} not in the scrape`);
  return Number(line.slice(name.length + 1));
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the event loop lag sampled by a periodic timer (D-190)', () => {
  it('records how much later than its period each call comes, and the metrics report it per scrape, keeping the last values when none came', async () => {
    const registry = processRegistry();
    await registry.metrics();
    loopLag.reset();
    const sample20 = lagSampler(20);
    // Called 60 ms after the last: 40 ms late. Then at once: early, read as on time (1 ns).
    await wait(60);
    sample20();
    sample20();
    expect(loopLag.count).toBe(2);
    expect(loopLag.max / 1e6).toBeGreaterThanOrEqual(39);
    expect(loopLag.min).toBe(1);

    const first = await registry.metrics();
    expect(sample(first, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.039);
    expect(sample(first, 'nodejs_eventloop_lag_min_seconds')).toBeLessThan(0.000001);
    expect(sample(first, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0.039);
    // Measured at the scrape itself: a turn of the loop.
    expect(sample(first, 'nodejs_eventloop_lag_seconds')).toBeGreaterThan(0);
    expect(loopLag.count).toBe(0);

    // No sample between two scrapes: the last values stay rather than an empty histogram's.
    const second = await registry.metrics();
    expect(sample(second, 'nodejs_eventloop_lag_max_seconds')).toBe(sample(first, 'nodejs_eventloop_lag_max_seconds'));
    // Each name once: prom-client's own lag metrics are replaced, not doubled.
    expect(second.split('\n').filter((l) => l.startsWith('# TYPE nodejs_eventloop_lag_p99_seconds'))).toHaveLength(1);
  });
});
