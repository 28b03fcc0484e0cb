import type { FastifyInstance } from 'fastify';
import { listGatewayServers, serverLines, setGatewayServerEstado } from '../../../core/accounts/gateway-servers.js';
import { flash, redirect, requireOperator, signedIn } from '../context.js';
import { csrfField } from '../forms.js';
import { html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';

/** The gateway servers lines are spread over: their load, drain and undrain, and which lines each holds. */

/** Lines listed under each server; the rest are counted. */
const LINES_SHOWN = 100;

export default async function servidoresPages(app: FastifyInstance, { core }: PanelDeps) {
  const pre = { preHandler: signedIn(core) };

  app.get('/servidores', pre, async (req, reply) => {
    requireOperator(req);
    const { tipo, servidores } = await listGatewayServers(core);
    const lines = await Promise.all(servidores.map((s) => serverLines(core, s.id, LINES_SHOWN)));
    if (servidores.length === 0) {
      return sendPage(
        req,
        reply,
        { title: 'Gateway servers', current: 'servidores' },
        html`<p class="empty">
          No gateway servers. This deployment runs <code>${tipo}</code>; with <code>--gateway evolution</code> or <code>waha</code>, the
          <code>--gateway-url</code> server is listed here as <code>default</code>, and <code>pasarela admin gateway add</code> adds more.
        </p>`,
      );
    }
    return sendPage(
      req,
      reply,
      { title: 'Gateway servers', current: 'servidores' },
      html`<p>New lines go to the least-loaded <code>activo</code> server. A draining server keeps its lines and takes no new ones.</p>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Server</th>
                <th scope="col">url</th>
                <th scope="col">estado</th>
                <th scope="col" class="num">Lines</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              ${servidores.map(
                (s) =>
                  html`<tr>
                    <td>${s.nombre}</td>
                    <td>${s.url}</td>
                    <td><span class="badge ${s.estado === 'activo' ? 'ok' : 'warn'}">${s.estado}</span></td>
                    <td class="num">${s.lineas}${s.max_lineas !== null ? html` of ${s.max_lineas}` : ''}</td>
                    <td>
                      <form method="post" action="/panel/servidores/${s.nombre}/${s.estado === 'activo' ? 'drenar' : 'activar'}">
                        ${csrfField(req)}
                        <button type="submit" class="secondary" aria-label="${s.estado === 'activo' ? 'Drain' : 'Undrain'} ${s.nombre}">
                          ${s.estado === 'activo' ? 'Drain' : 'Undrain'}
                        </button>
                      </form>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </div>
        ${servidores.map((s, i) => {
          const held = lines[i]!;
          return html`<h2>Lines on ${s.nombre}</h2>
            ${
              held.celulares.length === 0
                ? html`<p class="empty">No lines on this server yet.</p>`
                : html`<div class="table-wrap">
                    <table>
                      <thead>
                        <tr>
                          <th scope="col" class="num">id</th>
                          <th scope="col">numero</th>
                          <th scope="col">nombre</th>
                          <th scope="col">Client</th>
                          <th scope="col">estado</th>
                          <th scope="col">session</th>
                        </tr>
                      </thead>
                      <tbody>
                        ${held.celulares.map(
                          (l) =>
                            html`<tr>
                              <td class="num">${l.id}</td>
                              <td><a href="/panel/c/${l.cliente_id}/celulares/${l.id}">${l.numero}</a></td>
                              <td>${l.nombre_interno ?? ''}</td>
                              <td><a href="/panel/clientes/${l.cliente_id}">${l.cliente_id}</a></td>
                              <td>${l.estado}</td>
                              <td>${l.last_status ?? 'unknown'}</td>
                            </tr>`,
                        )}
                      </tbody>
                    </table>
                  </div>
                  ${held.mas ? html`<p class="hint">The first ${LINES_SHOWN} of ${s.lineas} lines.</p>` : ''}`
            }`;
        })}`,
    );
  });

  for (const [action, estado, done] of [
    ['drenar', 'drenando', 'is draining: it keeps its lines and takes no new ones'],
    ['activar', 'activo', 'is active again: it takes new lines'],
  ] as const) {
    app.post<{ Params: { nombre: string } }>(`/servidores/:nombre/${action}`, pre, async (req, reply) => {
      requireOperator(req);
      const s = await setGatewayServerEstado(core, req.params.nombre, estado);
      flash(req, reply, `Gateway server ${s.nombre} ${done}.`);
      return redirect(req, reply, '/panel/servidores');
    });
  }
}
