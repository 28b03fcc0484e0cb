import { closeEndsLink, LOGGED_OUT_CLOSE } from '../../core/engine/engine-lines.js';
import type { SessionStatus } from '../../core/ports/model.js';

/**
 * What a closed socket means for the line, by the code Baileys reports in
 * `connection.update` (`lastDisconnect.error.output.statusCode`), read the way
 * Evolution API reads it in production (whatsapp.baileys.service.ts): the
 * terminal codes end the session, every other one is a lost connection that
 * the engine reconnects by itself (docs/decisions.md D-121).
 */
export interface CloseOutcome {
  status: SessionStatus;
  /** Connect again: at once (`now`), with backoff (`later`), or not (`no`). */
  reconnect: 'now' | 'later' | 'no';
  /** The stored credentials are dead: drop them (a new link needs a new scan). */
  forget: boolean;
  /** Why, for the log (a fixed phrase: never the network's own text). */
  reason: string;
  /** Another client holds the session: only a deliberate act (a restart, a link) takes it back, never a repair. */
  heldElsewhere?: true;
}

export function closeOutcome(code: number | undefined, registered: boolean): CloseOutcome {
  // Whether the stored state goes is core's rule (engine-lines.ts), the same for every close.
  const forget = closeEndsLink(code);
  switch (code) {
    case LOGGED_OUT_CLOSE:
      // The phone removed this device (or a login with removed credentials was refused).
      return { status: 'logged_out', reconnect: 'no', forget, reason: 'logged out from the phone' };
    case 402:
    case 403:
    case 406:
      // Banned or locked: reconnecting only repeats the refusal.
      return { status: 'logged_out', reconnect: 'no', forget, reason: 'the network refuses this number (banned or locked)' };
    case 440:
      // Another client took the session; reconnecting would take it back and the two would fight.
      return { status: 'disconnected', reconnect: 'no', forget, reason: 'replaced by another connection', heldElsewhere: true };
    case 515:
      // Sent right after a scan links the line, and from time to time after: a new socket logs in.
      return { status: 'connecting', reconnect: 'now', forget, reason: 'restart required' };
    default:
      // A line waiting for a scan whose QR codes ran out (408) is not retried: the next `connect` starts again.
      if (!registered) return { status: 'disconnected', reconnect: 'no', forget, reason: 'no scan before the QR codes ran out' };
      return { status: 'connecting', reconnect: 'later', forget, reason: 'connection lost' };
  }
}

/** The HTTP-like code Baileys attaches to a close (a Boom error's `output.statusCode`). */
export function closeCode(err: unknown): number | undefined {
  const output = (err as { output?: { statusCode?: unknown } } | undefined)?.output;
  return typeof output?.statusCode === 'number' ? output.statusCode : undefined;
}
