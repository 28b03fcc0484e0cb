import { celularInScope, type ClientPrincipal } from '../auth/auth.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import { eventBody, type LoggedEvent } from './event-log.js';

/**
 * What a client's event stream (`GET /api/eventos.php`, docs/design.md §11)
 * carries: its events from the store's log, in log order, filtered by kind
 * and line, resumed after an event id (docs/decisions.md D-71). The pump
 * that reads and writes them is in event-stream-pump.ts.
 */

/** The kinds a stream may ask for (`eventos`); `all` (the default) is every one, the webhook test events too. */
export const STREAM_EVENT_KINDS = ['message.status', 'session.status', 'messages.received', 'celular.frenado', 'celular.reanudado', 'webhook.test'] as const;

export interface StreamScope {
  clienteId: number;
  /** One line's events only: a celular credential's own line, or the `celular_id` filter. */
  celularId: number | null;
  /** null: every kind. */
  kinds: ReadonlySet<string> | null;
}

export interface StreamQuery {
  /** A comma list of kinds, or `all`. */
  eventos?: string;
  celular_id?: number;
}

/** The scope a principal's query asks for: a celular key never sees past its own line; another client's line is 404, a sibling 403. */
export async function streamScope(core: Pick<Core, 'store'>, p: ClientPrincipal, q: StreamQuery): Promise<StreamScope> {
  let kinds: Set<string> | null = null;
  if (q.eventos !== undefined) {
    const list = q.eventos
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean);
    const known: readonly string[] = STREAM_EVENT_KINDS;
    const unknown = list.filter((k) => k !== 'all' && !known.includes(k));
    if (list.length === 0 || unknown.length > 0) {
      fail('INVALID_PARAMS', `eventos: ${unknown.length > 0 ? `unknown kind ${unknown.join(', ')}` : 'empty'}; a comma list of ${known.join(', ')} or all`);
    }
    if (!list.includes('all')) kinds = new Set(list);
  }
  let celularId = p.kind === 'celular' ? p.celular.id : null;
  if (q.celular_id !== undefined) celularId = (await celularInScope(core, p, q.celular_id)).id;
  return { clienteId: p.cliente.id, celularId, kinds };
}

/** Whether a logged event goes on a stream of this scope (the client is checked again: the log was read by client, this is the guard). */
export function inScope(scope: StreamScope, ev: LoggedEvent): boolean {
  if (ev.cliente_id !== scope.clienteId) return false;
  if (scope.celularId !== null && ev.celular_id !== scope.celularId) return false;
  return scope.kinds === null || scope.kinds.has(ev.evento);
}

/**
 * The id a stream starts after. With `lastId` (Last-Event-ID or `desde_id`):
 * that event, while the log keeps it; an id no longer kept, unknown, or
 * another client's is refused before the stream starts (410): resuming from
 * anywhere else would skip or repeat events silently. Without one: a
 * following stream starts at the log's end (what happens from now on); a
 * one-shot read (`seguir=false`) from the oldest kept.
 */
export async function streamStart(core: Pick<Core, 'store'>, scope: StreamScope, lastId: string | undefined, follow: boolean): Promise<string | null> {
  if (lastId !== undefined && lastId !== '') {
    if (!(await core.store.eventKept(scope.clienteId, lastId))) {
      fail('EVENT_NOT_KEPT', `event ${lastId} is not in this client's log (events are kept 72 h): connect without Last-Event-ID and read the state afresh`);
    }
    return lastId;
  }
  return follow ? core.store.newestEventId(scope.clienteId) : null;
}

/** One SSE event: the webhook body on one `data:` line (JSON has no raw newlines). */
export function sseFrame(ev: LoggedEvent): string {
  return `id: ${ev.id}\nevent: ${ev.evento}\ndata: ${eventBody(ev)}\n\n`;
}
