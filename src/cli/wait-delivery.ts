import type { Ctx } from './context.js';
import { followEvents } from './event-follow.js';
import { CliError } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';
import type { Mensaje } from './commands/historial.js';
import { fetchMensaje } from './commands/mensaje.js';

/** The states `send --wait` may wait for, in the order a message passes them. */
export const WAIT_ESTADOS = ['enviado', 'entregado', 'leido'] as const;
export type WaitEstado = (typeof WAIT_ESTADOS)[number];
const RANK: Record<string, number> = { pendiente: 0, enviado: 1, entregado: 2, leido: 3 };

/** Where a message in `estado` stands against the state waited for: there (or past it), ended in error, or not yet. */
export function standing(estado: string, target: WaitEstado): 'reached' | 'error' | 'waiting' {
  if (estado === 'error') return 'error';
  return (RANK[estado] ?? 0) >= RANK[target]! ? 'reached' : 'waiting';
}

export type WaitOutcome = { kind: 'reached' | 'error'; answer: { mensaje: Mensaje } } | { kind: 'timeout'; estado: string | null };

/**
 * Waits until message `msgId` reaches `target` (or a later state) or ends in
 * error, following the event stream rather than polling: once the stream is
 * open the message is read once (what happened before the stream opened),
 * then each `message.status` event of it is looked at; the record is read
 * again when it is done. `timeoutMs` ends the wait.
 */
export async function waitForMensaje(ctx: Ctx, msgId: string, target: WaitEstado, timeoutMs: number): Promise<WaitOutcome> {
  const timer = new AbortController();
  const t = setTimeout(() => timer.abort(), timeoutMs);
  let done: 'reached' | 'error' | null = null;
  let estado: string | null = null;
  const look = (e: string, stop: () => void) => {
    estado = e;
    const s = standing(e, target);
    if (s !== 'waiting') {
      done = s;
      stop();
    }
  };
  try {
    await followEvents(
      ctx,
      {
        follow: true,
        eventos: 'message.status',
        signal: timer.signal,
        onOpen: async (stop) => look((await fetchMensaje(ctx, msgId)).mensaje.estado, stop),
      },
      (ev, stop) => {
        const body = JSON.parse(ev.data) as { data?: { msg_id?: string; estado?: string } };
        if (body.data?.msg_id === msgId && typeof body.data.estado === 'string') look(body.data.estado, stop);
      },
    );
  } finally {
    clearTimeout(t);
  }
  if (done === null) {
    // Ctrl-C, not the timeout: the wait was given up.
    if (!timer.signal.aborted) throw new CliError(`stopped waiting for msg_id ${msgId} (${estado ?? 'pendiente'})`, EXIT.INTERRUPTED);
    return { kind: 'timeout', estado };
  }
  return { kind: done, answer: await fetchMensaje(ctx, msgId) };
}
