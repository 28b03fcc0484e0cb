/**
 * Allowed sending hours of a line, read in the server's zone (`--tz`). A
 * window may cross midnight (22:00 to 06:00); an `HH:MM` end includes its
 * whole minute, so 00:00-23:59 is the whole day.
 */
const DAY_S = 24 * 60 * 60;

function seconds(hhmm: string, isEnd: boolean): number {
  const key = isEnd ? `e${hhmm}` : hhmm;
  let v = parsed.get(key);
  if (v === undefined) {
    const [h = 0, m = 0, s] = hhmm.split(':').map(Number);
    v = h * 3600 + m * 60 + (s ?? (isEnd ? 59 : 0));
    // Lines' hours are few distinct strings; a flood of odd ones only empties the map.
    if (parsed.size >= PARSED_MAX) parsed.clear();
    parsed.set(key, v);
  }
  return v;
}

/** `seconds` of each hours string met, parsed once: every send reads its line's two. */
const parsed = new Map<string, number>();
const PARSED_MAX = 1_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Seconds since local midnight in `tz`, by formatting (slow: a few microseconds). */
function formatSecondOfDay(now: number, tz: string): number {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone: tz, hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    formatters.set(tz, f);
  }
  const parts = Object.fromEntries(f.formatToParts(new Date(now)).map((p) => [p.type, p.value]));
  return Number(parts.hour) * 3600 + Number(parts.minute) * 60 + Number(parts.second);
}

/**
 * The zone's offset from UTC, formatted once per zone and UTC minute and
 * reused: offsets change only on minute boundaries, and every send asks.
 */
const offsets = new Map<string, { minute: number; offsetS: number }>();

/** Seconds since local midnight in `tz`. */
export function localSecondOfDay(now: number, tz: string): number {
  const minute = Math.floor(now / 60_000);
  let o = offsets.get(tz);
  if (o?.minute !== minute) {
    const start = minute * 60_000;
    const utcSecond = Math.floor(start / 1000) % DAY_S;
    o = { minute, offsetS: formatSecondOfDay(start, tz) - utcSecond };
    offsets.set(tz, o);
  }
  const s = Math.floor(now / 1000) + o.offsetS;
  return ((s % DAY_S) + DAY_S) % DAY_S;
}

export function isValidTz(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at `now`, seconds modulo a day (only compared, never added); uncached. */
function offsetAt(now: number, tz: string): number {
  const start = Math.floor(now / 60_000) * 60_000;
  return (((formatSecondOfDay(start, tz) - (Math.floor(start / 1000) % DAY_S)) % DAY_S) + DAY_S) % DAY_S;
}

/** Whether the window is open now, and if not, how long until it opens. */
export function sendingWindow(inicio: string, fin: string, now: number, tz: string): { open: true } | { open: false; opensInMs: number } {
  const start = seconds(inicio, false);
  const end = seconds(fin, true);
  const isOpen = (t: number) => (start <= end ? t >= start && t <= end : t >= start || t <= end);
  // A window of the whole day (the default, 00:00-23:59) is open whatever the local time: no need to read it, on every send.
  if (start === 0 && end >= DAY_S - 1) return { open: true };
  const t = localSecondOfDay(now, tz);
  if (isOpen(t)) return { open: true };
  const waitS = (s: number) => Math.max(1, (((start - s) % DAY_S) + DAY_S) % DAY_S);
  let at = now + waitS(t) * 1000;
  // The zone's clocks jump before then (daylight saving time): the window opens at the jump if the
  // jump lands in it, or its wait counts from the jump in the new offset. Offsets change on minute boundaries.
  const before = offsetAt(now, tz);
  if (offsetAt(at, tz) !== before) {
    let lo = Math.floor(now / 60_000);
    let hi = Math.floor(at / 60_000);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetAt(mid * 60_000, tz) === before) lo = mid;
      else hi = mid;
    }
    const jump = hi * 60_000;
    const tj = (Math.floor(jump / 1000) + offsetAt(jump, tz)) % DAY_S;
    at = isOpen(tj) ? jump : jump + waitS(tj) * 1000;
  }
  return { open: false, opensInMs: at - now };
}

const dayFormatters = new Map<string, Intl.DateTimeFormat>();
/** The last day read per zone and the UTC minute it was read for: every send asks, the day changes only on a minute boundary. */
const days = new Map<string, { minute: number; day: number }>();

/** The calendar day `now` falls in, in `tz`, counted in days since 1970-01-01 there: the next day is one more. */
export function localDayNumber(now: number, tz: string): number {
  const minute = Math.floor(now / 60_000);
  const kept = days.get(tz);
  if (kept?.minute === minute) return kept.day;
  let f = dayFormatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone: tz, year: 'numeric', month: 'numeric', day: 'numeric' });
    dayFormatters.set(tz, f);
  }
  const parts = Object.fromEntries(f.formatToParts(new Date(now)).map((p) => [p.type, p.value]));
  const day = Math.floor(Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day)) / (DAY_S * 1000));
  days.set(tz, { minute, day });
  return day;
}
