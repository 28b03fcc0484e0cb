import { listTable } from '../listing.js';
import { AppError } from '../../../core/errors.js';
import type { CelularEstado, SessionStatus } from '../../../core/ports/model.js';
import type { celularView } from '../../../core/views.js';
import { html, type Html } from '../html.js';

/** What the account, lines and linking pages share: ids from the path, and how a line's state reads. */

/** A path's id: a positive whole number, else the panel's not-found page (as for any unknown page). */
export function pathId(raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,14}$/.test(raw)) throw new AppError('ROUTE_NOT_FOUND', 'there is no such page');
  return Number(raw);
}

export const lineUrl = (cid: number, id: number) => `/panel/c/${cid}/celulares/${id}`;

const STATUS_WORDS: Record<SessionStatus, [string, 'ok' | 'warn' | 'bad' | '']> = {
  connected: ['connected', 'ok'],
  connecting: ['connecting', 'warn'],
  need_scan: ['waiting for a scan', 'warn'],
  logged_out: ['logged out', 'bad'],
  disconnected: ['disconnected', 'bad'],
  unknown: ['unknown', ''],
};

/** The gateway session's status (the API's `status`), in words with its API name beside. */
export function statusBadge(status: string | null): Html {
  const s = (status ?? 'unknown') as SessionStatus;
  const [words, tone] = STATUS_WORDS[s] ?? [s, ''];
  return html`<span class="badge ${tone}" title="status ${s}">${words}</span>`;
}

const ESTADO_TONE: Record<CelularEstado, 'ok' | 'warn' | 'bad'> = { activo: 'ok', desconectado: 'bad', suspendido: 'warn' };

/** The line's estado (activo, desconectado, suspendido), as the API names it. */
export function estadoBadge(estado: string): Html {
  return html`<span class="badge ${ESTADO_TONE[estado as CelularEstado] ?? ''}">${estado}</span>`;
}

/** A client's lines as a table (the account and the lines pages), or `empty` when there are none. */
export function linesTable(
  cid: number,
  lines: ReadonlyArray<Pick<ReturnType<typeof celularView>, 'id' | 'numero' | 'nombre_interno' | 'estado' | 'last_status' | 'saldo_actual'>>,
  empty: Html,
): Html {
  if (lines.length === 0) return empty;
  // Stacked as cards on a phone (listing.ts), so the estado and the saldo are never cut off.
  return listTable(lines, [
    { label: 'numero', cell: (l) => html`<a href="${lineUrl(cid, l.id)}">${l.numero}</a>` },
    { label: 'nombre_interno', cell: (l) => l.nombre_interno ?? '' },
    { label: 'estado', cell: (l) => estadoBadge(l.estado) },
    { label: 'session', cell: (l) => statusBadge(l.last_status) },
    { label: 'saldo', cls: 'num', cell: (l) => l.saldo_actual },
  ]);
}
