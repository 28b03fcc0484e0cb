import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { celularInScope, type ClientPrincipal } from '../../../core/auth/auth.js';
import { iso } from '../../../core/time/clock.js';
import { AppError } from '../../../core/api/errors.js';
import type { SessionProfile } from '../../../core/ports/gateway.js';
import type { CelularRow } from '../../../core/ports/model.js';
import { hasSession, logoutCelular, restartCelular } from '../../../core/accounts/session-actions.js';
import { clientScope, flash, redirect, signedIn } from '../context.js';
import { csrfField, errorText, formErrorsOf, formValues, generalError, NO_ERRORS, type FormErrors } from '../forms.js';
import { html, type Html } from '../html.js';
import type { PanelDeps } from '../index.js';
import { sendFragment } from '../layout.js';
import { shortTime } from './overview.js';
import { lineUrl, pathId, statusBadge } from './lines-common.js';

/**
 * A line page's "Session" card: the session's status, the linked phone's
 * name and number, and Log out (confirmed: linking again needs a new scan)
 * and Restart; each a POST to the core function the API calls
 * (core/accounts/session-actions.ts), answered by a redirect with a notice. Works
 * for the client, the line's own session and the operator.
 */

const LOGOUT_FIELDS = ['confirmar'] as const;

/** The card's forms as last sent, when one was refused. */
export interface SessionForm {
  values: Record<string, string>;
  errors: FormErrors;
}

export function sessionCard(req: FastifyRequest, row: CelularRow, perfil: SessionProfile | null, form?: SessionForm): Html {
  const url = lineUrl(row.cliente_id, row.id);
  const errors = form?.errors ?? NO_ERRORS;
  const confirmErr = errors.fields.confirmar;
  const phone =
    perfil === null
      ? html`<span class="empty">${row.last_status === 'connected' ? 'the gateway does not say' : 'shown once the line is connected'}</span>`
      : html`${perfil.nombre ?? html`<span class="empty">no name</span>`}${perfil.numero ? html` · +${perfil.numero}` : ''}`;
  const facts = html`<dl class="facts">
    <dt>Status</dt>
    <dd>${statusFragment(url, row.last_status)}</dd>
    <dt>Linked phone</dt>
    <dd>${phone}</dd>
    <dt>Checked</dt>
    <dd>
      ${
        row.last_status_check === null
          ? html`<span class="empty">never</span>`
          : html`<time datetime="${iso(row.last_status_check)}">${shortTime(row.last_status_check)}</time>`
      }
    </dd>
  </dl>`;
  if (!hasSession(row)) {
    return html`<section aria-labelledby="session-h">
      <h2 id="session-h">Session</h2>
      <div class="card">
        ${facts} ${generalError(errors)}
        <p>There is no session to log out or restart: link the line first (Link this line, above).</p>
      </div>
    </section>`;
  }
  return html`<section aria-labelledby="session-h">
    <h2 id="session-h">Session</h2>
    <div class="card">
    ${facts} ${generalError(errors)}
    <form method="post" action="${url}/reiniciar" class="session-action">
      ${csrfField(req)}
      <p>Restart drops the connection and connects again with the same link; sends wait meanwhile.</p>
      <button type="submit" class="secondary">Restart session</button>
    </form>
    <form method="post" action="${url}/logout" class="session-action danger-zone">
      ${csrfField(req)}
      <div class="field${confirmErr ? ' invalid' : ''}">
        <label class="check" for="f-confirmar"
          ><input id="f-confirmar" type="checkbox" name="confirmar" value="1" required ${confirmErr ? html`aria-invalid="true" aria-describedby="f-confirmar-error"` : ''} />
          I understand: logging out ends the link, and linking the line again needs a new QR scan or pairing code.</label
        >
        ${confirmErr ? html`<p id="f-confirmar-error" class="field-error" role="alert">${errorText(confirmErr)}</p>` : ''}
      </div>
      <button type="submit" class="danger">Log out</button>
    </form>
    </div>
  </section>`;
}

/** The card's status as recorded, read again every few seconds (the page's session badge asks the gateway; this reads what that recorded). */
function statusFragment(url: string, status: string | null): Html {
  return html`<span id="session-card-status" hx-get="${url}/sesion-card" hx-trigger="every 5s" hx-swap="outerHTML">${statusBadge(status)}</span>`;
}

/** What re-renders the line page with the card's refused form (pages/celulares.ts's linePage). */
export type LinePageWithSession = (
  req: FastifyRequest,
  reply: FastifyReply,
  p: ClientPrincipal,
  cid: number,
  row: CelularRow,
  form: SessionForm,
  status: number,
) => Promise<unknown>;

/** The card's two POSTs under /c/:cid/celulares/:id/. */
export function sessionRoutes(app: FastifyInstance, deps: PanelDeps, linePage: LinePageWithSession): void {
  const { core } = deps;
  const pre = { preHandler: signedIn(core) };
  type Params = { cid: string; id: string };

  const act = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply, action: 'logout' | 'reiniciar') => {
    const cid = pathId(req.params.cid);
    const id = pathId(req.params.id);
    const p = await clientScope(core, req, cid);
    const row = await celularInScope(core, p, id);
    const values = formValues(req);
    try {
      // The confirmation is checked here too: a form sent without the browser's check logs nothing out by mistake.
      if (action === 'logout' && values.confirmar !== '1')
        throw new AppError('INVALID_PARAMS', 'confirmar: tick the box to confirm: linking the line again will need a new scan');
      const r = action === 'logout' ? await logoutCelular(core, p, id) : await restartCelular(core, p, id);
      flash(
        req,
        reply,
        action === 'logout'
          ? `Line ${row.numero} logged out: link it again to send.`
          : `Line ${row.numero} restarting (status ${r.status}): it connects again by itself.`,
      );
    } catch (err) {
      // The gateway's own refusals (502, 503) are answers, not server faults: shown above the card.
      const errors: FormErrors = err instanceof AppError && err.status > 500 ? { fields: {}, general: err } : formErrorsOf(err, LOGOUT_FIELDS);
      const status = (errors.general ?? Object.values(errors.fields)[0])!.status;
      const fresh = (await core.store.getCelular(id)) ?? row;
      return linePage(req, reply, p, cid, fresh, { values, errors }, status);
    }
    return redirect(req, reply, lineUrl(cid, id));
  };

  app.get<{ Params: Params }>('/c/:cid/celulares/:id/sesion-card', pre, async (req, reply) => {
    const cid = pathId(req.params.cid);
    const row = await celularInScope(core, await clientScope(core, req, cid), pathId(req.params.id));
    return sendFragment(reply, statusFragment(lineUrl(cid, row.id), row.last_status));
  });

  app.post<{ Params: Params }>('/c/:cid/celulares/:id/logout', pre, (req, reply) => act(req, reply, 'logout'));
  app.post<{ Params: Params }>('/c/:cid/celulares/:id/reiniciar', pre, (req, reply) => act(req, reply, 'reiniciar'));
}
