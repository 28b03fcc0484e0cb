import type { FastifyInstance } from 'fastify';
import { panelOf, redirect, signedIn } from '../context.js';
import type { PanelDeps } from '../index.js';
import { OVERVIEW_FRAGMENT, renderOverview, renderOverviewFigures } from './overview.js';

/** /panel/: the operator's overview; a client's or a line's own first page for anyone else. */
export default async function homePage(app: FastifyInstance, deps: PanelDeps) {
  app.get('/', { preHandler: signedIn(deps.core) }, async (req, reply) => {
    const p = panelOf(req).principal;
    if (p.kind === 'operator') return renderOverview(deps, req, reply);
    if (p.kind === 'client') return redirect(req, reply, `/panel/c/${p.cliente.id}/`);
    return redirect(req, reply, `/panel/c/${p.cliente.id}/celulares/${p.celular.id}`);
  });
  // The overview's live figures (htmx polls them).
  app.get(OVERVIEW_FRAGMENT.slice('/panel'.length), { preHandler: signedIn(deps.core) }, async (req, reply) => renderOverviewFigures(deps, req, reply));
}
