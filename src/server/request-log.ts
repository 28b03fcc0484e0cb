import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { LOG_EVENTS, NUMBER_RUN } from './log-events.js';

/**
 * Request ids and the one log line per request (docs/logs.md).
 *
 * Every request gets an id: the `X-Request-Id` a client or a proxy sent when
 * it is sane (1 to 128 visible ASCII characters), a new short one otherwise.
 * It is answered in `X-Request-Id` on every response and logged as `reqId`
 * on every line of the request (Fastify's child logger binds it).
 */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What a request id may be when it comes from outside: visible ASCII, no spaces, at most 128 characters. */
const SANE_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The URL as logged (docs/logs.md, "Format"): only what is known to be
 * harmless is shown, whatever name or place a client chose.
 *
 * - The query: every parameter by name, its value `[REDACTED]`, except a few
 *   names whose values are harmless (ids, paging, filters: SHOWN_PARAMS),
 *   shown when short and plain; the number parameters (`destinatario`, ...)
 *   as `[number]`. Names are decoded as the query parser decodes them
 *   (`k%65y`, `key[]`, `key%00`: all hidden); a name shaped like a
 *   credential, or not like a name at all (a text sent as `?hola amigo`), is
 *   hidden too.
 * - The path: a segment shaped like a credential (`WAC_<id>_...`, or 16 or
 *   more characters with digits, as tokens are) is `[REDACTED]`; runs of 7 or
 *   more digits (a number) are `[number]`; anything after `;` in a segment
 *   and a fragment (`#...`) are `[REDACTED]`.
 */
export function maskUrl(url: string): string {
  const q = url.search(/[?#]/);
  const path = q < 0 ? url : url.slice(0, q);
  const rest = q < 0 ? '' : url.slice(q);
  const hash = rest.indexOf('#');
  const query = rest.startsWith('?') ? rest.slice(1, hash < 0 ? undefined : hash) : '';
  let out = path.split('/').map(maskedSegment).join('/');
  if (rest.startsWith('?')) out += `?${maskedQuery(query)}`;
  if (hash >= 0) out += hash === rest.length - 1 ? '#' : '#[REDACTED]';
  return out;
}

/** Query parameters whose values are shown (when short and plain): ids, paging and filters. */
const SHOWN_PARAMS = new Set(['limit', 'page', 'por_pagina', 'estado', 'desde', 'hasta', 'imagen']);

/** Query parameters whose values are phone numbers (a recipient, a sender, a line's): `[number]`, so a reader sees one was given. */
const NUMBER_PARAMS = new Set(['destinatario', 'remitente', 'numero', 'de', 'para', 'telefono']);

/** Ids (`id`, `celular_id`, ...): shown whole when they look like ids (digits, or a message's UUID). */
const isIdParam = (name: string) => name === 'id' || name.endsWith('_id');
const ID_VALUE = /^(?:\d{1,20}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/** A parameter's name as names are: a word, with `.`, `-` or PHP's `[]`; up to 32 characters. */
const NAME_SHAPE = /^[\w.[\]-]{1,32}$/;

/** A shown value: short (credentials are 16 characters or more) and plain. */
const PLAIN_VALUE = /^[\w.:+-]{0,15}$/;

/** A client or celular key (src/core/auth/keys.ts), anywhere in a text. */
const KEY_SHAPE = /WAC?_\d+_/i;

/** Shaped like a credential: a key, or 16+ characters with digits (gateway and legacy tokens, secrets), a file name apart. */
const credentialShaped = (text: string): boolean => KEY_SHAPE.test(text) || (text.length >= 16 && /\d/.test(text) && !/^[\w-]+\.[a-z]{2,4}$/i.test(text));

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** Runs of 7 or more digits in `text` as `[number]`, the rest percent-encoded. */
const numbersMasked = (text: string): string =>
  text
    .split(NUMBER_RUN)
    .map((part) => encodeURIComponent(part))
    .join('[number]');

/** A path segment as logged. */
function maskedSegment(segment: string): string {
  const semi = segment.indexOf(';');
  const head = semi < 0 ? segment : segment.slice(0, semi);
  const params = semi < 0 ? '' : ';[REDACTED]';
  const d = decoded(head);
  if (credentialShaped(d)) return `[REDACTED]${params}`;
  NUMBER_RUN.lastIndex = 0;
  return `${NUMBER_RUN.test(d) ? numbersMasked(d) : head}${params}`;
}

/** The query as logged: names (or `[REDACTED]`), and only harmless values. */
function maskedQuery(query: string): string {
  const parts: string[] = [];
  for (const [k, v] of new URLSearchParams(query)) {
    const name = k.toLowerCase();
    const shownName = credentialShaped(k) || !NAME_SHAPE.test(k) ? '[REDACTED]' : numbersMasked(k);
    let value: string;
    if (v === '') value = '';
    else if (NUMBER_PARAMS.has(name)) value = '[number]';
    else if (isIdParam(name) && ID_VALUE.test(v)) value = v;
    else if (SHOWN_PARAMS.has(name) && PLAIN_VALUE.test(v) && !credentialShaped(v)) value = numbersMasked(v);
    else value = '[REDACTED]';
    parts.push(`${shownName}=${value}`);
  }
  return parts.join('&');
}

/** Random bytes taken 6 at a time (48 bits, 12 hex characters an id): one system call per 682 ids. */
let pool = Buffer.alloc(0);
let at = 0;

/** A new request id: 12 lowercase hex characters, random (unique enough across nodes and restarts for logs). */
export function newRequestId(): string {
  if (at + 6 > pool.length) {
    pool = randomBytes(4096);
    at = 0;
  }
  const id = pool.toString('hex', at, at + 6);
  at += 6;
  return id;
}

/** Fastify's genReqId: the sane `X-Request-Id` the request carries, or a new one. */
export function requestIdOf(raw: IncomingMessage): string {
  const given = raw.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && SANE_ID.test(given) ? given : newRequestId();
}

/**
 * The request in flight on each socket, so that a raw refusal of the
 * clientErrorHandler (a timeout while a routed request's body was still
 * arriving) answers and logs that request's id.
 */
const inFlight = new WeakMap<Socket, FastifyRequest>();

/** Why the clientErrorHandler cut a routed request short (its code), for that request's own line. */
const cutShort = new WeakMap<Socket, string>();

/**
 * The id a raw refusal of the clientErrorHandler answers with, its one log
 * line written. A routed request in flight on the socket whose body was
 * still arriving is the one refused: it keeps its id and its own line
 * ("request ended before its answer", with `code`). Otherwise the refusal is
 * of a request that never got as far as routing (malformed, headers too slow
 * or too large), even one pipelined behind a complete request still being
 * answered: a new id and a `request.refused` line here.
 */
export function refusedRequestId(log: FastifyBaseLogger, socket: Socket, code: string | undefined, statusCode: number): string {
  const routed = inFlight.get(socket);
  if (routed !== undefined && !routed.raw.complete) {
    if (code) cutShort.set(socket, code);
    return routed.id;
  }
  const reqId = newRequestId();
  log.info({ event: LOG_EVENTS.requestRefused, reqId, res: { statusCode }, code, remoteAddress: socket.remoteAddress }, 'request refused before routing');
  return reqId;
}

/**
 * Fastify's request logging, one line per request instead of two: the
 * "request completed" line carries the request (method, masked URL, address),
 * the status and the time. The "incoming request" line is kept at debug
 * level only, for following a request that hangs.
 */
export class OneLineRequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    logCompleted(error, request, reply);
  }

  /** The 404 handler answers in our shape; the request's own line says 404. */
  override routeNotFound(): void {}
}

/** The request is no longer in flight on its socket (unless a later one, pipelined, already is). */
function settled(request: FastifyRequest): void {
  if (inFlight.get(request.raw.socket) === request) inFlight.delete(request.raw.socket);
}

function logCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
  settled(request);
  const fields = { req: request, res: reply, responseTime: Math.round(reply.elapsedTime * 100) / 100 };
  if (error) reply.log.error({ ...fields, err: error }, 'request errored');
  else reply.log.info(fields, 'request completed');
}

/**
 * A request refused before routing (frameworkErrors: a malformed URL) skips
 * the hooks and Fastify's completion log: its id is answered and its line
 * written here.
 */
export function unroutedReply(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.raw.once('finish', () => logCompleted(null, request, reply));
  return reply.header(REQUEST_ID_HEADER, request.id);
}

/**
 * The first hook of every request: `X-Request-Id` is set before anything can
 * refuse it, so that successes, errors (the error handler keeps the headers
 * already set) and 404s all carry it. A request that ends without an answer
 * (the client went away, or the clientErrorHandler cut it short) is logged
 * too, its one line saying so.
 */
export function installRequestIds(app: FastifyInstance): void {
  app.addHook('onRequest', async (req, reply) => {
    reply.header(REQUEST_ID_HEADER, req.id);
    inFlight.set(req.raw.socket, req);
  });
  app.addHook('onRequestAbort', async (req) => {
    const socket = req.raw.socket;
    settled(req);
    const code = cutShort.get(socket);
    cutShort.delete(socket);
    req.log.info({ req, code }, 'request ended before its answer');
  });
}
