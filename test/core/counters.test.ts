import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';

describe('MemoryCounters', () => {
  it('counts within a fixed window and resets after it', async () => {
    const clock = new ManualClock(1_000);
    const c = new MemoryCounters(clock);
    expect(await c.incr('a', 100)).toEqual({ count: 1, resetAt: 1_100 });
    clock.advance(50);
    expect(await c.incr('a', 100)).toEqual({ count: 2, resetAt: 1_100 });
    clock.advance(50);
    expect(await c.get('a')).toBeNull();
    expect(await c.incr('a', 100)).toEqual({ count: 1, resetAt: 1_200 });
  });

  it('keeps memory bounded: expired windows are swept', async () => {
    const clock = new ManualClock(0);
    const c = new MemoryCounters(clock);
    for (let i = 0; i < 5000; i++) await c.incr(`k${i}`, 10);
    expect(c.size()).toBe(5000);
    clock.advance(11);
    for (let i = 0; i < 1500; i++) await c.incr('live', 10);
    expect(c.size()).toBeLessThan(5);
  });

  it('under a steady stream of new keys, live windows plus a few not yet swept: no pile-up', async () => {
    const clock = new ManualClock(0);
    const c = new MemoryCounters(clock);
    for (let i = 0; i < 20_000; i++) {
      await c.incr(`k${i}`, 100);
      clock.advance(1);
    }
    // 100 keys are live at any moment; the rolling sweep keeps the rest within a small multiple.
    expect(c.size()).toBeLessThan(300);
  });
});
