/**
 * A value as text for a message or a log line: strings as they are, numbers
 * and booleans as JavaScript writes them, anything else as JSON (never
 * "[object Object]").
 */
export function toText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v.toString();
  if (v === undefined) return 'undefined';
  if (typeof v === 'function' || typeof v === 'symbol') return typeof v;
  return JSON.stringify(v);
}
