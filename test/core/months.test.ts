import { describe, expect, it } from 'vitest';
import { startOfMonth } from '../../src/core/history/historial.js';

describe('startOfMonth (consumo_mes_actual counts calendar months in --tz)', () => {
  it('is local midnight of the 1st in the zone, not UTC', () => {
    // 2026-03-01 03:00 UTC is still 28 February, 21:00, in Mexico City (UTC-6 all year).
    expect(startOfMonth(Date.UTC(2026, 2, 1, 3), 'America/Mexico_City')).toBe(Date.UTC(2026, 1, 1, 6));
    expect(startOfMonth(Date.UTC(2026, 2, 1, 7), 'America/Mexico_City')).toBe(Date.UTC(2026, 2, 1, 6));
    expect(startOfMonth(Date.UTC(2026, 2, 15), 'UTC')).toBe(Date.UTC(2026, 2, 1));
  });

  it('follows daylight saving time and zones ahead of UTC', () => {
    // Madrid is UTC+1 in January, UTC+2 in July.
    expect(startOfMonth(Date.UTC(2026, 0, 20), 'Europe/Madrid')).toBe(Date.UTC(2025, 11, 31, 23));
    expect(startOfMonth(Date.UTC(2026, 6, 20), 'Europe/Madrid')).toBe(Date.UTC(2026, 5, 30, 22));
    // 2026-07-31 23:30 UTC is already 1 August in Madrid.
    expect(startOfMonth(Date.UTC(2026, 6, 31, 23, 30), 'Europe/Madrid')).toBe(Date.UTC(2026, 6, 31, 22));
  });
});
