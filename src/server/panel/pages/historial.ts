import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API } from '../../../core/api/api-routes.js';
import { ESTADOS, exportHistorial, listHistorial, MENSAJE_FIELDS, type MensajeView } from '../../../core/history/historial.js';
import { historialQuerystring } from '../../schemas/common.js';
import { signedIn } from '../context.js';
import { csrfField, field, selectField } from '../forms.js';
import { retryAllowed } from '../../../core/sending/failure-class.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { findForm } from './mensaje.js';
import { timeTag } from '../time.js';
import { type Column, pastEnd, cut, dropEmptyFilters, textoCell, listTable, pager } from '../listing.js';
import { emptyNote, exportLinks, exportRoute, filterForm, readListing } from '../listing-page.js';

/**
 * The message history (`/panel/c/:cid/historial`): the filters of GET
 * /api/historial_listar.php, read by the same schema and core, a page of the
 * table, and the export of exactly the filtered set as CSV or NDJSON.
 */

const FILTERS = ['estado', 'destinatario', 'celular_id', 'desde', 'hasta', 'por_pagina'] as const;

function estadoBadge(estado: string): Html {
  const tone = estado === 'error' ? 'bad' : estado === 'pendiente' ? 'warn' : 'ok';
  return html`<span class="badge ${tone}">${estado}</span>`;
}

/** A failed message's retry button (core/queue/cola.ts), only when its class allows one. */
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

export default async function historialPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const route = {
    preHandler: signedIn(core),
    preValidation: dropEmptyFilters,
    attachValidation: true,
    schema: { querystring: historialQuerystring },
  };

  async function page(req: FastifyRequest, reply: FastifyReply) {
    const r = await readListing(deps, req, 'historial', FILTERS, (p, q) => listHistorial(core, p, q as Parameters<typeof listHistorial>[2]));
    const { cid, path, values, filters, refused, listing } = r;
    const info = { title: 'History', clienteId: cid, current: 'historial' };
    // Rendered after the refusal is known, so each field shows its own error.
    const form = filterForm(
      path,
      values,
      r.lines,
      refused,
      html`${selectField(
        { name: 'estado', label: 'Estado', options: [['', 'Any estado'], ...ESTADOS.map((e) => [e, e] as const)], value: values.estado ?? '' },
        refused,
      )}${field({ name: 'destinatario', label: 'Destinatario', type: 'tel', value: values.destinatario, hint: 'A number, as you would send to it' }, refused)}`,
    );
    if (!listing) return sendPage(req, reply, info, form, r.status);
    const empty = emptyNote(filters, 'message', html`No messages yet. Send one from a line's page, or through the API (POST ${API.mensajeTexto}).`);
    return sendPage(
      req,
      reply,
      info,
      html`${form} ${findForm(cid)}
        <p role="status">
          ${listing.total} ${listing.total === 1 ? 'message' : 'messages'} · page ${listing.page} of ${Math.max(1, listing.total_paginas)} · days read in
          ${listing.zona_horaria}
        </p>
        ${listing.total > 0 ? exportLinks(path, filters, String(listing.total), 'messages') : ''}
        ${listing.total > 0 && listing.page > listing.total_paginas ? pastEnd(path, filters, listing.total_paginas, 'messages') : table(req, cid, listing.mensajes, empty)} ${pager(path, values, listing.page, listing.total_paginas)}`,
    );
  }

  app.get('/c/:cid/historial', route, page);

  /** The export: every record the filters select (core's exportHistorial), streamed as the movements' export is. */
  const download = exportRoute<MensajeView>(core, {
    name: 'historial',
    fields: MENSAJE_FIELDS,
    pages: (p, q) => exportHistorial(core, p, q),
    page,
  });
  app.get('/c/:cid/historial.csv', route, download('csv'));
  app.get('/c/:cid/historial.ndjson', route, download('ndjson'));
}
