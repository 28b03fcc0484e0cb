import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import { AppError, ERRORS, type ErrorRow, errorBody } from '../core/api/errors.js';
import { refusedInWords, type SchemaLike } from '../core/api/expected-words.js';
import { DAY_OR_INSTANT_EXPECTED } from '../core/history/historial.js';
import { lingerOnClose } from './body/linger.js';

/**
 * One place turns every failure into the docs/design.md §4 error body: our AppErrors,
 * Fastify's own (validation, malformed or oversized bodies, media types) and
 * anything unexpected, which is logged in full and answered without detail.
 */
export function toAppError(err: FastifyError | Error): AppError {
  if (err instanceof AppError) return err;
  const fe = err as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext ?? 'request';
    // A listing's day or instant (the schema checks only its shape) is refused in core's words, as the CLI says it.
    const bound = /^\/(desde|hasta)$/.exec(fe.validation[0]?.instancePath ?? '');
    if (where === 'querystring' && bound) return new AppError('INVALID_PARAMS', `${bound[1]}: ${DAY_OR_INSTANT_EXPECTED}`);
    // Any other query field (a listing's filter or page): what it expects, in core's words (ajv's verbose error carries its schema and value).
    if (where === 'querystring') {
      const v = fe.validation[0] as { instancePath?: string; parentSchema?: SchemaLike; data?: unknown } | undefined;
      const name = /^\/([A-Za-z_][A-Za-z0-9_]*)$/.exec(v?.instancePath ?? '')?.[1];
      const words = name ? refusedInWords(name, v?.data, v?.parentSchema) : null;
      if (words) return new AppError('INVALID_PARAMS', words);
    }
    return new AppError('INVALID_PARAMS', `${where}: ${fe.message.replace(/^(body|querystring|params|headers)\/?/, '')}`.replace(/ +/g, ' ').trim());
  }
  switch (fe.code) {
    case 'FST_ERR_BAD_URL':
      return new AppError('INVALID_PARAMS', 'the URL is malformed (bad percent-escape)');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('BODY_TOO_LARGE', 'request body too large for this endpoint');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_BODY', 'send the body as application/json or application/x-www-form-urlencoded');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('MALFORMED_BODY', 'the body is not valid JSON');
  }
  if (err instanceof SyntaxError || fe.statusCode === 400) return new AppError('MALFORMED_BODY', 'the body could not be parsed');
  if (fe.statusCode === 413) return new AppError('BODY_TOO_LARGE', 'request body too large');
  if (fe.statusCode === 415) return new AppError('UNSUPPORTED_BODY', 'unsupported content type');
  const status = clientFaultStatus(err);
  // The static files of /docs: a path out of their directory (`..`, a NUL byte) is a file that is not there.
  if (status === 403 || status === 404) return new AppError('ROUTE_NOT_FOUND', 'no such file or endpoint');
  // Any other refusal of the request itself (a Range or precondition a static file cannot meet, ...).
  if (status !== undefined) return new AppError('INVALID_PARAMS', `the request cannot be answered: ${err.message}`);
  return new AppError('INTERNAL', 'internal error');
}

/**
 * The 4xx status of an error Fastify or a plugin raised about the request
 * itself: a FastifyError (`FST_...` code) or an http-errors error marked safe
 * to show (`expose`, as @fastify/static's send sets for 4xx). Any other error,
 * whatever status it carries (a library's, a gateway's), is not the client's
 * fault: undefined, and it is answered as internal.
 */
function clientFaultStatus(err: Error): number | undefined {
  const e = err as Error & { statusCode?: unknown; status?: unknown; code?: unknown; expose?: unknown };
  const status = typeof e.statusCode === 'number' ? e.statusCode : typeof e.status === 'number' ? e.status : undefined;
  if (status === undefined || status < 400 || status > 499) return undefined;
  const fastify = err.name === 'FastifyError' || (typeof e.code === 'string' && e.code.startsWith('FST_'));
  return fastify || e.expose === true ? status : undefined;
}

/**
 * The challenge of every 401 of a Bearer-authenticated route (RFC 7235, RFC
 * 6750): Bearer in the realm "pasarela", plus `error="invalid_token"` when a
 * credential was presented and refused (none given, or one in another
 * scheme such as Basic: no error code, as RFC 6750 §3.1 asks). The gateway
 * callback's 401 (a per-instance secret, no HTTP authentication scheme) has
 * none.
 */
export function challenge(err: AppError): string {
  return `Bearer realm="pasarela"${err.extras.credentialRejected ? ', error="invalid_token"' : ''}`;
}

/**
 * A direct send's gateway outcomes: answers, not faults of the server. The
 * message's own log line records them (msg_id, line, reason); the error's
 * text may quote the gateway's reason, which can name the recipient.
 */
const SEND_OUTCOMES: ReadonlySet<ErrorRow> = new Set([ERRORS.GATEWAY_ERROR, ERRORS.GATEWAY_REFUSED, ERRORS.GATEWAY_UNCERTAIN]);

/** 5xx answers that report a state (no usable line in a pool, a stop, a full server), not a fault: no stack to read. */
const STATES: ReadonlySet<ErrorRow> = new Set([ERRORS.GROUP_NO_LINE, ERRORS.SHUTTING_DOWN, ERRORS.SERVER_BUSY]);

/** A failed request in the log: a fault at error level with its stack; a state as a one-line warning; a send's outcome not here. */
export function logFailure(log: FastifyBaseLogger, appErr: AppError, err: unknown, msg: string): void {
  if (appErr.status < 500 || SEND_OUTCOMES.has(appErr.row)) return;
  if (STATES.has(appErr.row)) log.warn({ api_codigo: appErr.row.codigo }, `${msg}: ${appErr.message}`);
  else log.error({ err }, msg);
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err);
    logFailure(req.log, appErr, err, 'request failed');
    if (appErr.extras.retryAfter !== undefined) reply.header('Retry-After', String(appErr.extras.retryAfter));
    if (appErr.row === ERRORS.UNAUTHORIZED && !appErr.extras.notBearer) reply.header('WWW-Authenticate', challenge(appErr));
    // Refused before its body was read to the end: answer and close rather than read the rest.
    if (!req.raw.complete) {
      reply.header('Connection', 'close');
      lingerOnClose(req.raw);
    }
    return reply.code(appErr.status).send(errorBody(appErr));
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new AppError('ROUTE_NOT_FOUND', `no endpoint ${req.method} ${req.url.split('?')[0]}`);
    return reply.code(404).send(errorBody(e));
  });
}
