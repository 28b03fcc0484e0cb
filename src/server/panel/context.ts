import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal, Principal } from '../../core/auth.js';
import type { Core } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { csrfMatches, resumeSession, type PanelSession } from '../../core/panel-sessions.js';

/** The panel's cookies: the session id, and a one-shot notice shown after a redirect. */
export const SESSION_COOKIE = 'pasarela_panel';
export const FLASH_COOKIE = 'pasarela_aviso';

export interface PanelRequest {
  sessionId: string;
  session: PanelSession;
  principal: Principal;
}

declare module 'fastify' {
  interface FastifyRequest {
    panel?: PanelRequest;
  }
}

/** Cookie attributes: Secure when the request came over HTTPS (directly or, with --trust-proxy, at the proxy). */
export function cookieOptions(req: FastifyRequest, maxAgeSec?: number) {
  return {
    path: '/panel/',
    httpOnly: true,
    sameSite: 'strict' as const,
    secure: req.protocol === 'https',
    ...(maxAgeSec !== undefined ? { maxAge: maxAgeSec } : {}),
  };
}

/** Sends the browser to a panel page: a 303 for a plain form, HX-Redirect for an htmx request. */
export function redirect(req: FastifyRequest, reply: FastifyReply, to: string): FastifyReply {
  if (req.headers['hx-request'] === 'true') return reply.header('HX-Redirect', to).code(204).send();
  return reply.redirect(to, 303);
}

/** A notice for the next page (our own words only, never a value a user sent that could hold a secret). */
export function flash(req: FastifyRequest, reply: FastifyReply, text: string): void {
  reply.setCookie(FLASH_COOKIE, text, cookieOptions(req, 60));
}

/**
 * preHandler of every signed-in page: resumes the session (else to the sign-in
 * page) and, on a change (any method but GET/HEAD), checks the form's CSRF
 * token: a forged form changes nothing.
 */
export function signedIn(core: Core) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const id = req.cookies[SESSION_COOKIE];
    const resumed = id ? await resumeSession(core, id) : null;
    if (!id || !resumed) {
      if (id) reply.clearCookie(SESSION_COOKIE, cookieOptions(req));
      if (req.method === 'GET' || req.method === 'HEAD') return redirect(req, reply, `/panel/login?next=${encodeURIComponent(req.url)}`);
      throw new AppError('UNAUTHORIZED', 'your session has ended: sign in again');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
      const presented = body._csrf ?? req.headers['x-csrf-token'];
      if (!csrfMatches(resumed.session, presented))
        throw new AppError('FORBIDDEN', 'this form has expired or did not come from the panel: reload the page and try again');
    }
    req.panel = { sessionId: id, ...resumed };
  };
}

export function panelOf(req: FastifyRequest): PanelRequest {
  if (!req.panel) throw new AppError('UNAUTHORIZED', 'sign in first');
  return req.panel;
}

/** Only the operator may open this page. */
export function requireOperator(req: FastifyRequest): void {
  if (panelOf(req).principal.kind !== 'operator') throw new AppError('FORBIDDEN', 'this page is for the operator');
}

/**
 * The authority a client's page acts with: that client's own session, a
 * celular session of one of its lines (core then limits it to that line), or
 * the operator acting for the client (audited as the operator).
 */
export async function clientScope(core: Core, req: FastifyRequest, clienteId: number): Promise<ClientPrincipal> {
  const p = panelOf(req).principal;
  if (p.kind === 'operator') {
    const cliente = await core.store.getCliente(clienteId);
    if (!cliente) throw new AppError('CLIENT_NOT_FOUND', `client ${clienteId} not found`);
    return { kind: 'client', cliente, operador: true };
  }
  if (p.cliente.id !== clienteId) throw new AppError('CLIENT_NOT_FOUND', `client ${clienteId} not found`);
  return p;
}
