import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/core/time/retry-after.js';

/** The one Retry-After parser (src/core/time/retry-after.ts): seconds or an HTTP date, against the caller's clock time. */
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('retryAfterMs', () => {
  it('delay-seconds, surrounding spaces allowed', () => {
    expect(retryAfterMs('7', NOW)).toBe(7000);
    expect(retryAfterMs(' 120 ', NOW)).toBe(120_000);
    expect(retryAfterMs('0', NOW)).toBe(0);
  });

  it('an HTTP date: how far it is from the given now, not from the system clock', () => {
    expect(retryAfterMs('Thu, 01 Jan 2026 12:00:30 GMT', NOW)).toBe(30_000);
    expect(retryAfterMs('Thu, 01 Jan 2026 12:00:30 GMT', NOW + 10_000)).toBe(20_000);
  });

  it('a date already past is 0', () => {
    expect(retryAfterMs('Thu, 01 Jan 2026 11:00:00 GMT', NOW)).toBe(0);
  });

  it('absent, empty or unreadable: undefined', () => {
    expect(retryAfterMs(undefined, NOW)).toBeUndefined();
    expect(retryAfterMs('', NOW)).toBeUndefined();
    expect(retryAfterMs('soon', NOW)).toBeUndefined();
    expect(retryAfterMs('-5', NOW)).toBeUndefined();
    expect(retryAfterMs('1.5', NOW)).toBeUndefined();
  });

  it('a repeated header: the first value', () => {
    expect(retryAfterMs(['3', '9'], NOW)).toBe(3000);
  });
});
