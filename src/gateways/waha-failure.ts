import { GatewayFailure } from '../core/ports/gateway.js';
import { retryAfterMs } from '../core/time/retry-after.js';
import { describeBody, scrub, type Json, type JsonReply } from './http-json.js';

/**
 * How WAHA refusals become failure kinds (contract 5.4). WAHA answers a
 * network-side refusal as a 5xx carrying the engine's error text, so on 5xx
 * the text tells a rate limit or an unknown number from a gateway fault.
 */

/** WhatsApp's "slow down" as the engines word it (error 463 "reachout timelock", "rate-overlimit"). */
const RATE_LIMITED = /\b463\b|reachout|timelock|rate-overlimit|too many/i;
const NOT_ON_WHATSAPP = /not (exist|registered|on whatsapp)|no lid|invalid (wid|jid|number)/i;
const DEFAULT_RETRY_MS = 60_000;

export interface WahaFailureContext {
  instancia: string;
  /** The recipient (digits) of a send, named when the network does not know it. */
  numero?: string;
  /** Values that must never reach a message (the API key, inbound secrets); replaced by `***`. */
  redact: string[];
  /** Clock time, for a `Retry-After` given as a date. */
  now: number;
}

const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function text(v: unknown): string | undefined {
  if (typeof v === 'string' && v.trim() !== '') return v;
  if (Array.isArray(v) && v.length > 0) return v.map((x) => (typeof x === 'string' ? x : describeBody(x))).join('; ');
  return undefined;
}

/**
 * The error text of a WAHA answer, single line: NestJS puts it in `message`
 * (a string, or a list from validation), WAHA's 5xx in `exception.message`.
 * Only that text is matched, never the whole body, which may echo the request
 * (and so the text a customer sent).
 */
export function wahaMessage(body: unknown): string {
  let found: string | undefined;
  if (isObj(body)) {
    const exception = isObj(body.exception) ? body.exception : {};
    const message = isObj(body.message) ? body.message : {};
    found = text(body.message) ?? text(message.error) ?? text(message.message) ?? text(exception.message) ?? text(body.error);
  }
  return describeBody(found ?? body ?? '', 240);
}

/** Classifies any non-2xx answer of WAHA. */
export function classifyWaha(reply: JsonReply, ctx: WahaFailureContext): GatewayFailure {
  const { status } = reply;
  const msg = wahaMessage(reply.body);
  const fail = (m: string, kind: GatewayFailure['kind'], retry?: number, mayHaveSent = false) =>
    new GatewayFailure(scrub(m, ctx.redact), kind, retry, mayHaveSent);
  const retry = () => retryAfterMs(reply.headers['retry-after'], ctx.now) ?? DEFAULT_RETRY_MS;
  if (status === 422) return fail(`WAHA: session ${ctx.instancia} is not working (${msg})`, 'transient');
  if (status === 400) return fail(`WAHA refused the request: ${msg}`, 'permanent');
  if (status === 404) return fail(`session ${ctx.instancia} does not exist at the gateway`, 'transient');
  if (status === 401 || status === 403) return fail('WAHA refused the API key', 'transient');
  if (status === 413) return fail('WAHA refused the media as too large (413)', 'permanent');
  if (status === 429) return fail('WAHA: rate limited (429)', 'rate_limited', retry());
  if (status >= 500) {
    if (RATE_LIMITED.test(msg)) return fail(`WhatsApp rate limit (${msg})`, 'rate_limited', retry());
    if (NOT_ON_WHATSAPP.test(msg)) return fail(`${ctx.numero ?? 'the number'} is not on WhatsApp`, 'permanent');
  }
  // A server error may come after the message went.
  return fail(`WAHA ${status}: ${msg}`, 'transient', undefined, status >= 500);
}
