/**
 * Time is injected so windows, blocks, rotations and retries are testable in
 * milliseconds. Two readings: `now()`, wall time, for what is recorded or
 * compared with records (windows, expiries, leases, retry times); and
 * `ticks()`, monotonic, for cadences and durations (a recheck after a
 * second, a poll, how long an attempt took), which a step of the wall clock
 * must neither stretch nor cut.
 */
export interface Clock {
  now(): number;
  ticks(): number;
}

export const systemClock: Clock = { now: () => Date.now(), ticks: () => performance.now() };

/**
 * A clock whose wall time only moves when told to; used by tests and by
 * nothing in production. Its ticks are real: the cadences they measure are
 * driven by real timers (a heartbeat, a poll), which moving the wall time
 * does not fire.
 */
export class ManualClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  ticks(): number {
    return performance.now();
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(ms: number): void {
    this.t = ms;
  }
}

/** ISO-8601 in UTC, the one timestamp format of every response. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
