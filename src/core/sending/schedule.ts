import { fail } from '../api/errors.js';
import { iso } from '../time/clock.js';

/** How far ahead a send may be scheduled (docs/design.md §12, `enviar_en`). */
export const SCHEDULE_MAX_MS = 30 * 86_400_000;

/** RFC 3339's date-time: a full date, a time with seconds (a fraction allowed) and a zone, Z or an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** The instant an RFC 3339 text names (ms), or null when it is not one (a field out of range included). */
export function parseInstant(text: string): number | null {
  const p = RFC3339.exec(text.trim());
  if (!p) return null;
  const [year, month, day, hour, minute, second] = p.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > days || hour > 23 || minute > 59 || second > 60) return null;
  if (p[9] !== undefined && (Number(p[9]) > 23 || Number(p[10]) > 59)) return null;
  // A leap second is read as the second after it, as Date does not know them.
  const t = Date.parse(p[0].trim().replace(/:60(?=[.Zz+-])/, ':59').replace(' ', 'T'));
  return Number.isNaN(t) ? null : second === 60 ? t + 1000 : t;
}

/**
 * A send's `enviar_en` (D-162): the instant to send it, as the request's
 * text; null when absent or not ahead of `now` (sent as soon as possible).
 * A text that is no RFC 3339 instant, one more than 30 days ahead, or one
 * with a direct send is refused (400), saying why.
 */
export function dueTime(text: string | undefined, directo: boolean, now: number): { at: number; due: number | null } | null {
  if (text === undefined || text === '') return null;
  const at = parseInstant(text);
  if (at === null)
    fail('INVALID_PARAMS', `enviar_en must be an RFC 3339 instant with its zone, such as 2026-12-01T09:30:00Z or 2026-12-01T06:30:00-03:00; got ${JSON.stringify(text)}`);
  if (directo) fail('INVALID_PARAMS', 'enviar_en schedules a queued send: it cannot go with directo=1, which sends now and answers after the gateway');
  if (at - now > SCHEDULE_MAX_MS) fail('INVALID_PARAMS', `enviar_en must be at most 30 days ahead (until ${iso(now + SCHEDULE_MAX_MS)}); got ${text}`);
  return { at, due: at > now ? at : null };
}
