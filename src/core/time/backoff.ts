/**
 * The backoff of durable retries (queued sends, webhook deliveries): after
 * the n-th failed attempt, wait `baseMs` times the n-th factor, ±20% so the
 * retries of many failures at once spread out instead of arriving together.
 * Past the last factor a schedule either keeps to it (`repeat`: queued sends,
 * until their TTL) or ends (`stop`: a webhook delivery becomes `fallido`).
 * Pure: the jitter's source is an argument, and so is the base (a setting of
 * `serve`, shrunk to milliseconds in tests). A listener's copy (best effort,
 * three tries) and the background thread's restarts keep plain schedules of
 * their own: nothing is persisted for them and no crowd retries together.
 */
export interface Backoff {
  baseMs: number;
  factors: readonly number[];
  past: 'repeat' | 'stop';
}

/** The delay before the next attempt, `attemptsMade` having failed (1 for the first); null when the schedule has ended. */
export function backoffMs(b: Backoff, attemptsMade: number, random: () => number): number | null {
  const i = Math.max(1, attemptsMade) - 1;
  const f = i < b.factors.length ? b.factors[i] : b.past === 'repeat' ? b.factors[b.factors.length - 1] : undefined;
  if (f === undefined) return null;
  return Math.round(b.baseMs * f * (0.8 + 0.4 * random()));
}
