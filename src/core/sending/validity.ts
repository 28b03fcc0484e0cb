import { fail } from '../api/errors.js';
import { VIGENCIA_S } from '../api/limits.js';
import { iso } from '../time/clock.js';
import { parseInstant } from '../time/instant.js';

/**
 * A send's `vigencia` (docs/validity.md, D-159, D-182): whole seconds from
 * VIGENCIA_S, or an RFC 3339 instant. Its shape is checked first, with the
 * request's other fields; its end once the send's start is known.
 */
export type Vigencia = number | string;

const SHAPE = `vigencia must be a whole number of seconds from ${VIGENCIA_S.min} to ${VIGENCIA_S.max}, or an RFC 3339 instant with its zone`;

/** Refuses a value that is neither seconds in range nor an instant (400, saying which forms are taken). */
export function checkVigencia(v: Vigencia | undefined): void {
  if (v === undefined) return;
  const secs = seconds(v);
  if (secs !== null) {
    if (!(Number.isInteger(secs) && secs >= VIGENCIA_S.min && secs <= VIGENCIA_S.max)) fail('INVALID_PARAMS', SHAPE);
  } else if (parseInstant(v as string) === null) fail('INVALID_PARAMS', `${SHAPE}; got ${JSON.stringify(v)}`);
}

/**
 * When a queued send's validity ends, counted from `from` (its due time, or
 * now): seconds after it, or the instant given, which must fall from
 * VIGENCIA_S.min to VIGENCIA_S.max seconds after it. Null: none.
 */
export function validityEnd(v: Vigencia | undefined, from: number): number | null {
  if (v === undefined) return null;
  const secs = seconds(v);
  if (secs !== null) return from + secs * 1000;
  const at = parseInstant(v as string)!;
  const { min, max } = VIGENCIA_S;
  if (at < from + min * 1000 || at > from + max * 1000)
    fail('INVALID_PARAMS', `vigencia ${v} must fall ${min} s to ${max / 3600} h after the send starts (${iso(from)})`);
  return at;
}

/** A number of seconds (a number, or a text of digits as a form sends it); null for anything else. */
function seconds(v: Vigencia): number | null {
  if (typeof v === 'number') return v;
  return /^[0-9]+$/.test(v.trim()) ? Number(v.trim()) : null;
}
