/**
 * A `Retry-After` header (RFC 9110: delay-seconds or an HTTP date) as
 * milliseconds from `now`, the caller's clock time; undefined when absent or
 * unreadable, 0 for a date already past. Gateways' and webhook receivers'
 * answers are read with it alike.
 */
export function retryAfterMs(header: string | string[] | undefined, now: number): number | undefined {
  const raw = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  // HTTP dates, the obsolete forms too, start with the day's name; Date.parse alone would take "-5" or "1.5" for dates.
  const at = /^[A-Za-z]/.test(raw) ? Date.parse(raw) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
