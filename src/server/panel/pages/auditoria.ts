import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AUDIT_ACCIONES, detalleLines, listAuditoria, type AuditPage } from '../../../core/auth/audit.js';
import type { AuditRecord } from '../../../core/ports/accounts.js';
import { auditoriaQuerystring } from '../../schemas/common.js';
import { requireOperator, signedIn } from '../context.js';
import { field, formErrorsOf, generalError, NO_ERRORS, selectField, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';
import { type Column, dropEmptyFilters, listTable, queryOf, typedFilters } from '../listing.js';
import { timeTag } from '../time.js';

/**
 * The audit log (`/panel/auditoria`): who changed what, when, before and
 * after; filtered as GET /admin/auditoria is (the same schema and core), a
 * page at a time by id (keyset: first, newer, older, last).
 */

const PAGE = 50;
const PATH = '/panel/auditoria';
const FILTERS = ['accion', 'cliente_id', 'desde', 'hasta'] as const;

/** A record's detalle as people read it: each changed field before → after, then the other values. */
function detalleCell(r: AuditRecord): Html {
  const lines = detalleLines(r.detalle);
  if (lines.length === 0) return html``;
  return html`<ul class="detalle">
    ${lines.map((l) =>
      l.valor !== undefined
        ? html`<li><span class="campo">${l.campo}</span> ${l.valor}</li>`
        : html`<li>
            <span class="campo">${l.campo}</span> <del>${l.antes}</del> <span aria-label="became">→</span> <ins>${l.despues}</ins>
          </li>`,
    )}
  </ul>`;
}

const COLUMNS: Array<Column<AuditRecord>> = [
  { label: 'When', cls: 'nowrap', cell: (r) => timeTag(r.fecha) },
  { label: 'Who (actor)', cell: (r) => r.actor },
  { label: 'Action (accion)', cls: 'nowrap', cell: (r) => r.accion },
  { label: 'Object', cls: 'nowrap', cell: (r) => `${r.objeto_tipo}${r.objeto_id !== null ? ` ${r.objeto_id}` : ''}` },
  { label: 'Client', cls: 'num', cell: (r) => (r.cliente_id !== null ? html`<a href="/panel/clientes/${r.cliente_id}">${r.cliente_id}</a>` : '') },
  { label: 'What changed', cell: detalleCell },
  { label: 'id', cls: 'num', cell: (r) => r.id },
];

function filterForm(values: Record<string, string>, errors: FormErrors): Html {
  const acciones: Array<readonly [string, string]> = [['', 'Any action'], ...AUDIT_ACCIONES.map((a) => [a, a] as const)];
  // A typed action no longer offered (an older record's) stays selectable.
  if (values.accion && !(AUDIT_ACCIONES as readonly string[]).includes(values.accion)) acciones.push([values.accion, values.accion]);
  return html`<form method="get" action="${PATH}" class="card filters" role="search" aria-label="Filters">
    ${generalError(errors)}
    <div class="form-row">
      ${selectField({ name: 'accion', label: 'Action (accion)', options: acciones, value: values.accion ?? '' }, errors)}
      ${field({ name: 'cliente_id', label: 'Client id', type: 'number', min: 1, value: values.cliente_id, hint: 'Empty: every client and the operator.' }, errors)}
      ${field({ name: 'desde', label: 'From (desde)', value: values.desde, hint: "YYYY-MM-DD (server's zone) or 2026-11-26T10:00:00Z", maxlength: 40 }, errors)}
      ${field({ name: 'hasta', label: 'To (hasta)', value: values.hasta, hint: 'A day is included; an instant is not', maxlength: 40 }, errors)}
    </div>
    <div class="actions">
      <button type="submit">Filter</button>
      <a href="${PATH}">Clear filters</a>
    </div>
  </form>`;
}

/** First, newer, older, last: the keyset cursors of core's answer, the filters kept. */
function auditPager(filters: Record<string, string>, page: AuditPage, paged: boolean): Html {
  const { antes, despues } = page.paginas;
  if (antes === null && despues === null && !paged) return html``;
  const to = (over: Record<string, string>) => `${PATH}${queryOf(filters, over)}`;
  const link = (on: boolean, over: Record<string, string>, text: string, rel?: string) =>
    on ? html`<a href="${to(over)}"${rel ? html` rel="${rel}"` : ''}>${text}</a>` : html`<span class="off">${text}</span>`;
  return html`<nav class="pager" aria-label="Pages">
    ${link(despues !== null, {}, 'Newest')} ${link(despues !== null, { despues: String(despues) }, 'Newer', 'prev')}
    ${link(antes !== null, { antes: String(antes) }, 'Older', 'next')} ${link(antes !== null, { despues: '0' }, 'Oldest')}
  </nav>`;
}

export default async function auditoriaPages(app: FastifyInstance, { core }: PanelDeps) {
  app.get(
    '/auditoria',
    { preHandler: signedIn(core), preValidation: dropEmptyFilters, attachValidation: true, schema: { querystring: auditoriaQuerystring } },
    async (req: FastifyRequest, reply: FastifyReply) => {
      requireOperator(req);
      const values = typedFilters(req);
      const { antes: _a, despues: _d, ...filters } = values;
      let refused: FormErrors = NO_ERRORS;
      let page: AuditPage | null = null;
      let status = 200;
      try {
        if (req.validationError) throw req.validationError;
        page = await listAuditoria(core, { ...(req.query as Parameters<typeof listAuditoria>[1]), limit: PAGE });
      } catch (err) {
        refused = formErrorsOf(err, FILTERS);
        status = (refused.general ?? Object.values(refused.fields)[0]!).status;
      }
      const info = { title: 'Audit log', current: 'auditoria' };
      const form = filterForm(values, refused);
      if (!page) return sendPage(req, reply, info, form, status);
      const anyFilter = Object.keys(filters).length > 0;
      const paged = values.antes !== undefined || values.despues !== undefined;
      const empty = html`<p class="empty">
        ${
          paged
            ? html`No records on this page. <a href="${PATH}${queryOf(filters)}">Back to the newest.</a>`
            : anyFilter
              ? 'No record matches these filters. Widen them, or clear them.'
              : 'No records yet: changes by the operator and clients appear here.'
        }
      </p>`;
      return sendPage(
        req,
        reply,
        info,
        html`${form}
          <p role="status">Newest first, ${PAGE} a page · days read in ${page.zona_horaria}; times in UTC</p>
          ${page.registros.length === 0 ? empty : listTable(page.registros, COLUMNS, 'Audit records, newest first')}
          ${auditPager(filters, page, paged)}`,
      );
    },
  );
}
