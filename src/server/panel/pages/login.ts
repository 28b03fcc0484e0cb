import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PANEL_SESSION, SESSION_ENDS, signIn, signOut, type SessionEnd } from '../../../core/auth/panel-sessions.js';
import { SESSION_COOKIE, cookieOptions, flash, panelOf, panelPath, redirect, signedIn } from '../context.js';
import { field, formErrorsOf, formValues, generalError, NO_ERRORS, type FormErrors } from '../forms.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import type { PanelDeps } from '../index.js';

const safeNext = (next: unknown): string => panelPath(next) ?? '/panel/';

/** Why the session ended, in words (`fin` of the redirect that brought the person here). */
const ENDED: Record<SessionEnd, string> = {
  credential: 'the key or token it was opened with was rotated or removed. Sign in with the new one.',
  idle: `it expired after ${PANEL_SESSION.idleMs / 60_000} minutes idle.`,
  absolute: `sessions last ${PANEL_SESSION.absoluteMs / 3_600_000} hours from signing in.`,
  signed_out: 'you signed out (in this tab or another).',
};

/** What the sign-in page says about the session that ended and the change it lost, if anything. */
function endedNotice(q: Record<string, unknown>) {
  const fin = SESSION_ENDS.find((e) => e === q.fin);
  const lost = q.perdido === '1';
  if (!fin && !lost) return html``;
  return html`<div class="notice" role="alert">
    ${fin ? html`<p>Your session ended: ${ENDED[fin]}</p>` : ''}
    ${lost ? html`<p><strong>Your change was not saved.</strong> Sign in, and you return to the page to make it again.</p>` : html`<p>Sign in, and you return to the page you were on.</p>`}
  </div>`;
}

function loginForm(req: FastifyRequest, reply: FastifyReply, next: string, errors: FormErrors, status = 200) {
  return sendPage(
    req,
    reply,
    { title: 'Sign in' },
    html`${endedNotice(req.method === 'GET' ? (req.query as Record<string, unknown>) : {})}
      <p>Sign in with the operator token, a client key (<code>WAC_...</code>) or a celular key (<code>WA_...</code>).</p>
      ${generalError(errors)}
      <form method="post" action="/panel/login" class="card narrow">
        <input type="hidden" name="next" value="${next}" />
        ${field({ name: 'credencial', label: 'Token or key', type: 'password', required: true, autocomplete: 'current-password', hint: 'It is sent once; the panel keeps a session cookie, never the key.' }, errors)}
        <button type="submit">Sign in</button>
      </form>`,
    status,
  );
}

export default async function loginPages(app: FastifyInstance, { core }: PanelDeps) {
  app.get('/login', async (req, reply) => loginForm(req, reply, safeNext((req.query as Record<string, unknown>).next), NO_ERRORS));

  app.post('/login', async (req, reply) => {
    const values = formValues(req);
    const next = safeNext(values.next);
    try {
      const { id } = await signIn(core, values.credencial ?? '', req.ip);
      reply.setCookie(SESSION_COOKIE, id, cookieOptions(req, Math.floor(PANEL_SESSION.absoluteMs / 1000)));
      return redirect(req, reply, next);
    } catch (err) {
      const errors = formErrorsOf(err, ['credencial']);
      const e = errors.fields.credencial ?? errors.general!;
      if (e.extras.retryAfter !== undefined) reply.header('Retry-After', String(e.extras.retryAfter));
      // Any refusal of the credential is about the one field.
      return loginForm(req, reply, next, { fields: { credencial: e } }, e.status);
    }
  });

  app.post('/logout', { preHandler: signedIn(core) }, async (req, reply) => {
    await signOut(core, panelOf(req).sessionId);
    // The cookie stays: its row now says only "signed out", so another open tab's next request or poll (same cookie)
    // reaches the sign-in page with that reason; a cleared cookie would arrive as none, with no reason to give.
    flash(req, reply, 'You are signed out.');
    return redirect(req, reply, '/panel/login');
  });
}
