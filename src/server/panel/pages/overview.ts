import type { FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendPage } from '../layout.js';

// Being built (issue 27): the operator's overview.
export async function renderOverview(_deps: PanelDeps, req: FastifyRequest, reply: FastifyReply) {
  return sendPage(req, reply, { title: 'Overview', current: 'overview' }, html`<p>Overview.</p>`);
}
