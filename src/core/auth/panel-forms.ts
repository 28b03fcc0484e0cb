import { randomBytes } from 'node:crypto';
import type { Core } from '../context.js';
import { hashSecret } from './keys.js';
import { PANEL_SESSION } from './panel-sessions.js';

/**
 * A panel form's one-use token (D-90). Every form carries a fresh random one
 * beside the CSRF token; the first POST that presents it claims it in the
 * store (an insert-if-absent, so on several nodes too) and acts, and records
 * where it sent the browser. A second POST of the same form (a double click,
 * a resend) acts not: it goes where the first went. A first POST that acted
 * not (a refusal shown beside its field, a fault) frees the token.
 */
export const PANEL_FORM = {
  namespace: 'panel-form',
  /** A used token is remembered as long as a session may live: a form older than that has no session to post with. */
  keepMs: PANEL_SESSION.absoluteMs,
} as const;

/** Where the first POST of a form sent the browser; null while it is still being answered. */
export interface FormUse {
  to: string | null;
}

export const newFormToken = (): string => randomBytes(18).toString('base64url');

/** A token is one of ours in shape, or it is ignored (the form then acts as a form without one). */
export const isFormToken = (t: unknown): t is string => typeof t === 'string' && /^[A-Za-z0-9_-]{24}$/.test(t);

/** The store's key: the token within its session (a token is never shared between sessions). */
const keyOf = (sessionId: string, token: string): string => hashSecret(`${sessionId}:${token}`);

/** Claims the token: null when this POST is the first (it acts), else what the first did (its `to`, or null while in flight). */
export async function claimFormToken(core: Pick<Core, 'store' | 'clock'>, sessionId: string, token: string): Promise<FormUse | null> {
  return core.store.kvClaim<FormUse>(PANEL_FORM.namespace, keyOf(sessionId, token), { to: null }, core.clock.now() + PANEL_FORM.keepMs);
}

/** The first POST's answer: a redirect is kept for the repeats; anything else frees the token (nothing was done). */
export async function settleFormToken(core: Pick<Core, 'store' | 'clock'>, sessionId: string, token: string, to: string | null): Promise<void> {
  const key = keyOf(sessionId, token);
  if (to === null) await core.store.kvDelete(PANEL_FORM.namespace, key);
  else await core.store.kvSet<FormUse>(PANEL_FORM.namespace, key, { to }, core.clock.now() + PANEL_FORM.keepMs);
}
