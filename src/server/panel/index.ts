import cookie from '@fastify/cookie';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Core } from '../../core/context.js';
import { AppError, ERRORS } from '../../core/errors.js';
import type { WebhookControl } from '../../webhooks/dispatcher.js';
import type { SendDeps } from '../../core/send.js';
import { toAppError } from '../errors.js';
import { registerAssets } from './assets.js';
import { redirect } from './context.js';
import { errorText } from './forms.js';
import { html } from './html.js';
import { sendFragment, sendPage } from './layout.js';
import loginPages from './pages/login.js';
import homePages from './pages/home.js';
import clientesPages from './pages/clientes.js';
import servidoresPages from './pages/servidores.js';
import auditoriaPages from './pages/auditoria.js';
import cuentaPages from './pages/cuenta.js';
import celularesPages from './pages/celulares.js';
import vincularPages from './pages/vincular.js';
import historialPages from './pages/historial.js';
import recibidosPages from './pages/recibidos.js';
import webhookPages from './pages/webhook.js';
import colaPages from './pages/cola.js';

export interface PanelDeps {
  core: Core;
  send: SendDeps;
  webhooks: WebhookControl;
}

/**
 * The operator panel at /panel/ (docs/decisions.md D-75): server-rendered
 * pages over the same core functions as the API. Its own scope: cookies,
 * security headers and HTML error pages apply to its routes only, so the
 * legacy /panel/api_wa.php (registered with the send routes) is untouched.
 */
export default async function panel(app: FastifyInstance, opts: PanelDeps) {
  // Only the dependencies go on to the pages (opts also carries this plugin's prefix).
  const deps: PanelDeps = { core: opts.core, send: opts.send, webhooks: opts.webhooks };
  // Pages, not API: none of them goes into the API document (openapi.json, /docs); the legacy endpoint, registered elsewhere, stays.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  await app.register(cookie);
  app.addHook('onRequest', async (req, reply) => {
    reply
      .header(
        'Content-Security-Policy',
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      )
      .header('X-Frame-Options', 'DENY')
      .header('X-Content-Type-Options', 'nosniff')
      // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with a form, and the check below needs it.
      .header('Referrer-Policy', 'same-origin');
    // A change must come from a panel page: a browser names the page's origin, which must be ours.
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== `${req.protocol}://${req.host}`) throw new AppError('FORBIDDEN', 'this form did not come from the panel');
    }
  });
  app.setErrorHandler((err: FastifyError, req, reply) => errorPage(err, req, reply));
  app.setNotFoundHandler((req, reply) => errorPage(new AppError('ROUTE_NOT_FOUND', 'there is no such page'), req, reply));

  registerAssets(app);
  await app.register(loginPages, deps);
  await app.register(homePages, deps);
  await app.register(clientesPages, deps);
  await app.register(servidoresPages, deps);
  await app.register(auditoriaPages, deps);
  await app.register(cuentaPages, deps);
  await app.register(celularesPages, deps);
  await app.register(vincularPages, deps);
  await app.register(historialPages, deps);
  await app.register(recibidosPages, deps);
  await app.register(webhookPages, deps);
  await app.register(colaPages, deps);
}

/** An error as a page: the API's words and code; a server fault without detail (it is logged). */
function errorPage(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply) {
  const e = toAppError(err);
  if (e.status >= 500) req.log.error({ err }, 'panel request failed');
  if (e.row === ERRORS.UNAUTHORIZED && req.url !== '/panel/login') return redirect(req, reply, '/panel/login');
  if (e.extras.retryAfter !== undefined) reply.header('Retry-After', String(e.extras.retryAfter));
  // A live part refused for good (a suspended client's QR, a line deleted meanwhile): the refusal takes the part's
  // place, so it shows and the polling ends. htmx swaps only a 2xx; a fault (5xx) keeps polling, it may pass.
  if (req.headers['hx-request'] === 'true' && e.status < 500) return sendFragment(reply, html`<p class="error" role="alert">${errorText(e)}</p>`);
  const title = e.status === 404 ? 'Not found' : e.status === 403 ? 'Not allowed' : e.status >= 500 ? 'Something went wrong' : 'That did not work';
  return sendPage(
    req,
    reply,
    { title },
    html`<p class="error" role="alert">
        ${e.status >= 500 ? 'The server could not answer this page. Try again; if it keeps happening, look at the server log.' : errorText(e)}
      </p>
      <p><a href="/panel/">Back to the panel</a></p>`,
    e.status,
  );
}
