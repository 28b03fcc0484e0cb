import type { FastifyReply, FastifyRequest } from 'fastify';
import { overview, type Overview } from '../../../core/charts/overview.js';
import { requireOperator } from '../context.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendFragment, sendPage } from '../layout.js';
import { timeTag } from '../time.js';
import { listTable } from '../listing.js';

/** The panel's time format lives in ../time.ts; kept here for the pages that import it from the overview. */
export { shortTime } from '../time.js';

/** The figures region asks for itself again this often (each poll reads the store, so it shows every node's work). */
export const OVERVIEW_POLL = 'every 5s';
export const OVERVIEW_FRAGMENT = '/panel/resumen';

const stat = (n: number | string, label: string) => html`<div class="stat"><span class="n">${n}</span><span class="l">${label}</span></div>`;

function age(seconds: number | null): string {
  if (seconds === null) return 'none';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h`;
}

function countsTable(caption: string, head: string, counts: Record<string, number>, empty: string): Html {
  const rows = Object.entries(counts).filter(([, n]) => n > 0);
  if (rows.length === 0) return html`<h3>${caption}</h3><p class="empty">${empty}</p>`;
  return html`<h3>${caption}</h3>
    <div class="table-wrap">
      <table>
        <thead><tr><th scope="col">${head}</th><th scope="col" class="num">Lines</th></tr></thead>
        <tbody>
          ${rows.map(([k, n]) => html`<tr><td>${k}</td><td class="num">${n}</td></tr>`)}
        </tbody>
      </table>
    </div>`;
}

/** Which node holds the engine's lines (`--gateway baileys`, D-137): one row per node, and the lines nobody holds. */
function engineSessions(m: NonNullable<Overview['motor']>): Html {
  const free =
    m.libres === 0
      ? ''
      : html`<p class="hint">${m.libres} ${m.libres === 1 ? 'line' : 'lines'} with a stored session held by no node now (taken at a node's next pass).</p>`;
  if (m.nodos.length === 0) return html`<h2>Engine sessions by node</h2><p class="empty">No node holds a line's session: no line is linked yet.</p>${free}`;
  return html`<h2>Engine sessions by node</h2>
    ${listTable(
      m.nodos,
      [
        { label: 'Node', cell: (n) => n.etiqueta ?? html`node <code>${n.id}</code>` },
        { label: 'State', cell: (n) => (n.presente ? html`<span class="badge ok">beating</span>` : html`<span class="badge bad">gone</span>`) },
        { label: 'Lines held', cls: 'num', cell: (n) => n.lineas },
      ],
      "Lines whose engine session each node holds, most first; a line's own page names its node",
    )}
    ${free}`;
}

/** The live part of the overview: everything read from the store, polled by htmx. */
function figures(o: Overview): Html {
  const hour = o.ultima_hora;
  const sent = hour.enviado + hour.entregado + hour.leido;
  return html`<section id="figures" class="figures" hx-get="${OVERVIEW_FRAGMENT}" hx-trigger="${OVERVIEW_POLL}" hx-swap="outerHTML">
    <div class="grid">
      ${stat(o.nodos_vivos, 'nodes alive')} ${stat(o.cola.pendientes, 'queued messages')} ${stat(age(o.cola.mas_antiguo_s), 'oldest queued message')}
      ${stat(o.webhooks.pendientes, `webhook deliveries waiting (${o.webhooks.vencidas} due now)`)} ${stat(o.lineas.total, 'lines')}
    </div>
    <h2>Queue by line</h2>
    ${
      o.cola_por_linea.lineas === 0
        ? html`<p class="empty">No line has a queued message.</p>`
        : html`${listTable(
            o.cola_por_linea.mostradas,
            [
              { label: 'Line', cell: (l) => html`<a href="/panel/c/${l.cliente_id}/cola?celular_id=${l.celular_id}">line ${l.celular_id}</a>` },
              { label: 'Client', cls: 'num', cell: (l) => html`<a href="/panel/c/${l.cliente_id}/">${l.cliente_id}</a>` },
              { label: 'Pending', cls: 'num', cell: (l) => l.pendientes },
              { label: 'Oldest waits', cls: 'nowrap', cell: (l) => age(l.mas_antiguo_s) },
            ],
            'Queued messages per line, most first',
          )}
            ${
              o.cola_por_linea.lineas > o.cola_por_linea.mostradas.length
                ? html`<p class="hint">The ${o.cola_por_linea.mostradas.length} lines with most pending of ${o.cola_por_linea.lineas} with a queue.</p>`
                : ''
            }`
    }
    <h2>Sends of the last hour</h2>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col" class="num">pendiente</th>
            <th scope="col" class="num">enviado</th>
            <th scope="col" class="num">entregado</th>
            <th scope="col" class="num">leido</th>
            <th scope="col" class="num">error</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td class="num">${hour.pendiente}</td>
            <td class="num">${hour.enviado}</td>
            <td class="num">${hour.entregado}</td>
            <td class="num">${hour.leido}</td>
            <td class="num">${hour.error}</td>
          </tr>
        </tbody>
      </table>
    </div>
    <p class="hint">${sent} sent of ${sent + hour.pendiente + hour.error} accepted in the last hour. <a href="/panel/graficas">Charts over time</a></p>
    <h2>Lines</h2>
    <div class="grid">
      <div>${countsTable('By estado', 'estado', o.lineas.por_estado, 'No lines yet. Create a client, then its lines from its page.')}</div>
      <div>${countsTable('By session status', 'status', o.lineas.por_sesion, 'No sessions yet.')}</div>
    </div>
    <h2>Gateway servers</h2>
    ${
      o.servidores.length === 0
        ? html`<p class="empty">No gateway servers: this deployment runs ${o.gateway}${o.simulado ? ' (simulated)' : ''} without a list of servers.</p>`
        : html`<div class="table-wrap">
            <table>
              <thead><tr><th scope="col">Server</th><th scope="col">estado</th><th scope="col" class="num">Lines</th></tr></thead>
              <tbody>
                ${o.servidores.map(
                  (g) =>
                    html`<tr>
                      <td>${g.nombre}</td>
                      <td><span class="badge ${g.estado === 'activo' ? 'ok' : 'warn'}">${g.estado}</span></td>
                      <td class="num">${g.lineas}${g.max_lineas !== null ? html` of ${g.max_lineas}` : ''}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>
          <p><a href="/panel/servidores">Manage gateway servers</a></p>`
    }
    ${o.motor ? engineSessions(o.motor) : ''}
    <h2>Failing webhooks</h2>
    ${
      o.webhooks_fallando.length === 0
        ? html`<p class="empty">No webhook is failing: every pending delivery is on its first try.</p>`
        : // Stacked as cards on a phone (listing.ts), so the last error is never cut off.
          listTable(o.webhooks_fallando, [
            { label: 'Client', cell: (f) => html`<a href="/panel/c/${f.cliente_id}/webhook">${f.nombre ?? 'client'} (${f.cliente_id})</a>` },
            { label: 'Failing deliveries', cls: 'num', cell: (f) => f.pendientes },
            { label: 'Most attempts', cls: 'num', cell: (f) => f.intentos },
            { label: 'Since', cls: 'nowrap', cell: (f) => timeTag(f.desde) },
            { label: 'Last error', cell: (f) => f.ultimo_error ?? '' },
          ])
    }
    <p class="hint">Read at ${timeTag(o.at)}; refreshed every 5 seconds while this page is open.</p>
  </section>`;
}

/** /panel/ for the operator: what runs where (fixed while the process lives), then the live figures. */
export async function renderOverview(deps: PanelDeps, req: FastifyRequest, reply: FastifyReply) {
  requireOperator(req);
  const o = await overview(deps.core);
  return sendPage(
    req,
    reply,
    { title: 'Overview', current: 'overview' },
    html`<p>
        Store <strong>${o.store}</strong> · counters <strong>${o.counters}</strong> · gateway <strong>${o.gateway}</strong>${o.simulado ? ' (simulated)' : ''}
      </p>
      ${figures(o)}`,
  );
}

/** The figures region alone, for htmx's poll. */
export async function renderOverviewFigures(deps: PanelDeps, req: FastifyRequest, reply: FastifyReply) {
  requireOperator(req);
  return sendFragment(reply, figures(await overview(deps.core)));
}
