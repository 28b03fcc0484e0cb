import type { FastifyRequest } from 'fastify';
import { AppError } from '../../core/api/errors.js';
import { parseForm } from '../body/form-reader.js';
import { attrs, html, type Html, type Renderable } from './html.js';

/**
 * What the panel's paged listings (history, inbox) share. Their filter form
 * is a GET form whose query string is validated by the API route's own
 * schema (attached to the page's route, so a bad value is the API's 400) and
 * then by core, so both refusals land beside the field at fault.
 */

/** A client page's `:cid`: a positive integer, else there is no such page. */
export function cidOf(req: FastifyRequest): number {
  const raw = (req.params as { cid?: string }).cid ?? '';
  if (!/^[1-9]\d{0,14}$/.test(raw)) throw new AppError('ROUTE_NOT_FOUND', 'there is no such page');
  return Number(raw);
}

/**
 * preValidation of a listing page: a GET form sends every field, the empty
 * ones as "": those are filters not set, left out before the API's schema
 * reads the query (which would refuse an empty estado or page).
 */
export async function dropEmptyFilters(req: FastifyRequest): Promise<void> {
  const q = req.query as Record<string, unknown> | undefined;
  if (!q) return;
  for (const [k, v] of Object.entries(q)) if (v === '' || k === 'key') delete q[k];
}

/** The filters as typed (the first value of each), to show them back in the form and carry them to other pages. */
export function typedFilters(req: FastifyRequest): Record<string, string> {
  const i = req.url.indexOf('?');
  const out: Record<string, string> = {};
  if (i < 0) return out;
  for (const [k, v] of Object.entries(parseForm(Buffer.from(req.url.slice(i + 1), 'latin1'), 'utf-8'))) {
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined && first !== '' && k !== 'key') out[k] = first;
  }
  return out;
}

/** The query string of `filters` with `over` applied (a page, no page). */
export function queryOf(filters: Record<string, string>, over: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...filters, ...over })) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * The pages of a listing, keeping its filters: first, previous, "page N of
 * M", next, last, and a page number to go to. A page past the end (a link
 * kept while the listing shrank, a typed number) links back to the last.
 */
export function pager(path: string, filters: Record<string, string>, page: number, totalPaginas: number): Html {
  if (totalPaginas <= 1 && page <= 1) return html``;
  const to = (n: number) => `${path}${queryOf(filters, { page: String(n) })}`;
  const last = Math.max(1, totalPaginas);
  const link = (on: boolean, n: number, text: string, rel?: string) =>
    on ? html`<a href="${to(n)}"${attrs({ rel })}>${text}</a>` : html`<span class="off">${text}</span>`;
  const hidden = Object.entries(filters).filter(([k]) => k !== 'page');
  // "Last page" is a link past the end too: the way back from a page that shows nothing.
  return html`<nav class="pager" aria-label="Pages">
    ${link(page > 1, 1, 'First page')} ${link(page > 1, Math.min(page - 1, last), 'Previous page', 'prev')}
    <span>Page ${page} of ${last}</span>
    ${link(page < last, page + 1, 'Next page', 'next')} ${link(page !== last, last, 'Last page')}
    <form method="get" action="${path}" class="goto">
      ${hidden.map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}
      <label for="goto-page">Page</label>
      <input id="goto-page" name="page" type="number" min="1" max="${last}" value="${Math.min(page, last)}" />
      <button type="submit" class="secondary">Go</button>
    </form>
  </nav>`;
}

/** What a page past the end of a listing shows instead of its table: the way back to the last page. */
export function pastEnd(path: string, filters: Record<string, string>, totalPaginas: number, noun: string): Html {
  return html`<p class="empty">
    No ${noun} on this page: there ${totalPaginas === 1 ? 'is 1 page' : `are ${totalPaginas} pages`}.
    <a href="${path}${queryOf(filters, { page: String(totalPaginas) })}">Go to the last page (${totalPaginas})</a>
  </p>`;
}

/** A message's text for a table cell, or its file's name or URL, cut (history, inbox). */
export const textoCell = (m: { texto: string | null; media: { filename?: string | null; url?: string | null } | null }): string =>
  cut(m.texto ?? m.media?.filename ?? m.media?.url ?? null);

/** A long free text cut for a table cell (the export carries it whole). */
export function cut(s: string | null, max = 80): string {
  if (s === null) return '';
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** One column of a listing table: its header, and what each row shows there. */
export interface Column<T> {
  label: string;
  /** The header is for screen readers only (an action's column). */
  hiddenLabel?: boolean;
  /** The cells' class (num, nowrap, id). */
  cls?: string;
  cell: (row: T) => Renderable;
}

/**
 * A listing's table. Below 600 px (a phone) each row is stacked: a card of
 * "label value" lines (the header travels with each cell as `data-label`),
 * rather than columns scrolled sideways out of sight (panel.css, `table.stack`).
 */
export function listTable<T>(rows: readonly T[], columns: Array<Column<T>>, caption?: string): Html {
  // Each column's cell attributes, written once: a chart's table is hundreds of cells.
  const cellAttrs = columns.map((c) => attrs({ class: c.cls, 'data-label': c.hiddenLabel ? undefined : c.label }));
  return html`<div class="table-wrap">
    <table class="stack">
      ${caption ? html`<caption class="visually-hidden">${caption}</caption>` : ''}
      <thead>
        <tr>
          ${columns.map(
            (c) => html`<th scope="col"${attrs({ class: c.cls })}>${c.hiddenLabel ? html`<span class="visually-hidden">${c.label}</span>` : c.label}</th>`,
          )}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) => html`<tr>
            ${columns.map((c, i) => html`<td${cellAttrs[i]}>${c.cell(r)}</td>`)}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
