/**
 * Allowed sending hours of a line, read in the server's zone (`--tz`). A
 * window may cross midnight (22:00 to 06:00); an `HH:MM` end includes its
 * whole minute, so 00:00-23:59 is the whole day.
 */
const DAY_S = 24 * 60 * 60;

function seconds(hhmm: string, isEnd: boolean): number {
  const [h = 0, m = 0, s] = hhmm.split(':').map(Number);
  return h * 3600 + m * 60 + (s ?? (isEnd ? 59 : 0));
}

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

/** Whether the window is open now, and if not, how long until it opens. */
export function sendingWindow(inicio: string, fin: string, now: number, tz: string): { open: true } | { open: false; opensInMs: number } {
  const t = localSecondOfDay(now, tz);
  const start = seconds(inicio, false);
  const end = seconds(fin, true);
  const open = start <= end ? t >= start && t <= end : t >= start || t <= end;
  if (open) return { open: true };
  const wait = (((start - t) % DAY_S) + DAY_S) % DAY_S;
  return { open: false, opensInMs: Math.max(1, wait) * 1000 };
}
