import { InvalidArgumentError } from 'commander';
import { VIGENCIA_S } from '../core/api/limits.js';

/** The longest wait a timer holds (2^31-1 ms, about 24.8 days): Node fires a longer one at once. */
export const TIMER_MAX_MS = 2 ** 31 - 1;

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `24h`, `30m`, `45s`, `500ms`, or a bare number of milliseconds: a length of time that is no timer's (a retention). */
export function longDuration(value: string): number {
  const m = /^([0-9]+)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 24h, 30m, 45s or 500ms');
  const unit = UNITS[(m[2] ?? 'ms') as keyof typeof UNITS];
  return Number(m[1]) * unit;
}

/**
 * A duration something waits for (a timeout, an interval): at most
 * TIMER_MAX_MS, else a usage error. A longer one would not wait at all.
 */
export function duration(value: string): number {
  return timerMs(longDuration(value));
}

/** Milliseconds a timer can hold, else the usage error every duration flag gives. */
export function timerMs(ms: number): number {
  if (ms > TIMER_MAX_MS) throw new InvalidArgumentError('too long: a wait may be at most 24d (24.8 days, the longest a timer holds)');
  return ms;
}

/**
 * A send's validity (`--valid-for`, the `send bulk` column `vigencia`): `5m`, `1h`, `90s`, or a bare number of
 * seconds (the API field's unit), as whole seconds within VIGENCIA_S. Anything else is a usage error.
 */
export function validFor(value: string): number {
  const v = value.trim();
  const ms = /^[0-9]+$/.test(v) ? Number(v) * 1000 : longDuration(v);
  const { min, max } = VIGENCIA_S;
  if (ms % 1000 !== 0 || ms < min * 1000 || ms > max * 1000)
    throw new InvalidArgumentError(`expected a validity of whole seconds from ${min}s to ${max / 3600}h, such as 5m, 90s or 1h`);
  return ms / 1000;
}

/** `MIN-MAX` milliseconds (or one number for a fixed gap). */
export function msRange(value: string): [number, number] {
  const m = /^([0-9]+)(?:-([0-9]+))?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected MIN-MAX in milliseconds, such as 1000-5000');
  const min = timerMs(Number(m[1]));
  const max = m[2] === undefined ? min : timerMs(Number(m[2]));
  if (max < min) throw new InvalidArgumentError('MAX must not be below MIN');
  return [min, max];
}
