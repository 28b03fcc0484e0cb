import type { FastifyInstance } from 'fastify';
import { info } from '../../../core/accounts/accounts.js';
import { listCelulares } from '../../../core/accounts/celulares.js';
import { consumoMes } from '../../../core/billing/movimientos.js';
import { clientScope, redirect, signedIn } from '../context.js';
import type { PanelDeps } from '../index.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { listTable } from '../listing.js';
import { lineUrl, linesTable, pathId } from './lines-common.js';

/** /panel/c/:cid/: the client's account: plan, balances (global and per line) and this month's consumption. */
export default async function cuentaPages(app: FastifyInstance, { core }: PanelDeps) {
  app.get<{ Params: { cid: string } }>('/c/:cid/', { preHandler: signedIn(core) }, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const p = await clientScope(core, req, cid);
    // A line's session has no account page: its line is all it may see.
    if (p.kind === 'celular') return redirect(req, reply, lineUrl(cid, p.celular.id));
    const [cuenta, lineas, consumo] = await Promise.all([info(core, p), listCelulares(core, p), consumoMes(core, p, undefined)]);
    const c = cuenta.cliente;
    const ilimitado = c.plan === 'ilimitado';
    return sendPage(
      req,
      reply,
      { title: `Account: ${c.nombre}`, clienteId: cid, current: 'cuenta' },
      html`<div class="grid">
          <div class="stat"><span class="n">${c.plan}</span><span class="l">plan${ilimitado ? ' (sends are not charged)' : ''}</span></div>
          <div class="stat"><span class="n">${cuenta.saldo_global}</span><span class="l">saldo global</span></div>
          <div class="stat"><span class="n">${c.consumo_mes_actual}</span><span class="l">consumo_mes: messages this month, failed ones left out</span></div>
          <div class="stat"><span class="n">${cuenta.mensajes_30d}</span><span class="l">messages in the last 30 days</span></div>
          <div class="stat">
            <span class="n">${cuenta.num_celulares_activos} / ${cuenta.num_celulares}</span
            ><span class="l">lines activo${c.max_celulares !== null ? html` (at most ${c.max_celulares})` : ''}</span>
          </div>
        </div>
        <dl class="facts">
          <dt>Client</dt>
          <dd>${c.nombre} (${c.id})</dd>
          <dt>email</dt>
          <dd>${c.email}</dd>
          <dt>estado</dt>
          <dd>${c.estado}</dd>
        </dl>
        <p class="actions">
          <a class="button secondary" href="/panel/c/${cid}/movimientos">Balance movements</a>
          <a class="button secondary" href="/panel/c/${cid}/eventos">Live events</a>
        </p>
        <h2>Balance per line</h2>
        ${linesTable(cid, lineas.celulares, html`<p class="empty">No lines yet. <a href="/panel/c/${cid}/celulares">Create one on the Lines page.</a></p>`)}
        <h2>Consumption in ${consumo.mes}, per line</h2>
        <p class="hint">
          Messages each line sent this month (${consumo.zona_horaria}), failed ones left out, and the credits they cost: charged and not refunded,
          whichever balance paid${ilimitado ? '; the unlimited plan charges none' : ''}.
        </p>
        ${
          consumo.lineas.length === 0
            ? html`<p class="empty">No lines yet.</p>`
            : listTable(
                consumo.lineas,
                [
                  { label: 'line', cell: (l) => html`<a href="${lineUrl(cid, l.celular_id)}">${l.numero}</a>` },
                  { label: 'messages', cls: 'num', cell: (l) => l.mensajes },
                  { label: 'credits', cls: 'num', cell: (l) => l.monto },
                ],
                `Consumption in ${consumo.mes}, per line`,
              )
        }`,
    );
  });
}
