import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientPrincipal, Principal } from '../../core/auth/auth.js';
import type { Core } from '../../core/context.js';
import { AppError } from '../../core/api/errors.js';
import { claimFormToken, isFormToken, settleFormToken } from '../../core/auth/panel-forms.js';
import { csrfMatches, resumeOrEnded, type PanelSession } from '../../core/auth/panel-sessions.js';

/** The panel's cookies: the session id, and a one-shot notice shown after a redirect. */
export const SESSION_COOKIE = 'pasarela_panel';
export const FLASH_COOKIE = 'pasarela_aviso';

export interface PanelRequest {
  sessionId: string;
  session: PanelSession;
  principal: Principal;
  /** The one-use token this POST claimed first (settled by `formSettled` with where the answer sent the browser). */
  formToken?: string;
}

/** A repeated POST waits this long at most for the first to answer, looking every `FORM_WAIT_STEP_MS`. */
const FORM_WAIT_MS = 15_000;
const FORM_WAIT_STEP_MS = 50;

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

/** Only a panel path of ours is a place to go back to after signing in (never another site, never the sign-in page). */
export function panelPath(next: unknown): string | null {
  return typeof next === 'string' && /^\/panel\/(?!\/)[^\\\s]*$/.test(next) && !next.startsWith('/panel/login') ? next : null;
}

/** A full URL of this server (a Referer, HX-Current-URL) as a panel path, or null. */
function ownPanelPath(req: FastifyRequest, raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  try {
    const u = new URL(raw);
    return u.origin === new URL(`${req.protocol}://${req.host}`).origin ? panelPath(u.pathname + u.search) : null;
  } catch {
    return null;
  }
}

/**
 * The page a person was on when the session ended, to return to after signing
 * in: a page's own URL; for a polled fragment or a posted form, the page it
 * belongs to (htmx names it, a browser's Referer too), else the request's
 * path less its last part (a fragment lives under its page).
 */
function pageOf(req: FastifyRequest): string {
  const url = req.url.split('?')[0]!;
  const htmx = req.headers['hx-request'] === 'true';
  if (!htmx && (req.method === 'GET' || req.method === 'HEAD')) return panelPath(req.url) ?? '/panel/';
  return ownPanelPath(req, req.headers['hx-current-url']) ?? ownPanelPath(req, req.headers.referer) ?? panelPath(url.replace(/\/[^/]*$/, '')) ?? '/panel/';
}

/**
 * preHandler of every signed-in page: resumes the session (else to the
 * sign-in page, saying why it ended and, for a form, that its change was not
 * saved) and, on a change (any method but GET/HEAD), checks the form's CSRF
 * token, a forged form changes nothing, and its one-use token: a form sent
 * again acts once (D-90).
 */
export function signedIn(core: Pick<Core, 'store' | 'clock' | 'config'>) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const id = req.cookies[SESSION_COOKIE];
    const resumed = id ? await resumeOrEnded(core, id) : null;
    const change = req.method !== 'GET' && req.method !== 'HEAD';
    if (!id || !resumed || !('session' in resumed)) {
      // An unknown id is dropped; an ended one stays, so every open tab learns why (the row keeps only the reason).
      if (id && !resumed) reply.clearCookie(SESSION_COOKIE, cookieOptions(req));
      const q = new URLSearchParams({ next: pageOf(req) });
      if (resumed && 'ended' in resumed) q.set('fin', resumed.ended);
      // A form's change is lost (a poll's is not a person's change).
      if (change && req.headers['hx-request'] !== 'true') q.set('perdido', '1');
      return redirect(req, reply, `/panel/login?${q.toString()}`);
    }
    req.panel = { sessionId: id, ...resumed };
    if (!change) return;
    const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
    const presented = body._csrf ?? req.headers['x-csrf-token'];
    if (!csrfMatches(resumed.session, presented))
      throw new AppError('FORBIDDEN', 'this form has expired or did not come from the panel: reload the page and try again');
    if (!isFormToken(body._once)) return;
    const deadline = Date.now() + FORM_WAIT_MS;
    for (;;) {
      const first = await claimFormToken(core, id, body._once);
      if (first === null) {
        req.panel.formToken = body._once;
        return;
      }
      if (first.to !== null) {
        flash(req, reply, 'This form was sent more than once: it acted once, and this is the result.');
        return redirect(req, reply, first.to);
      }
      if (Date.now() >= deadline) throw new AppError('CONFLICT', 'this form is still being sent: wait a moment, then reload the page');
      await new Promise((r) => setTimeout(r, FORM_WAIT_STEP_MS));
    }
  };
}

/**
 * onSend hook of the panel: a POST that claimed its form's token records
 * where its answer sends the browser (a redirect) for the repeats, or frees
 * the token when it redirects nowhere (a refusal re-rendered, a fault).
 */
export function formSettled(core: Pick<Core, 'store' | 'clock'>) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const p = req.panel;
    if (!p?.formToken) return;
    const to = reply.statusCode === 303 ? reply.getHeader('location') : reply.getHeader('hx-redirect');
    await settleFormToken(core, p.sessionId, p.formToken, typeof to === 'string' ? to : null);
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
export async function clientScope(core: Pick<Core, 'store'>, req: FastifyRequest, clienteId: number): Promise<ClientPrincipal> {
  const p = panelOf(req).principal;
  if (p.kind === 'operator') {
    const cliente = await core.store.getCliente(clienteId);
    if (!cliente) throw new AppError('CLIENT_NOT_FOUND', `client ${clienteId} not found`);
    return { kind: 'client', cliente, operador: true };
  }
  if (p.cliente.id !== clienteId) throw new AppError('CLIENT_NOT_FOUND', `client ${clienteId} not found`);
  return p;
}
