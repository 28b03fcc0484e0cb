import { GatewayFailure } from '../ports/gateway.js';
import type { ErrorClase } from '../ports/model.js';

/**
 * What became of a message that ended in error, as a class stored beside its
 * `error` text (docs/decisions.md D-65). Behaviour (an Idempotency-Key's
 * repeated answer, `send --wait`'s exit code) reads the class, never the
 * wording, which stays free for people.
 *
 * A failed gateway call's class: refused for good (a retry fails again),
 * provably never sent (rate-limited, or the gateway never took it), or
 * unknown (it may have reached the recipient). Anything that is not a
 * GatewayFailure is an unexpected fault mid-send: unknown.
 */
export function failureClase(err: unknown): ErrorClase {
  if (!(err instanceof GatewayFailure)) return 'incierto';
  // Rate-limited is the network declining to take it now: nothing went.
  if (err.kind === 'rate_limited') return 'no_enviado';
  if (err.mayHaveSent) return 'incierto';
  return err.kind === 'permanent' ? 'rechazado' : 'no_enviado';
}

/**
 * Whether a failed message may be retried (`mensaje reintentar`, D-96): one
 * that provably never reached the recipient (never sent, cancelled, expired in the queue) or that
 * the network reported failed after taking it. Not one refused for good (it
 * fails again), nor one that may have reached the recipient (a retry could
 * deliver it twice: send it anew on purpose), nor an old row with no class.
 */
export function retryAllowed(clase: ErrorClase | null): boolean {
  return clase === 'no_enviado' || clase === 'cancelado' || clase === 'caducado' || clase === 'fallido';
}
