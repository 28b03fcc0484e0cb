import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  exportMovimientos,
  listMovimientos,
  MOVIMIENTO_FIELDS,
  MOVIMIENTO_TIPOS,
  MOVIMIENTOS_TOTAL_MAX,
  type MovimientoView,
} from '../../../core/billing/movimientos.js';
import { movimientosQuerystring } from '../../schemas/common.js';
import { signedIn } from '../context.js';
import { selectField } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { pastEnd, type Column, cut, dropEmptyFilters, listTable, pager } from '../listing.js';
import { emptyNote, exportLinks, exportRoute, filterForm, readListing } from '../listing-page.js';
import { shortTime } from './overview.js';

/**
 * A client's balance movements (`/panel/c/:cid/movimientos`): the filters
 * of GET /api/movimientos.php, read by the same schema and core, a page of
 * charges, refunds and manual changes with who made each, and the export of
 * exactly the filtered set as CSV or NDJSON.
 */

const FILTERS = ['tipo', 'celular_id', 'desde', 'hasta', 'por_pagina'] as const;

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

export default async function movimientosPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  const route = {
    preHandler: signedIn(core),
    preValidation: dropEmptyFilters,
    attachValidation: true,
    schema: { querystring: movimientosQuerystring },
  };

  async function page(req: FastifyRequest, reply: FastifyReply) {
    const r = await readListing(deps, req, 'movimientos', FILTERS, (p, q) => listMovimientos(core, p, q as Parameters<typeof listMovimientos>[2]));
    const { cid, path, values, filters, refused, listing } = r;
    const info = { title: 'Balance movements', clienteId: cid, current: 'cuenta' };
    const form = filterForm(
      path,
      values,
      r.lines,
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
    if (!listing) return sendPage(req, reply, info, form, r.status);
    // Past the count's cap (D-104) the total is not counted: "10,000+", the cap written as people read it.
    const counted = listing.total === null ? `${MOVIMIENTOS_TOTAL_MAX.toLocaleString('en-US')}+` : String(listing.total);
    const empty = emptyNote(filters, 'movement', html`No movements yet: credit added by the operator, and each charged send, show here.`);
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
        ${listing.total !== 0 ? exportLinks(path, filters, counted, 'movements') : ''}
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
  const download = exportRoute<MovimientoView>(core, {
    name: 'movimientos',
    fields: MOVIMIENTO_FIELDS,
    pages: (p, q) => exportMovimientos(core, p, q),
    page,
  });
  app.get('/c/:cid/movimientos.csv', route, download('csv'));
  app.get('/c/:cid/movimientos.ndjson', route, download('ndjson'));
}
