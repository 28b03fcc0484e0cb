import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal } from '../../core/auth/auth.js';
import { listCelulares } from '../../core/accounts/celulares.js';
import { iso } from '../../core/time/clock.js';
import type { Core } from '../../core/context.js';
import { POR_PAGINA_MAX } from '../../core/history/historial.js';
import { exportBody, EXPORT_TYPE } from '../export-stream.js';
import { clientScope } from './context.js';
import { field, formErrorsOf, generalError, NO_ERRORS, selectField, type FormErrors } from './forms.js';
import { html, type Html } from './html.js';
import type { PanelDeps } from './index.js';
import { cidOf, queryOf, typedFilters } from './listing.js';

/**
 * What a filtered client listing with exports (history, movements) does
 * before and after its own table: read the filters through core, put a
 * refusal beside the field at fault, offer the exports of exactly the
 * filtered set, and stream those exports a store page at a time.
 */

/** The line filter's choices: the client's lines; a celular session has only its own line, so no choice. */
export async function lineOptions(deps: PanelDeps, p: ClientPrincipal): Promise<Array<readonly [string, string]> | null> {
  if (p.kind === 'celular') return null;
  const { celulares } = await listCelulares(deps.core, p);
  return [['', 'Every line'], ...celulares.map((c) => [String(c.id), `${c.id} · ${c.nombre_interno ?? c.numero}`] as const)];
}

/** The filter form of a listing: the page's `own` fields, then the line, the days and the page size every listing has. */
export function filterForm(
  action: string,
  values: Record<string, string>,
  lines: Array<readonly [string, string]> | null,
  errors: FormErrors,
  own: Html,
): Html {
  const common = html`
    ${lines ? selectField({ name: 'celular_id', label: 'Line (celular_id)', options: lines, value: values.celular_id ?? '' }, errors) : ''}
    ${field({ name: 'desde', label: 'From (desde)', value: values.desde, hint: "YYYY-MM-DD (server's zone) or 2026-11-26T10:00:00Z", maxlength: 40 }, errors)}
    ${field({ name: 'hasta', label: 'To (hasta)', value: values.hasta, hint: 'A day is included; an instant is not', maxlength: 40 }, errors)}
    ${field({ name: 'por_pagina', label: 'Per page (por_pagina)', type: 'number', min: 1, max: POR_PAGINA_MAX, value: values.por_pagina }, errors)}`;
  return html`<form method="get" action="${action}" class="card filters" aria-label="Filters">
    ${generalError(errors)}
    <div class="form-row">${own}${common}</div>
    <div class="actions">
      <button type="submit">Filter</button>
      <a href="${action}">Clear filters</a>
    </div>
  </form>`;
}

/** The query core reads: the page's query without `format` (a field of the API's export, not a filter). */
type Query = Record<string, unknown>;

export interface ListingRead<L> {
  cid: number;
  p: ClientPrincipal;
  path: string;
  /** Every filter as typed, the page included. */
  values: Record<string, string>;
  /** The filters a link to another page or an export carries: no page, no format. */
  filters: Record<string, string>;
  /** The line filter's choices; null for a celular session (its own line only). */
  lines: Array<readonly [string, string]> | null;
  refused: FormErrors;
  status: number;
  /** Core's page; null when it refused the filters. */
  listing: L | null;
}

/** Reads a listing page's filters through `read`; `fields` are the form's fields (celular_id is left out for a celular session). */
export async function readListing<L>(
  deps: PanelDeps,
  req: FastifyRequest,
  page: string,
  fields: readonly string[],
  read: (p: ClientPrincipal, q: Query) => Promise<L>,
): Promise<ListingRead<L>> {
  const cid = cidOf(req);
  const p = await clientScope(deps.core, req, cid);
  const values = typedFilters(req);
  const { page: _page, format: _format, ...filters } = values;
  const lines = await lineOptions(deps, p);
  const out: ListingRead<L> = { cid, p, path: `/panel/c/${cid}/${page}`, values, filters, lines, refused: NO_ERRORS, status: 200, listing: null };
  try {
    if (req.validationError) throw req.validationError;
    const { format: _f, ...q } = req.query as Query;
    out.listing = await read(p, q);
  } catch (err) {
    out.refused = formErrorsOf(
      err,
      fields.filter((f) => f !== 'celular_id' || lines !== null),
    );
    out.status = (out.refused.general ?? Object.values(out.refused.fields)[0]!).status;
  }
  return out;
}

/** The export links of the filtered set ("Export these 12 messages: CSV NDJSON"). */
export function exportLinks(path: string, filters: Record<string, string>, counted: string, noun: string): Html {
  return html`<p class="actions">
    Export these ${counted} ${noun}:
    <a class="button secondary" href="${`${path}.csv${queryOf(filters)}`}" download>CSV</a>
    <a class="button secondary" href="${`${path}.ndjson${queryOf(filters)}`}" download>NDJSON</a>
  </p>`;
}

/** What an empty listing says: a filter matched nothing (widen it), or there is nothing yet (`none`). */
export function emptyNote(filters: Record<string, string>, noun: string, none: Html): Html {
  return Object.keys(filters).some((k) => k !== 'por_pagina')
    ? html`<p class="empty">No ${noun} matches these filters. Widen them, or clear them.</p>`
    : html`<p class="empty">${none}</p>`;
}

/**
 * A listing's download route: every record the filters select, streamed a
 * store page at a time (export-stream.ts) as the client reads it. The first
 * page is read before answering, so a refused filter is still the listing
 * page with its error (`page`), not a broken download.
 */
export function exportRoute<R extends Record<string, unknown>>(
  core: Pick<Core, 'store' | 'clock'>,
  o: {
    name: string;
    fields: ReadonlyArray<keyof R & string>;
    pages: (p: ClientPrincipal, q: Query) => AsyncGenerator<R[]>;
    page: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  },
) {
  return (ext: 'csv' | 'ndjson') => async (req: FastifyRequest, reply: FastifyReply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    if (req.validationError) return o.page(req, reply);
    const { format: _f, ...q } = req.query as Query;
    const pages = o.pages(p, q);
    let first: IteratorResult<R[]>;
    try {
      first = await pages.next();
    } catch (err) {
      formErrorsOf(err, []); // a server fault is thrown on, to the error page
      return o.page(req, reply);
    }
    // The file's name: the listing, the client, the day it was made, the format.
    const file = `${o.name}-${cid}-${iso(core.clock.now()).slice(0, 10)}.${ext}`;
    return reply
      .header('Cache-Control', 'no-store')
      .header('Content-Disposition', `attachment; filename="${file}"`)
      .type(EXPORT_TYPE[ext])
      .send(exportBody(ext, o.fields, first, pages));
  };
}
