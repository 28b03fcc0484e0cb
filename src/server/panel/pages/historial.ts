import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal } from '../../../core/auth.js';
import { listCelulares } from '../../../core/celulares.js';
import { iso } from '../../../core/clock.js';
import { csvRecord } from '../../../core/csv.js';
import { API } from '../../../core/api-routes.js';
import { ESTADOS, exportHistorial, listHistorial, MENSAJE_FIELDS, POR_PAGINA_MAX, type MensajeView } from '../../../core/historial.js';
import { historialQuerystring } from '../../schemas/common.js';
import { clientScope, signedIn } from '../context.js';
import { csrfField, field, formErrorsOf, generalError, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { retryAllowed } from '../../../core/failure-class.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { findForm } from './mensaje.js';
import { timeTag } from '../time.js';
import { cidOf, type Column, pastEnd, cut, dropEmptyFilters, textoCell, listTable, pager, queryOf, typedFilters } from '../listing.js';

/**
 * The message history (`/panel/c/:cid/historial`): the filters of GET
 * /api/historial_listar.php, read by the same schema and core, a page of the
 * table, and the export of exactly the filtered set as CSV or NDJSON.
 */

const FILTERS = ['estado', 'destinatario', 'celular_id', 'desde', 'hasta', 'por_pagina'] as const;

/** The line filter's choices: the client's lines; a celular session has only its own line, so no choice. */
export async function lineOptions(deps: PanelDeps, p: ClientPrincipal): Promise<Array<readonly [string, string]> | null> {
  if (p.kind === 'celular') return null;
  const { celulares } = await listCelulares(deps.core, p);
  return [['', 'Every line'], ...celulares.map((c) => [String(c.id), `${c.id} · ${c.nombre_interno ?? c.numero}`] as const)];
}

/** The filter form's fields on this page (a celular session has no line field): an error naming another goes above the form. */
const shownFields = (p: ClientPrincipal): string[] => FILTERS.filter((f) => f !== 'celular_id' || p.kind !== 'celular');

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

function estadoBadge(estado: string): Html {
  const tone = estado === 'error' ? 'bad' : estado === 'pendiente' ? 'warn' : 'ok';
  return html`<span class="badge ${tone}">${estado}</span>`;
}

/** A failed message's retry button (core/cola.ts), only when its class allows one. */
const retryCell = (req: FastifyRequest, cid: number) => (m: MensajeView) =>
  m.estado === 'error' && retryAllowed(m.error_clase)
    ? html`<form method="post" action="/panel/c/${cid}/historial/reintentar">
        ${csrfField(req)}<input type="hidden" name="msg_id" value="${m.msg_id}" /><input type="hidden" name="celular_id" value="${m.celular_id}" />
        <button type="submit" class="secondary" aria-label="Retry ${m.msg_id}">Retry</button>
      </form>`
    : '';

const COLUMNS: Array<Column<MensajeView>> = [
  { label: 'created_at', cls: 'nowrap', cell: (m) => timeTag(m.created_at) },
  { label: 'estado', cell: (m) => estadoBadge(m.estado) },
  { label: 'celular', cls: 'num', cell: (m) => m.celular_id },
  { label: 'destinatario', cell: (m) => m.destinatario },
  { label: 'tipo', cell: (m) => m.tipo },
  { label: 'texto', cell: textoCell },
  { label: 'error', cell: (m) => cut(m.error) },
];

/** The columns with the msg_id cell linked to the message's page (its timeline). */
const columnsOf = (cid: number): Array<Column<MensajeView>> => [
  ...COLUMNS,
  { label: 'msg_id', cell: (m) => html`<a href="/panel/c/${cid}/mensajes/${encodeURIComponent(m.msg_id)}"><code>${m.msg_id}</code></a>` },
];

function table(req: FastifyRequest, cid: number, rows: MensajeView[], empty: Html): Html {
  const retry = rows.some((m) => m.estado === 'error' && retryAllowed(m.error_clase));
  const columns = retry ? [...columnsOf(cid), { label: 'Action', hiddenLabel: true, cell: retryCell(req, cid) }] : columnsOf(cid);
  return rows.length === 0 ? empty : listTable(rows, columns, 'Messages, newest first');
}

/** The export's file name: the client, the day it was made, the format. */
const fileName = (cid: number, now: number, ext: string) => `historial-${cid}-${iso(now).slice(0, 10)}.${ext}`;

export default async function historialPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const route = {
    preHandler: signedIn(core),
    preValidation: dropEmptyFilters,
    attachValidation: true,
    schema: { querystring: historialQuerystring },
  };

  async function page(req: FastifyRequest, reply: FastifyReply) {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const path = `/panel/c/${cid}/historial`;
    const values = typedFilters(req);
    const { page: _page, ...filters } = values;
    const lines = await lineOptions(deps, p);
    let refused: FormErrors = NO_ERRORS;
    const info = { title: 'History', clienteId: cid, current: 'historial' };
    let listing: Awaited<ReturnType<typeof listHistorial>> | null = null;
    let status = 200;
    try {
      if (req.validationError) throw req.validationError;
      listing = await listHistorial(core, p, req.query as Parameters<typeof listHistorial>[2]);
    } catch (err) {
      refused = formErrorsOf(err, shownFields(p));
      status = (refused.general ?? Object.values(refused.fields)[0]!).status;
    }
    // Rendered after the refusal is known, so each field shows its own error.
    const form = filterForm(
      path,
      values,
      lines,
      refused,
      html`${selectField(
        { name: 'estado', label: 'Estado', options: [['', 'Any estado'], ...ESTADOS.map((e) => [e, e] as const)], value: values.estado ?? '' },
        refused,
      )}${field({ name: 'destinatario', label: 'Destinatario', type: 'tel', value: values.destinatario, hint: 'A number, as you would send to it' }, refused)}`,
    );
    if (!listing) return sendPage(req, reply, info, form, status);
    const exports = html`<p class="actions">
      Export these ${listing.total} messages:
      <a class="button secondary" href="${`${path}.csv${queryOf(filters)}`}" download>CSV</a>
      <a class="button secondary" href="${`${path}.ndjson${queryOf(filters)}`}" download>NDJSON</a>
    </p>`;
    const anyFilter = Object.keys(filters).some((k) => k !== 'por_pagina');
    const empty = anyFilter
      ? html`<p class="empty">No message matches these filters. Widen them, or clear them.</p>`
      : html`<p class="empty">No messages yet. Send one from a line's page, or through the API (POST ${API.mensajeTexto}).</p>`;
    return sendPage(
      req,
      reply,
      info,
      html`${form} ${findForm(cid)}
        <p role="status">
          ${listing.total} ${listing.total === 1 ? 'message' : 'messages'} · page ${listing.page} of ${Math.max(1, listing.total_paginas)} · days read in
          ${listing.zona_horaria}
        </p>
        ${listing.total > 0 ? exports : ''}
        ${listing.total > 0 && listing.page > listing.total_paginas ? pastEnd(path, filters, listing.total_paginas, 'messages') : table(req, cid, listing.mensajes, empty)} ${pager(path, values, listing.page, listing.total_paginas)}`,
    );
  }

  app.get('/c/:cid/historial', route, page);

  /**
   * The export: every record the filters select, streamed a store page at a
   * time (core's exportHistorial) as the client reads it. A refused filter is
   * the page with its error, as on the listing.
   */
  const download = (ext: 'csv' | 'ndjson') => async (req: FastifyRequest, reply: FastifyReply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    if (req.validationError) return page(req, reply);
    const pages = exportHistorial(core, p, req.query as Parameters<typeof exportHistorial>[2]);
    // The first page is read before answering, so a refused filter is still a page and not a broken download.
    let first: IteratorResult<MensajeView[]>;
    try {
      first = await pages.next();
    } catch (err) {
      formErrorsOf(err, []); // a server fault is thrown on, to the error page
      return page(req, reply);
    }
    async function* lines(): AsyncGenerator<string> {
      if (ext === 'csv') yield csvRecord([...MENSAJE_FIELDS]);
      for (let r = first; !r.done; r = await pages.next()) {
        yield r.value.map((m) => (ext === 'csv' ? csvRecord(MENSAJE_FIELDS.map((k) => m[k])) : `${JSON.stringify(m)}\n`)).join('');
      }
    }
    return reply
      .header('Cache-Control', 'no-store')
      .header('Content-Disposition', `attachment; filename="${fileName(cid, core.clock.now(), ext)}"`)
      .type(ext === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
      .send(Readable.from(lines(), { objectMode: false }));
  };
  app.get('/c/:cid/historial.csv', route, download('csv'));
  app.get('/c/:cid/historial.ndjson', route, download('ndjson'));
}
