import { iso } from '../../core/time/clock.js';
import { html, type Html } from './html.js';

/**
 * The panel's one way of writing a time: to the second, in UTC, with its
 * zone named (`2026-11-28 22:32:25 UTC`); the `datetime` attribute keeps the
 * instant whole. Every page writes times through these.
 */

/** A time (ms, or an ISO string from a view) as people read it. */
export function shortTime(t: number | string): string {
  const ms = typeof t === 'number' ? t : Date.parse(t);
  return Number.isFinite(ms) ? readable(iso(ms)) : String(t);
}

const readable = (isoTime: string) => `${isoTime.slice(0, 19).replace('T', ' ')} UTC`;

/** A `<time>` element of that text; null or empty: nothing. */
export function timeTag(t: number | string | null | undefined): Html {
  if (t === null || t === undefined || t === '') return html``;
  const ms = typeof t === 'number' ? t : Date.parse(t);
  if (!Number.isFinite(ms)) return html`${String(t)}`;
  // One ISO string for both: a chart's table writes hundreds of these.
  const at = iso(ms);
  return html`<time datetime="${at}">${readable(at)}</time>`;
}
