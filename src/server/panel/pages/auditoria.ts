import type { FastifyInstance } from 'fastify';
import { iso } from '../../../core/clock.js';
import { shortTime } from './overview.js';
import { AppError } from '../../../core/errors.js';
import { requireOperator, signedIn } from '../context.js';
import { field } from '../forms.js';
import { html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';

/** The audit log (who did what, when), newest first, a page at a time by id (keyset), for everyone or one client. */

const PAGE = 50;

/** An optional positive whole number from the query; anything else is the API's 400 naming it. */
function positive(query: Record<string, unknown>, name: string): number | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || !/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw)))
    throw new AppError('INVALID_PARAMS', `${name}: must be a positive whole number`);
  return Number(raw);
}

export default async function auditoriaPages(app: FastifyInstance, { core }: PanelDeps) {
  app.get('/auditoria', { preHandler: signedIn(core) }, async (req, reply) => {
    requireOperator(req);
    const query = req.query as Record<string, unknown>;
    const clienteId = positive(query, 'cliente_id');
    const antes = positive(query, 'antes');
    // The same read as GET /admin/auditoria, one more row to know whether an older page exists.
    const rows = await core.store.listAudit({ cliente_id: clienteId, before_id: antes, limit: PAGE + 1 });
    const page = rows.slice(0, PAGE);
    const older = rows.length > PAGE ? page[page.length - 1]!.id : null;
    const filter = clienteId !== undefined ? `cliente_id=${clienteId}&` : '';
    return sendPage(
      req,
      reply,
      { title: 'Audit log', current: 'auditoria' },
      html`<form method="get" action="/panel/auditoria" class="form-row" role="search">
          ${field({ name: 'cliente_id', label: 'Client id', type: 'number', min: 1, value: clienteId ?? '', hint: 'Empty: every client and the operator.' })}
          <div class="field"><button type="submit">Filter</button></div>
        </form>
        ${
          page.length === 0
            ? html`<p class="empty">
                ${antes !== undefined ? 'No older records.' : clienteId !== undefined ? `No records for client ${clienteId}.` : 'No records yet: changes by the operator and clients appear here.'}
              </p>`
            : html`<div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col" class="num">id</th>
                      <th scope="col">fecha</th>
                      <th scope="col">actor</th>
                      <th scope="col">accion</th>
                      <th scope="col">objeto</th>
                      <th scope="col">Client</th>
                      <th scope="col">detalle</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${page.map(
                      (r) =>
                        html`<tr>
                          <td class="num">${r.id}</td>
                          <td><time datetime="${iso(r.fecha)}">${shortTime(r.fecha)}</time></td>
                          <td>${r.actor}</td>
                          <td>${r.accion}</td>
                          <td>${r.objeto_tipo}${r.objeto_id !== null ? ` ${r.objeto_id}` : ''}</td>
                          <td>${r.cliente_id !== null ? html`<a href="/panel/clientes/${r.cliente_id}">${r.cliente_id}</a>` : ''}</td>
                          <td><code>${Object.keys(r.detalle).length > 0 ? JSON.stringify(r.detalle) : ''}</code></td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>`
        }
        <nav class="pager" aria-label="Pages">
          ${antes !== undefined ? html`<a href="/panel/auditoria${clienteId !== undefined ? `?cliente_id=${clienteId}` : ''}">Newest</a>` : ''}
          ${older !== null ? html`<a href="/panel/auditoria?${filter}antes=${older}">Older</a>` : ''}
        </nav>`,
    );
  });
}
