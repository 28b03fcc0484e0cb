import { describe, expect, it } from 'vitest';
import { isValidTz, localSecondOfDay, sendingWindow } from '../../src/core/time/hours.js';

/** Allowed sending hours (core/time/hours.ts): a pure function of the window, the instant and the zone. */
const utc = (h: number, m = 0, s = 0, ms = 0) => Date.UTC(2026, 2, 10, h, m, s, ms);
const H = 3_600_000;

describe('a window within one day (UTC)', () => {
  it('opens at its start second and stays open through the whole minute of its end', () => {
    expect(sendingWindow('13:00', '14:00', utc(12, 59, 59), 'UTC')).toEqual({ open: false, opensInMs: 1000 });
    expect(sendingWindow('13:00', '14:00', utc(13), 'UTC')).toEqual({ open: true });
    expect(sendingWindow('13:00', '14:00', utc(14, 0, 59, 999), 'UTC')).toEqual({ open: true });
    expect(sendingWindow('13:00', '14:00', utc(14, 1), 'UTC')).toEqual({ open: false, opensInMs: 23 * H - 60_000 });
  });

  it('before it opens, the wait is until its start; after it closes, until its start tomorrow', () => {
    expect(sendingWindow('13:00', '14:00', utc(12), 'UTC')).toEqual({ open: false, opensInMs: H });
    expect(sendingWindow('13:00', '14:00', utc(20), 'UTC')).toEqual({ open: false, opensInMs: 17 * H });
  });

  it('00:00-23:59 is the whole day; seconds given are taken as given', () => {
    for (const t of [utc(0), utc(12), utc(23, 59, 59, 999)]) expect(sendingWindow('00:00', '23:59', t, 'UTC').open).toBe(true);
    expect(sendingWindow('09:00:30', '09:01:00', utc(9, 0, 29), 'UTC')).toEqual({ open: false, opensInMs: 1000 });
    expect(sendingWindow('09:00:30', '09:01:00', utc(9, 1, 0), 'UTC').open).toBe(true);
    expect(sendingWindow('09:00:30', '09:01:00', utc(9, 1, 1), 'UTC').open).toBe(false);
  });

  it('a one-minute window (start = end) is open for that minute only', () => {
    expect(sendingWindow('10:00', '10:00', utc(10, 0, 30), 'UTC').open).toBe(true);
    expect(sendingWindow('10:00', '10:00', utc(10, 1), 'UTC')).toEqual({ open: false, opensInMs: 24 * H - 60_000 });
  });

  it('the wait is whole seconds and never 0, so a closed window is never reported as opening now', () => {
    const w = sendingWindow('13:00', '14:00', utc(12, 59, 59, 500), 'UTC');
    expect(w).toEqual({ open: false, opensInMs: 1000 });
  });
});

describe('a window across midnight (22:00-06:00)', () => {
  it('is open late at night and early in the morning, closed in the day', () => {
    for (const t of [utc(22), utc(23, 30), utc(0), utc(5), utc(6, 0, 59)]) expect(sendingWindow('22:00', '06:00', t, 'UTC').open, String(t)).toBe(true);
    expect(sendingWindow('22:00', '06:00', utc(6, 1), 'UTC')).toEqual({ open: false, opensInMs: 16 * H - 60_000 });
    expect(sendingWindow('22:00', '06:00', utc(12), 'UTC')).toEqual({ open: false, opensInMs: 10 * H });
    expect(sendingWindow('22:00', '06:00', utc(21, 59, 59), 'UTC')).toEqual({ open: false, opensInMs: 1000 });
  });
});

describe('time zones', () => {
  it("the window is read in the server's zone: 09:00-18:00 in Mexico City (UTC-6) is 15:00-00:00 UTC", () => {
    expect(sendingWindow('09:00', '18:00', utc(14, 59), 'America/Mexico_City')).toEqual({ open: false, opensInMs: 60_000 });
    expect(sendingWindow('09:00', '18:00', utc(15), 'America/Mexico_City').open).toBe(true);
    expect(sendingWindow('09:00', '18:00', utc(23, 59), 'America/Mexico_City').open).toBe(true);
    // 00:01 UTC on the 11th is still 18:01 on the 10th there.
    expect(sendingWindow('09:00', '18:00', utc(24, 1), 'America/Mexico_City')).toEqual({ open: false, opensInMs: 15 * H - 60_000 });
  });

  it('a zone ahead of UTC: 08:00 in Tokyo (UTC+9) is 23:00 UTC the day before', () => {
    expect(localSecondOfDay(utc(23), 'Asia/Tokyo')).toBe(8 * 3600);
    expect(sendingWindow('08:00', '09:00', utc(23), 'Asia/Tokyo').open).toBe(true);
    expect(sendingWindow('08:00', '09:00', utc(22, 59, 59), 'Asia/Tokyo')).toEqual({ open: false, opensInMs: 1000 });
  });

  it('a zone with a half-hour offset (Kolkata, UTC+5:30)', () => {
    expect(localSecondOfDay(utc(3, 30), 'Asia/Kolkata')).toBe(9 * 3600);
    expect(sendingWindow('09:00', '10:00', utc(3, 29), 'Asia/Kolkata')).toEqual({ open: false, opensInMs: 60_000 });
  });

  it('follows daylight saving time: Madrid is UTC+1 before 29 March 2026 and UTC+2 from 01:00 UTC that day', () => {
    const spring = Date.UTC(2026, 2, 29, 1);
    expect(localSecondOfDay(spring - 1000, 'Europe/Madrid')).toBe(1 * 3600 + 59 * 60 + 59);
    expect(localSecondOfDay(spring, 'Europe/Madrid')).toBe(3 * 3600);
    // A 03:00 opening is at that instant, whichever offset the previous second had.
    expect(sendingWindow('03:00', '04:00', spring, 'Europe/Madrid').open).toBe(true);
    expect(sendingWindow('03:00', '04:00', spring - 1000, 'Europe/Madrid').open).toBe(false);
    // The same local window a day apart, across the change, is an hour less apart in UTC.
    expect(sendingWindow('09:00', '10:00', Date.UTC(2026, 2, 28, 8), 'Europe/Madrid').open).toBe(true);
    expect(sendingWindow('09:00', '10:00', Date.UTC(2026, 2, 29, 7), 'Europe/Madrid').open).toBe(true);
    expect(sendingWindow('09:00', '10:00', Date.UTC(2026, 2, 29, 8, 1), 'Europe/Madrid').open).toBe(false);
  });

  it('the wait until the window opens counts the jump of the clocks, both ways', () => {
    // 01:59:59 in Madrid on 29 March 2026: one second later it is 03:00, so a 03:00 window opens in 1 s, not in 3601 s.
    const spring = Date.UTC(2026, 2, 29, 1);
    expect(sendingWindow('03:00', '04:00', spring - 1000, 'Europe/Madrid')).toEqual({ open: false, opensInMs: 1000 });
    // Jumped past the start into the window (02:30-04:00 at 01:59 local): it opens at the jump.
    expect(sendingWindow('02:30', '04:00', spring - 60_000, 'Europe/Madrid')).toEqual({ open: false, opensInMs: 60_000 });
    // 02:30 CEST on 25 October 2026: at 01:00 UTC the clocks go back to 02:00, so 02:00-02:10 opens in 30 min, not 23.5 h.
    const fall = Date.UTC(2026, 9, 25, 1);
    expect(sendingWindow('02:00', '02:10', fall - 30 * 60_000, 'Europe/Madrid')).toEqual({ open: false, opensInMs: 30 * 60_000 });
    // A window the jump does not land in: the wait after the jump is in the new offset (08:00 CEST is 06:00 UTC).
    expect(sendingWindow('08:00', '09:00', spring - 1000, 'Europe/Madrid')).toEqual({ open: false, opensInMs: 5 * H + 1000 });
  });

  it('seconds of the day are right at every instant of a minute, on both sides of an offset change (the offset is cached per minute)', () => {
    const spring = Date.UTC(2026, 2, 29, 1);
    for (const t of [spring - 60_000, spring - 1, spring, spring + 59_999, spring + 60_000]) {
      const local = new Date(t).toLocaleTimeString('en-GB', { timeZone: 'Europe/Madrid', hourCycle: 'h23' });
      const [h, m, s] = local.split(':').map(Number);
      expect(localSecondOfDay(t, 'Europe/Madrid'), `${t}`).toBe(h! * 3600 + m! * 60 + s!);
    }
  });

  it('knows the zones the runtime knows', () => {
    expect(isValidTz('America/Mexico_City')).toBe(true);
    expect(isValidTz('UTC')).toBe(true);
    expect(isValidTz('Mars/Olympus_Mons')).toBe(false);
  });
});
