import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal } from '../../../core/auth.js';
import { iso } from '../../../core/clock.js';
import {
  exportMovimientos,
  listMovimientos,
  MOVIMIENTO_FIELDS,
  MOVIMIENTO_TIPOS,
  MOVIMIENTOS_TOTAL_MAX,
  type MovimientoView,
} from '../../../core/movimientos.js';
import { exportBody, EXPORT_TYPE } from '../../export-stream.js';
import { movimientosQuerystring } from '../../schemas/common.js';
import { clientScope, signedIn } from '../context.js';
import { formErrorsOf, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { pastEnd, cidOf, type Column, cut, dropEmptyFilters, listTable, pager, queryOf, typedFilters } from '../listing.js';
import { filterForm, lineOptions } from './historial.js';
import { shortTime } from './overview.js';

/**
 * A client's balance movements (`/panel/c/:cid/movimientos`): the filters
 * of GET /api/movimientos.php, read by the same schema and core, a page of
 * charges, refunds and manual changes with who made each, and the export of
 * exactly the filtered set as CSV or NDJSON.
 */

const FILTERS = ['tipo', 'celular_id', 'desde', 'hasta', 'por_pagina'] as const;

/** The filter form's fields on this page (a celular session has no line field): an error naming another goes above the form. */
const shownFields = (p: ClientPrincipal): string[] => FILTERS.filter((f) => f !== 'celular_id' || p.kind !== 'celular');

const TIPO_WORDS: Record<string, [string, 'ok' | 'warn' | 'bad' | '']> = {
  cobro: ['cobro (a send)', ''],
  reembolso: ['reembolso (a failed send)', 'ok'],
  manual: ['manual', 'warn'],
};

function tipoBadge(tipo: string): Html {
  const tone = TIPO_WORDS[tipo]?.[1] ?? '';
  return html`<span class="badge ${tone}">${tipo}</span>`;
}

/** The columns; a movement's msg_id links to the message's page (its story). */
const columns = (cid: number): Array<Column<MovimientoView>> => [
  { label: 'fecha', cls: 'nowrap', cell: (m) => html`<time datetime="${m.fecha}">${shortTime(Date.parse(m.fecha))}</time>` },
  { label: 'tipo', cell: (m) => tipoBadge(m.tipo) },
  { label: 'monto', cls: 'num', cell: (m) => (m.monto > 0 ? `+${m.monto}` : String(m.monto)) },
  { label: 'balance after', cls: 'num', cell: (m) => m.saldo_despues },
  { label: 'balance', cell: (m) => (m.celular_id === null ? 'global' : `line ${m.celular_id}`) },
  { label: 'who (actor)', cell: (m) => m.actor },
  // A charge's or a refund's motivo only repeats its msg_id (the exports keep it whole).
  // An empty one is a dash: an empty cell reads as a page that failed to fill it (and a stacked card drops its line).
  { label: 'motivo', cell: (m) => (m.tipo === 'manual' && m.motivo ? cut(m.motivo) : '—') },
  { label: 'msg_id', cls: 'id', cell: (m) => (m.msg_id === null ? '—' : html`<a href="/panel/c/${cid}/mensajes/${m.msg_id}"><code>${m.msg_id}</code></a>`) },
];

/** The export's file name: the client, the day it was made, the format. */
const fileName = (cid: number, now: number, ext: string) => `movimientos-${cid}-${iso(now).slice(0, 10)}.${ext}`;

export default async function movimientosPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const route = {
    preHandler: signedIn(core),
    preValidation: dropEmptyFilters,
    attachValidation: true,
    schema: { querystring: movimientosQuerystring },
  };

  async function page(req: FastifyRequest, reply: FastifyReply) {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    const path = `/panel/c/${cid}/movimientos`;
    const values = typedFilters(req);
    const { page: _page, format: _format, ...filters } = values;
    const lines = await lineOptions(deps, p);
    let refused: FormErrors = NO_ERRORS;
    const info = { title: 'Balance movements', clienteId: cid, current: 'cuenta' };
    let listing: Awaited<ReturnType<typeof listMovimientos>> | null = null;
    let status = 200;
    try {
      if (req.validationError) throw req.validationError;
      const { format: _f, ...q } = req.query as Parameters<typeof listMovimientos>[2] & { format?: string };
      listing = await listMovimientos(core, p, q);
    } catch (err) {
      refused = formErrorsOf(err, shownFields(p));
      status = (refused.general ?? Object.values(refused.fields)[0]!).status;
    }
    const form = filterForm(
      path,
      values,
      lines,
      refused,
      selectField(
        {
          name: 'tipo',
          label: 'Tipo',
          options: [['', 'Any tipo'], ...MOVIMIENTO_TIPOS.map((t) => [t, TIPO_WORDS[t]![0]] as const)],
          value: values.tipo ?? '',
        },
        refused,
      ),
    );
    if (!listing) return sendPage(req, reply, info, form, status);
    const counted = listing.total === null ? `more than ${MOVIMIENTOS_TOTAL_MAX}` : String(listing.total);
    const exports = html`<p class="actions">
      Export these ${counted} movements:
      <a class="button secondary" href="${`${path}.csv${queryOf(filters)}`}" download>CSV</a>
      <a class="button secondary" href="${`${path}.ndjson${queryOf(filters)}`}" download>NDJSON</a>
    </p>`;
    const anyFilter = Object.keys(filters).some((k) => k !== 'por_pagina');
    const empty = anyFilter
      ? html`<p class="empty">No movement matches these filters. Widen them, or clear them.</p>`
      : html`<p class="empty">No movements yet: credit added by the operator, and each charged send, show here.</p>`;
    // Past the counted bound the last page is unknown: the pager offers the next page while this one is full.
    const full = listing.movimientos.length === listing.por_pagina;
    const totalPaginas = listing.total_paginas ?? (full ? listing.page + 1 : listing.page);
    const pages = listing.total_paginas === null ? `page ${listing.page}` : `page ${listing.page} of ${Math.max(1, listing.total_paginas)}`;
    return sendPage(
      req,
      reply,
      info,
      html`<p><a href="/panel/c/${cid}/">Back to the account</a></p>
        ${form}
        <p role="status">
          ${counted} ${listing.total === 1 ? 'movement' : 'movements'} · ${pages} · days read in ${listing.zona_horaria}
        </p>
        ${listing.total !== 0 ? exports : ''}
        ${
          listing.movimientos.length > 0
            ? listTable(listing.movimientos, columns(cid), 'Balance movements, newest first')
            : listing.total_paginas !== null && listing.total_paginas > 0 && listing.page > listing.total_paginas
              ? pastEnd(path, filters, listing.total_paginas, 'movements')
              : empty
        }
        ${pager(path, values, listing.page, totalPaginas)}`,
    );
  }

  app.get('/c/:cid/movimientos', route, page);

  /** The export: every movement the filters select, streamed a store page at a time; a refused filter is the page with its error. */
  const download = (ext: 'csv' | 'ndjson') => async (req: FastifyRequest, reply: FastifyReply) => {
    const cid = cidOf(req);
    const p = await clientScope(core, req, cid);
    if (req.validationError) return page(req, reply);
    const { format: _f, ...q } = req.query as Parameters<typeof exportMovimientos>[2] & { format?: string };
    const pages = exportMovimientos(core, p, q);
    let first: IteratorResult<MovimientoView[]>;
    try {
      first = await pages.next();
    } catch (err) {
      formErrorsOf(err, []); // a server fault is thrown on, to the error page
      return page(req, reply);
    }
    return reply
      .header('Cache-Control', 'no-store')
      .header('Content-Disposition', `attachment; filename="${fileName(cid, core.clock.now(), ext)}"`)
      .type(EXPORT_TYPE[ext])
      .send(exportBody(ext, MOVIMIENTO_FIELDS, first, pages));
  };
  app.get('/c/:cid/movimientos.csv', route, download('csv'));
  app.get('/c/:cid/movimientos.ndjson', route, download('ndjson'));
}
