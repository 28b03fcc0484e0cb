import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { signIn, signOut } from '../../../core/panel-sessions.js';
import { PANEL_SESSION } from '../../../core/panel-sessions.js';
import { SESSION_COOKIE, cookieOptions, flash, panelOf, redirect, signedIn } from '../context.js';
import { field, formErrorsOf, formValues, generalError, NO_ERRORS, type FormErrors } from '../forms.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import type { PanelDeps } from '../index.js';

/** Only a panel path of ours is a place to go back to after signing in (never another site). */
const safeNext = (next: unknown): string =>
  typeof next === 'string' && /^\/panel\/(?!\/)[^\\\s]*$/.test(next) && !next.startsWith('/panel/login') ? next : '/panel/';

function loginForm(req: FastifyRequest, reply: FastifyReply, next: string, errors: FormErrors, status = 200) {
  return sendPage(
    req,
    reply,
    { title: 'Sign in' },
    html`<p>Sign in with the operator token, a client key (<code>WAC_...</code>) or a celular key (<code>WA_...</code>).</p>
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
    reply.clearCookie(SESSION_COOKIE, cookieOptions(req));
    flash(req, reply, 'You are signed out.');
    return redirect(req, reply, '/panel/login');
  });
}
