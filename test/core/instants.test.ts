import { expect, it } from 'vitest';
import { parseInstant } from '../../src/core/history/historial.js';

/** RFC 3339 instants for the listings' desde/hasta (core/history/historial.ts): what a cron job passes. */
it('reads Z and offsets as the same instant; T, t or a space between date and time', () => {
  const t = Date.UTC(2026, 10, 26, 10);
  for (const s of [
    '2026-11-26T10:00:00Z',
    '2026-11-26t10:00:00z',
    '2026-11-26 10:00:00Z',
    '2026-11-26T04:00:00-06:00',
    '2026-11-26T15:30:00+05:30',
    '2026-11-26T10:00:00+00:00',
  ]) {
    expect(parseInstant(s), s).toBe(t);
  }
  expect(parseInstant('2026-11-26T23:30:00-01:00')).toBe(Date.UTC(2026, 10, 27, 0, 30));
});

it('keeps fractions to the millisecond, rounding up, so a bound never takes in a millisecond before it', () => {
  const t = Date.UTC(2026, 10, 26, 10);
  expect(parseInstant('2026-11-26T10:00:00.5Z')).toBe(t + 500);
  expect(parseInstant('2026-11-26T10:00:00.123Z')).toBe(t + 123);
  expect(parseInstant('2026-11-26T10:00:00.1230001Z')).toBe(t + 124);
  expect(parseInstant('2026-11-26T10:00:00.000000001Z')).toBe(t + 1);
  // A leap second is the last millisecond of its minute.
  expect(parseInstant('2016-12-31T23:59:60Z')).toBe(Date.UTC(2017, 0, 1) - 1);
  // Years below 100 are those years, not 19xx.
  expect(parseInstant('0099-01-01T00:00:00Z')).toBe(new Date('0099-01-01T00:00:00Z').getTime());
});

it('refuses what names no instant: no offset, a day or time that does not exist, a wrong shape', () => {
  for (const s of [
    '2026-11-26T10:00:00',
    '2026-11-26',
    '2026-02-30T10:00:00Z',
    '2026-11-26T24:00:00Z',
    '2026-11-26T10:60:00Z',
    '2026-11-26T10:00:61Z',
    '2026-11-26T10:00:00+24:00',
    '2026-11-26T10:00:00+05:60',
    '2026-11-26T10:00Z',
    '2026-11-26T10:00:00.Z',
    '2026-11-26T10:00:00.1234567890Z',
    '2026-11-26T10:00:00 Z',
    ' 2026-11-26T10:00:00Z',
    '1764151200000',
  ]) {
    expect(parseInstant(s), s).toBeNull();
  }
});
