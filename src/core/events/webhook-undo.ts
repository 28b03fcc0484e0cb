import type { WebhookConfig } from '../ports/model.js';

/**
 * The undo stack of a client's webhook configuration, the same on every
 * store: each set or delete pushes what it replaced (null when there was
 * none), newest last, at most UNDO_KEEP deep, so a restore after a crashed
 * `webhook listen` and another listen still reaches the original. The stack is
 * JSON in the row's `prev`; `activo` is 0/1 there whatever the store's type,
 * so a row copied between stores restores alike.
 */
export type SavedWebhook = { url: string; secret: string | null; eventos: string; activo: number } | null;

export const UNDO_KEEP = 10;

/** A stored configuration row as both stores read it (`activo` as 0/1 or boolean, `eventos` as JSON). */
export interface StoredWebhook {
  cliente_id: number;
  url: string;
  secret: string | null;
  eventos: string;
  activo: number | boolean;
  updated_at: number;
  prev?: string | null;
}

export function webhookConfigOf(r: StoredWebhook): WebhookConfig {
  return {
    cliente_id: r.cliente_id,
    url: r.url,
    secret: r.secret,
    eventos: JSON.parse(r.eventos) as string[],
    activo: r.activo === true || r.activo === 1,
    updated_at: r.updated_at,
  };
}

/** A stored row as a configuration; null for none (no row, or one left empty by a delete). */
export function storedConfig(r: StoredWebhook | null | undefined): WebhookConfig | null {
  return r && r.url !== '' ? webhookConfigOf(r) : null;
}

/** The stack after pushing what `before` holds (a row with an empty url, or none, pushes null). */
export function pushUndo(before: StoredWebhook | null | undefined): string {
  const stack = before?.prev ? (JSON.parse(before.prev) as SavedWebhook[]) : [];
  const current: SavedWebhook =
    before && before.url !== ''
      ? { url: before.url, secret: before.secret, eventos: before.eventos, activo: before.activo === true || before.activo === 1 ? 1 : 0 }
      : null;
  return JSON.stringify([...stack, current].slice(-UNDO_KEEP));
}

/** The configuration to put back and the stack left (null when empty); null when there is nothing to undo. */
export function popUndo(prev: string | null | undefined): { top: SavedWebhook; rest: string | null } | null {
  const stack = prev ? (JSON.parse(prev) as SavedWebhook[]) : [];
  if (stack.length === 0) return null;
  const top = stack.pop()!;
  return { top, rest: stack.length > 0 ? JSON.stringify(stack) : null };
}
