import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { celularInScope } from '../../../core/auth/auth.js';
import { celularCodigo, celularQr, celularStatus } from '../../../core/accounts/celulares.js';
import { AppError } from '../../../core/api/errors.js';
import type { CelularRow } from '../../../core/ports/model.js';
import { qrPngDataUri } from '../../../core/accounts/qr-image.js';
import { clientScope, panelOf, signedIn } from '../context.js';
import { csrfField, formValues } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendFragment, sendPage } from '../layout.js';
import { estadoBadge, lineGoneHandler, lineUrl, pathId, statusBadge } from './lines-common.js';

/**
 * /panel/c/:cid/celulares/:id/vincular: linking a line to WhatsApp, by QR or
 * by pairing code (core celularQr / celularCodigo, as the API's celular_qr
 * and celular_codigo). The QR is a fragment htmx asks for again every 2 s:
 * each answer is the gateway's current QR (it rotates), until the session is
 * connected; that answer carries no trigger, so the polling stops. Each poll
 * reads the gateway and the store, so a scan seen by another node shows too.
 */

type Params = { cid: string; id: string };

const POLL = 'every 2s';

async function lineOf(core: PanelDeps['core'], req: FastifyRequest<{ Params: Params }>) {
  const cid = pathId(req.params.cid);
  const id = pathId(req.params.id);
  const p = await clientScope(core, req, cid);
  return { cid, id, p, row: await celularInScope(core, p, id) };
}

function connected(cid: number, id: number): Html {
  return html`<div id="vinculo" class="card" role="status">
    <p>${statusBadge('connected')} The line is linked: it can send now.</p>
    <p><a href="${lineUrl(cid, id)}">Send a test text from the line page</a></p>
  </div>`;
}

/** The QR showing now, or why there is none yet; it asks for the next one (POST with the form's CSRF token, as linking is a change). */
async function qrFragment(req: FastifyRequest, cid: number, id: number, r: { status: string } & ({ qr: string } | { codigo: string })): Promise<Html> {
  if (r.status === 'connected') return connected(cid, id);
  const poll = html`hx-post="${lineUrl(cid, id)}/vincular/qr" hx-vals="${JSON.stringify({ _csrf: panelOf(req).session.csrf })}" hx-trigger="${POLL}" hx-swap="outerHTML"`;
  const img = await qrPngDataUri('qr' in r ? r.qr : '');
  return html`<div id="vinculo" class="card qr" ${poll} aria-live="polite">
    ${
      img
        ? html`<img src="${img}" alt="QR code to scan with WhatsApp on the phone" width="264" height="264" />
          <p>On the phone: WhatsApp, Settings, Linked devices, Link a device; then scan this code. It changes by itself every few seconds.</p>`
        : html`<p>The gateway is starting the session (${statusBadge(r.status)}); the QR appears here in a moment.</p>`
    }
  </div>`;
}

/** The session while a pairing code is being typed on the phone: followed until connected. */
function codeStatusFragment(cid: number, id: number, status: string): Html {
  if (status === 'connected') return connected(cid, id);
  return html`<div id="vinculo" hx-get="${lineUrl(cid, id)}/vincular/estado" hx-trigger="${POLL}" hx-swap="outerHTML" aria-live="polite">
    <p>Session: ${statusBadge(status)}. This page shows when the phone has linked.</p>
  </div>`;
}

/**
 * Under the simulator no phone can scan the QR or type the code: the page says
 * how to play the phone from a terminal (a new operator's dead end otherwise).
 */
function simulatorNote(row: CelularRow): Html {
  return html`<p class="notice">This is the simulator (<code>serve --gateway sim</code>): no real phone links. Play the phone from a terminal once a QR or
    code shows: <code>pasarela sim scan ${row.id}</code> (a pairing code: <code>pasarela sim scan ${row.id} --code CODE</code>); this page then shows the
    line connected.</p>`;
}

function linkPage(req: FastifyRequest, reply: FastifyReply, cid: number, row: CelularRow, body: Html, simulated: boolean) {
  const url = lineUrl(cid, row.id);
  return sendPage(
    req,
    reply,
    { title: `Link line ${row.numero}`, clienteId: cid, current: 'celulares' },
    html`${row.nombre_interno ? html`<p>${row.nombre_interno}</p>` : ''} ${simulated ? simulatorNote(row) : ''} ${body}
      <div class="actions">
        <form method="post" action="${url}/vincular">
          ${csrfField(req)}<input type="hidden" name="metodo" value="qr" /><button type="submit">Show a QR</button>
        </form>
        <form method="post" action="${url}/vincular">
          ${csrfField(req)}<input type="hidden" name="metodo" value="codigo" /><button type="submit" class="secondary">Get a pairing code</button>
        </form>
        <a href="${url}">Back to the line</a>
      </div>`,
  );
}

export default async function vincularPages(app: FastifyInstance, { core }: PanelDeps) {
  lineGoneHandler(app);
  const pre = { preHandler: signedIn(core) };

  app.get<{ Params: Params }>('/c/:cid/celulares/:id/vincular', pre, async (req, reply) => {
    const { cid, row } = await lineOf(core, req);
    // The status as last seen; once linking starts, the polled fragment tells it.
    const intro = html`<p>Session: ${statusBadge(row.last_status)} · estado ${estadoBadge(row.estado)}</p>
      ${
        row.last_status === 'connected'
          ? html`<p>This line is linked. Link it again only after it was logged out (or moved to another gateway server).</p>`
          : html`<p>Link the line's phone to pasarela: show a QR to scan with WhatsApp on the phone, or get a pairing code to type there.</p>`
      }`;
    return linkPage(req, reply, cid, row, intro, core.gateway.simulated);
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/vincular', pre, async (req, reply) => {
    const { cid, id, p, row } = await lineOf(core, req);
    const metodo = formValues(req).metodo;
    if (metodo === 'codigo') {
      const r = await celularCodigo(core, p, id);
      const body =
        r.status === 'connected'
          ? connected(cid, id)
          : html`<div class="card">
                <p>Pairing code for ${row.numero}:</p>
                <p><code id="codigo" class="secret codigo">${'codigo' in r ? r.codigo : ''}</code></p>
                <p>On the phone: WhatsApp, Settings, Linked devices, Link a device, then "Link with phone number instead", and type this code.</p>
              </div>
              ${codeStatusFragment(cid, id, r.status)}`;
      return linkPage(req, reply, cid, row, body, core.gateway.simulated);
    }
    if (metodo !== 'qr') throw new AppError('INVALID_PARAMS', 'metodo must be qr or codigo');
    const r = await celularQr(core, p, id);
    return linkPage(req, reply, cid, row, await qrFragment(req, cid, id, r), core.gateway.simulated);
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/vincular/qr', pre, async (req, reply) => {
    const { cid, id, p } = await lineOf(core, req);
    const r = await celularQr(core, p, id);
    return sendFragment(reply, await qrFragment(req, cid, id, r));
  });

  app.get<{ Params: Params }>('/c/:cid/celulares/:id/vincular/estado', pre, async (req, reply) => {
    const { cid, id, p } = await lineOf(core, req);
    return sendFragment(reply, codeStatusFragment(cid, id, (await celularStatus(core, p, id)).status));
  });
}
