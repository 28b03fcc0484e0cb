/** Time is injected so windows, blocks, rotations and retries are testable in milliseconds. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; used by tests and by nothing in production. */
export class ManualClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
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
