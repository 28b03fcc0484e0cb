import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Core } from '../../core/context.js';
import { stashShownOnce, takeShownOnce } from '../../core/auth/shown-once.js';
import { panelOf, panelPath, redirect, signedIn } from './context.js';
import { html } from './html.js';
import type { PanelDeps } from './index.js';
import { sendPage, type PageInfo } from './layout.js';

/**
 * The page that shows a new key or secret (a client's key, a line's keys, a
 * webhook's secret): the POST that made it stashes it (core/auth/shown-once.ts)
 * and redirects here; this GET shows it once, and a reload says it is gone
 * instead of making another (D-90).
 */
export interface OncePage extends PageInfo {
  /** What happened, above the secrets. */
  lead: string;
  /** Each secret with the element id its Copy button names. */
  secrets: Array<{ id: string; label: string; value: string }>;
  /** Under the secrets: why it is shown only now. */
  note: string;
  links: Array<{ href: string; label: string }>;
}

/** Stashes the page for this session and sends the browser to it; `back` is where the page's "gone" version links to. */
export async function redirectToOnce(
  core: Pick<Core, 'store' | 'clock'>,
  req: FastifyRequest,
  reply: FastifyReply,
  page: OncePage,
  back: string,
): Promise<FastifyReply> {
  const id = await stashShownOnce(core, panelOf(req).sessionId, page);
  return redirect(req, reply, `/panel/mostrar/${id}?${new URLSearchParams({ volver: back }).toString()}`);
}

/** GET /panel/mostrar/:id: the stashed page, once; afterwards (a reload, another tab) 410 and what to do instead. */
export default async function shownOncePages(app: FastifyInstance, { core }: PanelDeps) {
  app.get<{ Params: { id: string } }>('/mostrar/:id', { preHandler: signedIn(core) }, (req, reply) => sendOnce(core, req, reply));
}

async function sendOnce(core: Pick<Core, 'store' | 'clock'>, req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply): Promise<FastifyReply> {
  const page = await takeShownOnce<OncePage>(core, panelOf(req).sessionId, req.params.id);
  const back = panelPath((req.query as Record<string, unknown>).volver) ?? '/panel/';
  if (!page)
    return sendPage(
      req,
      reply,
      { title: 'Shown once' },
      html`<div class="card">
        <p><strong>This was shown once and is no longer shown.</strong> Nothing made it again: the key or secret shown then is the one in use.</p>
        <p>Lost it? Make a new one from the page it belongs to (rotate the key, or generate a new secret): the old one then stops working.</p>
        <p class="actions"><a class="button" href="${back}">Back</a></p>
      </div>`,
      410,
    );
  return sendPage(
    req,
    reply,
    { title: page.title, ...(page.clienteId !== undefined ? { clienteId: page.clienteId } : {}), ...(page.current ? { current: page.current } : {}) },
    html`<p class="notice" role="status">${page.lead}</p>
      <div class="card">
        ${page.secrets.map(
          (s) =>
            html`<p><strong>${s.label}</strong></p>
              <p class="actions"><code id="${s.id}" class="secret">${s.value}</code> <button type="button" data-copy="${s.id}">Copy</button></p>`,
        )}
        <p class="hint">${page.note}</p>
      </div>
      <p class="actions">${page.links.map((l, i) => html`<a ${i === 0 ? html`class="button"` : ''} href="${l.href}">${l.label}</a> `)}</p>`,
  );
}
