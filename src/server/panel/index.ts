import cookie from '@fastify/cookie';
import type { FastifyError, FastifyInstance } from 'fastify';
import type { Core } from '../../core/context.js';
import type { EventStreams } from '../../core/events/event-stream-pump.js';
import { AppError } from '../../core/api/errors.js';
import type { WebhookControl } from '../../webhooks/dispatcher.js';
import type { SendDeps } from '../../core/sending/send.js';
import { registerAssets } from './assets.js';
import { formSettled } from './context.js';
import { errorPage } from './error-page.js';
import loginPages from './pages/login.js';
import homePages from './pages/home.js';
import clientesPages from './pages/clientes.js';
import servidoresPages from './pages/servidores.js';
import auditoriaPages from './pages/auditoria.js';
import cuentaPages from './pages/cuenta.js';
import celularesPages from './pages/celulares.js';
import gruposPages from './pages/grupos.js';
import vincularPages from './pages/vincular.js';
import historialPages from './pages/historial.js';
import mensajePages from './pages/mensaje.js';
import recibidosPages from './pages/recibidos.js';
import webhookPages from './pages/webhook.js';
import eventosPages from './pages/eventos.js';
import shownOncePages from './shown-once.js';
import graficasPages from './pages/graficas.js';
import movimientosPages from './pages/movimientos.js';
import colaPages from './pages/cola.js';

export interface PanelDeps {
  core: Core;
  send: SendDeps;
  webhooks: WebhookControl;
  /** This node's event streams: the monitor's stream is one of them (the per-client cap counts it). */
  streams: EventStreams;
}

/**
 * The operator panel at /panel/ (docs/decisions.md D-75): server-rendered
 * pages over the same core functions as the API. Its own scope: cookies,
 * security headers and HTML error pages apply to its routes only, so the
 * legacy /panel/api_wa.php (registered with the send routes) is untouched.
 */
export default async function panel(app: FastifyInstance, opts: PanelDeps) {
  // Only the dependencies go on to the pages (opts also carries this plugin's prefix).
  const deps: PanelDeps = { core: opts.core, send: opts.send, webhooks: opts.webhooks, streams: opts.streams };
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
  app.addHook('onSend', formSettled(opts.core));
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
  await app.register(gruposPages, deps);
  await app.register(vincularPages, deps);
  await app.register(historialPages, deps);
  await app.register(mensajePages, deps);
  await app.register(recibidosPages, deps);
  await app.register(webhookPages, deps);
  await app.register(eventosPages, deps);
  await app.register(shownOncePages, deps);
  await app.register(graficasPages, deps);
  await app.register(movimientosPages, deps);
  await app.register(colaPages, deps);
}
