import { GatewayFailure } from '../core/ports/gateway.js';
import { retryAfterMs } from '../core/time/retry-after.js';
import { describeBody, scrub, type JsonReply } from './http-json.js';

/**
 * How Evolution API refusals become failure kinds. Evolution answers every
 * send failure as 400 with the error's text (contract 3.1), so the text is
 * what tells a dead session from a bad request; an unknown 400 is transient
 * (retried until the queue TTL rather than dropped). Since any failure comes
 * as a 400, only a text that proves nothing went out (a refusal, a session
 * closed before the send) has mayHaveSent false; an unknown 400 and a
 * connection lost or timed out mid-send may follow a message that went.
 */

/**
 * A session closed before the send: Evolution's "instance is not connected"
 * and Baileys' "Connection Closed", thrown when the socket is not open as a
 * node is to be written (and a message node is written without waiting for
 * an ack). Nothing went out, so a direct send's key is released.
 */
const SESSION_CLOSED = /connection closed|not connected/i;
/**
 * A connection that failed during the call ("Connection Lost", "Timed Out",
 * a socket error): the message may already have been written, so the
 * outcome is unknown (mayHaveSent).
 */
const CONNECTION_FAILED = /connection lost|timed out|socket/i;
/** Text of a socket that is gone or not open; the session, not the message, is the problem. */
export const CONNECTION_TROUBLE = new RegExp(`${SESSION_CLOSED.source}|${CONNECTION_FAILED.source}`, 'i');
const RATE_LIMIT = /rate-overlimit|rate limit|too many/i;
/** Validation texts of Evolution's schema and send routes: the same request will never pass. */
const VALIDATION =
  /owned media must be a url or base64|for base64 the file name must be informed|text is required|is not of a type|requires property|does not match pattern|invalid/i;
const DEFAULT_RETRY_MS = 60_000;

export interface ClassifyContext {
  instancia: string;
  /** Values that must never reach a message (the API key, secrets); replaced by `***`. */
  redact: string[];
  /** Clock time, for a `Retry-After` given as a date. */
  now: number;
}

/** The error text Evolution put in `response.message` (array of strings or objects, or a string), single line. */
export function evolutionMessage(body: unknown): string {
  const m = (body as { response?: { message?: unknown } } | null)?.response?.message;
  const parts = Array.isArray(m) ? m : m === undefined ? [] : [m];
  const text = parts.map((p) => (typeof p === 'string' ? p : describeBody(p))).join('; ');
  return describeBody(text || body, 240);
}

/** The `{exists:false}` entry Evolution answers for a number that is not on WhatsApp. */
function notOnWhatsApp(body: unknown): { number?: string; jid?: string } | undefined {
  const m = (body as { response?: { message?: unknown } } | null)?.response?.message;
  if (!Array.isArray(m)) return undefined;
  return m.find((x): x is { number?: string; jid?: string } => typeof x === 'object' && x !== null && (x as { exists?: unknown }).exists === false);
}

/** True when a failure says the instance's socket is closed (the session needs checking). */
export function isConnectionTrouble(f: GatewayFailure): boolean {
  return f.kind === 'transient' && CONNECTION_TROUBLE.test(f.message);
}

/** Classifies any non-2xx answer (and 200 `{error:true}` of connect/restart, passed as 400 by the caller). */
export function classifyEvolution(reply: JsonReply, ctx: ClassifyContext): GatewayFailure {
  const { status, body } = reply;
  const fail = (msg: string, kind: GatewayFailure['kind'], retry?: number, mayHaveSent = false) => new GatewayFailure(msg, kind, retry, mayHaveSent);
  // Only the gateway's own text is scrubbed: it is the part that could echo a key.
  const text = scrub(evolutionMessage(body), ctx.redact);
  const retry = () => retryAfterMs(reply.headers['retry-after'], ctx.now) ?? DEFAULT_RETRY_MS;
  if (status === 400) {
    const missing = notOnWhatsApp(body);
    if (missing) return fail(`${scrub(String(missing.number ?? missing.jid ?? 'the number').replace(/@.*/, ''), ctx.redact)} is not on WhatsApp`, 'permanent');
    if (SESSION_CLOSED.test(text)) return fail(`Evolution: the session of ${ctx.instancia} is not open (${text})`, 'transient');
    if (CONNECTION_FAILED.test(text))
      return fail(`Evolution: the session of ${ctx.instancia} lost its connection during the call (${text})`, 'transient', undefined, true);
    if (RATE_LIMIT.test(text)) return fail(`Evolution: rate limited (${text})`, 'rate_limited', retry());
    if (VALIDATION.test(text)) return fail(`Evolution refused the request: ${text}`, 'permanent');
    return fail(`Evolution 400: ${text}`, 'transient', undefined, true);
  }
  if (status === 401 || status === 403) return fail('Evolution refused the API key', 'transient');
  if (status === 404) return fail(`instance ${ctx.instancia} does not exist at the gateway`, 'transient');
  if (status === 413) return fail('Evolution refused the media as too large (413)', 'permanent');
  if (status === 429) return fail(`Evolution: rate limited (429)`, 'rate_limited', retry());
  // A server error may come after the message went (Evolution failing once Baileys sent it).
  return fail(`Evolution ${status}: ${text}`, 'transient', undefined, status >= 500);
}
