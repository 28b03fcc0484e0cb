import { fail } from '../api/errors.js';
import { iso } from '../time/clock.js';
import { parseInstant } from '../time/instant.js';

/** How far ahead a send may be scheduled (docs/design.md §12, `enviar_en`). */
export const SCHEDULE_MAX_MS = 30 * 86_400_000;

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
    fail(
      'INVALID_PARAMS',
      `enviar_en must be an RFC 3339 instant with its zone, such as 2026-12-01T09:30:00Z or 2026-12-01T06:30:00-03:00; got ${JSON.stringify(text)}`,
    );
  if (directo) fail('INVALID_PARAMS', 'enviar_en schedules a queued send: it cannot go with directo=1, which sends now and answers after the gateway');
  if (at - now > SCHEDULE_MAX_MS) fail('INVALID_PARAMS', `enviar_en must be at most 30 days ahead (until ${iso(now + SCHEDULE_MAX_MS)}); got ${text}`);
  return { at, due: at > now ? at : null };
}
