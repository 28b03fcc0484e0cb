import type { EngineAuthStore } from '../ports/engine-auth.js';
import type { AccountsStore } from '../ports/accounts.js';

/**
 * When a line's engine state (`--gateway baileys`, D-116) goes, whatever the
 * engine's socket does: the functions the engine calls, and deleteCelular
 * (core/accounts/celulares.ts) calls too.
 */

/** Baileys' close code when the phone removed the linked device (DisconnectReason.loggedOut): no login with this state will ever succeed. */
export const LOGGED_OUT_CLOSE = 401;

/**
 * Whether a socket's close ends the link for good, so its stored state is
 * removed: only a logout from the phone. Every other close (conflict,
 * restart required, a lost connection, a ban that may lift) keeps the state
 * for the reconnect.
 */
export function closeEndsLink(code: number | undefined): boolean {
  return code === LOGGED_OUT_CLOSE;
}

/**
 * Removes a line's stored state: its celular deleted, logged out from the
 * phone or by `celular logout`. The engine closes the line's socket first,
 * so no write of that socket lands after it. Idempotent.
 */
export function forgetEngineLine(store: EngineAuthStore, instancia: string): Promise<void> {
  return store.clearAuth(instancia);
}

/**
 * The lines whose state the engine reconnects at its start: those holding
 * state whose celular still exists. The state of a line deleted meanwhile
 * (a stop between the row's delete and its state's removal) is removed
 * here, so a deleted line's keys never outlive it for long.
 */
export async function engineLinesAtStart(
  store: Pick<EngineAuthStore, 'authInstancias' | 'clearAuth'> & Pick<AccountsStore, 'getCelularByInstancia'>,
): Promise<{ lines: string[]; removed: string[] }> {
  const lines: string[] = [];
  const removed: string[] = [];
  for (const instancia of await store.authInstancias()) {
    if (await store.getCelularByInstancia(instancia)) lines.push(instancia);
    else {
      await store.clearAuth(instancia);
      removed.push(instancia);
    }
  }
  return { lines, removed };
}
