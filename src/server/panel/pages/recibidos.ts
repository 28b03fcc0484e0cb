import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listRecibidos, type RecibidoView } from '../../../core/history/recibidos.js';
import { recibidosQuerystring } from '../../schemas/common.js';
import { signedIn } from '../context.js';
import { field } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { timeTag } from '../time.js';
import { type Column, pastEnd, dropEmptyFilters, textoCell, listTable, pager } from '../listing.js';
import { emptyNote, filterForm, readListing } from '../listing-page.js';

/**
 * The inbox (`/panel/c/:cid/recibidos`): the filters of GET
 * /api/recibidos_listar.php, read by the same schema and core, a page at a time.
 */

const FILTERS = ['remitente', 'celular_id', 'desde', 'hasta', 'por_pagina'] as const;

const COLUMNS: Array<Column<RecibidoView>> = [
  { label: 'created_at', cls: 'nowrap', cell: (r) => timeTag(r.created_at) },
  { label: 'celular', cls: 'num', cell: (r) => r.celular_id },
  { label: 'de', cell: (r) => r.de },
  { label: 'tipo', cell: (r) => r.tipo },
  { label: 'texto', cell: textoCell },
  { label: 'fecha', cls: 'nowrap', cell: (r) => timeTag(r.fecha) },
];

function table(rows: RecibidoView[], empty: Html): Html {
  return rows.length === 0 ? empty : listTable(rows, COLUMNS);
}

export default async function recibidosPages(app: FastifyInstance, deps: PanelDeps) {
  const { core } = deps;
  app.get(
    '/c/:cid/recibidos',
    { preHandler: signedIn(core), preValidation: dropEmptyFilters, attachValidation: true, schema: { querystring: recibidosQuerystring } },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const r = await readListing(deps, req, 'recibidos', FILTERS, (p, q) => listRecibidos(core, p, q as Parameters<typeof listRecibidos>[2]));
      const { cid, path, values, filters, refused, listing } = r;
      const form = filterForm(
        path,
        values,
        r.lines,
        refused,
        field(
          { name: 'remitente', label: 'From (remitente)', type: 'text', value: values.remitente, hint: 'A number, or a contact id (…@lid) as listed' },
          refused,
        ),
      );
      const info = { title: 'Inbox', clienteId: cid, current: 'recibidos' };
      if (!listing) return sendPage(req, reply, info, form, r.status);
      const empty = emptyNote(filters, 'incoming message', html`Nothing received yet. Messages sent to a linked line appear here.`);
      return sendPage(
        req,
        reply,
        info,
        html`${form}
          <p role="status">
            ${listing.total} ${listing.total === 1 ? 'message' : 'messages'} · page ${listing.page} of ${Math.max(1, listing.total_paginas)} · days read in
            ${listing.zona_horaria}
          </p>
          ${
            listing.total > 0 && listing.page > listing.total_paginas
              ? pastEnd(path, filters, listing.total_paginas, 'messages')
              : table(listing.recibidos, empty)
          }
          ${pager(path, values, listing.page, listing.total_paginas)}`,
      );
    },
  );
}
