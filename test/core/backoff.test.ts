import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/core/time/backoff.js';
import { queueBackoff } from '../../src/core/queue/queue-worker.js';
import { RETRY_FACTORS, webhookBackoff } from '../../src/webhooks/sign.js';

/** The one backoff (src/core/time/backoff.ts): base x factor of the attempt, ±20%, repeated or ended past the table. */
const mid = () => 0.5;
const low = () => 0;
const high = () => 0.999999;

describe('backoffMs', () => {
  it('waits base x the factor of the attempts made, unjittered at the middle of the random range', () => {
    const b = { baseMs: 100, factors: [1, 3, 10], past: 'stop' as const };
    expect([1, 2, 3].map((n) => backoffMs(b, n, mid))).toEqual([100, 300, 1000]);
  });

  it('jitters by 20% either way', () => {
    const b = { baseMs: 1000, factors: [1], past: 'stop' as const };
    expect(backoffMs(b, 1, low)).toBe(800);
    expect(backoffMs(b, 1, high)).toBe(1200);
  });

  it('past the table: the last factor again (repeat) or null (stop)', () => {
    expect(backoffMs({ baseMs: 10, factors: [1, 2], past: 'repeat' }, 9, mid)).toBe(20);
    expect(backoffMs({ baseMs: 10, factors: [1, 2], past: 'stop' }, 3, mid)).toBeNull();
  });

  it('a count below one is the first attempt', () => {
    expect(backoffMs({ baseMs: 10, factors: [1, 2], past: 'stop' }, 0, mid)).toBe(10);
  });
});

describe('the two schedules', () => {
  it('queued sends: 5 s doubling up to 10 min, then 10 min until the TTL', () => {
    const b = queueBackoff(5000);
    expect(Array.from({ length: 10 }, (_, i) => backoffMs(b, i + 1, mid))).toEqual([
      5000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 600_000, 600_000, 600_000,
    ]);
  });

  it('webhooks: the base times 1, 60, 360, 1440, 3600, 7200, 7200, then fallido', () => {
    const b = webhookBackoff(5000);
    expect(RETRY_FACTORS.map((_, i) => backoffMs(b, i + 1, mid))).toEqual(RETRY_FACTORS.map((f) => f * 5000));
    expect(backoffMs(b, RETRY_FACTORS.length + 1, mid)).toBeNull();
  });

  it('shrink with their base: a test runs the whole webhook schedule in milliseconds', () => {
    const total = RETRY_FACTORS.reduce((sum, _, i) => sum + backoffMs(webhookBackoff(0.001), i + 1, high)!, 0);
    expect(total).toBeLessThan(100);
  });
});
