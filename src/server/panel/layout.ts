import type { FastifyReply, FastifyRequest } from 'fastify';
import { VERSION } from '../../version.js';
import { assetUrl } from './assets.js';
import { FLASH_COOKIE, cookieOptions, type PanelRequest } from './context.js';
import { html, type Html, type Renderable } from './html.js';

/** Where a page sits: its title, and the client it belongs to (for the client's menu). */
export interface PageInfo {
  title: string;
  /** The client whose pages these are (the operator sees them under its own menu). */
  clienteId?: number;
  /** The menu entry to mark as current. */
  current?: string;
}

/** htmx without eval, inline scripts or the style element it would add: the CSP allows none of them. */
const HTMX_CONFIG = JSON.stringify({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false, historyCacheSize: 0, selfRequestsOnly: true });

function menu(panel: PanelRequest | undefined, page: PageInfo): Html {
  if (!panel) return html``;
  const link = (href: string, label: string, id: string) =>
    html`<li><a href="${href}" ${page.current === id ? html`aria-current="page"` : ''}>${label}</a></li>`;
  const p = panel.principal;
  const top =
    p.kind === 'operator'
      ? [
          link('/panel/', 'Overview', 'overview'),
          link('/panel/graficas', 'Charts', 'graficas'),
          link('/panel/clientes', 'Clients', 'clientes'),
          link('/panel/servidores', 'Gateway servers', 'servidores'),
          link('/panel/auditoria', 'Audit log', 'auditoria'),
        ]
      : [];
  const cid = p.kind === 'operator' ? page.clienteId : p.cliente.id;
  const client =
    cid === undefined
      ? []
      : p.kind === 'celular'
        ? [
            link(`/panel/c/${cid}/celulares/${p.celular.id}`, 'Line', 'celulares'),
            link(`/panel/c/${cid}/cola`, 'Queue', 'cola'),
            link(`/panel/c/${cid}/historial`, 'History', 'historial'),
            link(`/panel/c/${cid}/recibidos`, 'Inbox', 'recibidos'),
            link(`/panel/c/${cid}/eventos`, 'Events', 'eventos'),
            link(`/panel/c/${cid}/graficas`, 'Charts', 'graficas'),
          ]
        : [
            link(`/panel/c/${cid}/`, 'Account', 'cuenta'),
            link(`/panel/c/${cid}/celulares`, 'Lines', 'celulares'),
            link(`/panel/c/${cid}/grupos`, 'Pools', 'grupos'),
            link(`/panel/c/${cid}/cola`, 'Queue', 'cola'),
            link(`/panel/c/${cid}/historial`, 'History', 'historial'),
            link(`/panel/c/${cid}/recibidos`, 'Inbox', 'recibidos'),
            link(`/panel/c/${cid}/graficas`, 'Charts', 'graficas'),
            link(`/panel/c/${cid}/webhook`, 'Webhook', 'webhook'),
            link(`/panel/c/${cid}/eventos`, 'Events', 'eventos'),
          ];
  const who =
    p.kind === 'operator' ? 'operator' : p.kind === 'client' ? `client ${p.cliente.nombre} (${p.cliente.id})` : `line ${p.celular.id} of ${p.cliente.nombre}`;
  return html`<nav aria-label="Main">
      <ul>
        ${top}
      </ul>
      ${
        client.length > 0
          ? html`<ul class="sub" aria-label="Client ${cid}">
              ${p.kind === 'operator' ? html`<li class="label">Client ${cid}:</li>` : ''}${client}
            </ul>`
          : ''
      }
    </nav>
    <div class="who">
      <span>Signed in as ${who}</span>
      <form method="post" action="/panel/logout">
        <input type="hidden" name="_csrf" value="${panel.session.csrf}" /><button type="submit" class="link">Sign out</button>
      </form>
    </div>`;
}

/** A whole page: head, menu, the one-shot notice, the title and the body. */
export function layout(req: FastifyRequest, page: PageInfo, body: Renderable, notice?: string): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
    <link rel="icon" href="data:," />
        <meta name="htmx-config" content="${HTMX_CONFIG}" />
        <title>${page.title} · pasarela</title>
        <link rel="stylesheet" href="${assetUrl('panel.css')}" />
        <script src="${assetUrl('htmx.min.js')}" defer></script>
        <script src="${assetUrl('panel.js')}" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top"><a class="brand" href="/panel/">pasarela</a>${menu(req.panel, page)}</header>
        <main id="main">
          ${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
          <h1>${page.title}</h1>
          ${body}
        </main>
        <footer><span>pasarela ${VERSION}</span> · <a href="/docs">API documentation</a></footer>
      </body>
    </html>`;
}

/** Renders a page (taking the one-shot notice a redirect left), with no caching: pages show live state. */
export function sendPage(req: FastifyRequest, reply: FastifyReply, page: PageInfo, body: Renderable, status = 200): FastifyReply {
  const notice = req.cookies[FLASH_COOKIE];
  if (notice) reply.clearCookie(FLASH_COOKIE, cookieOptions(req));
  return reply
    .code(status)
    .header('Cache-Control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(layout(req, page, body, notice).value);
}

/** A fragment for htmx to swap in (a live region, a form answered in place). */
export function sendFragment(reply: FastifyReply, body: Html, status = 200): FastifyReply {
  return reply.code(status).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(body.value);
}
