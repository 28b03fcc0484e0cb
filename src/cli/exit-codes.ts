import { ERRORS } from '../core/api/errors.js';
import { EXIT, EXIT_TABLE } from '../shared/exit-codes.js';

export const EXIT_HELP = `Exit codes:\n${EXIT_TABLE.map((e) => `  ${String(e.code).padStart(3)}  ${e.meaning}`).join('\n')}`;

/** Errors below main() are thrown as CliError and turned into one of the exit codes at the edge. */
export class CliError extends Error {
  /** The request never reached a server (refused, no such host): nothing can have been done with it. */
  neverSent = false;
  constructor(
    message: string,
    readonly exitCode: number,
    /** The server's JSON body, printed as is under --json. */
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * A non-2xx answer of the server. `reason` is its text without any "retry in
 * N s" (the message adds the hint once); retries read status, code and wait.
 */
export class ApiError extends CliError {
  constructor(
    message: string,
    exitCode: number,
    body: unknown,
    readonly status: number,
    readonly apiCodigo: number | undefined,
    readonly retryAfter: number | undefined,
    readonly reason: string,
    /** The server gave a first answer again (`Idempotent-Replayed: true`): final, never retried. */
    readonly replayed = false,
  ) {
    super(message, exitCode, body);
    this.name = 'ApiError';
  }
}

export function usage(message: string): CliError {
  return new CliError(message, EXIT.USAGE);
}

/** api_codigo values of a 403 that mean "not now" rather than "not you". */
const REFUSED_NOW_CODES: ReadonlySet<number> = new Set(
  [ERRORS.CELULAR_NOT_ACTIVE, ERRORS.CLIENT_NOT_ACTIVE, ERRORS.OUTSIDE_HOURS, ERRORS.CELULAR_CAP, ERRORS.LINE_BRAKED].map((e) => e.codigo),
);

/** api_codigo of a permanent refusal of the message (DESTINATARIO_RECHAZADO). */
export const CODIGO_REJECTED = ERRORS.GATEWAY_REFUSED.codigo;
/** api_codigo of a direct send whose outcome is unknown (RESULTADO_INCIERTO): it may have been delivered. */
export const CODIGO_UNCERTAIN = ERRORS.GATEWAY_UNCERTAIN.codigo;

/** The exit code for an HTTP status and the body's api_codigo. */
export function exitForStatus(status: number, apiCodigo?: number): number {
  if (status === 401) return EXIT.AUTH;
  if (status === 403) return apiCodigo !== undefined && REFUSED_NOW_CODES.has(apiCodigo) ? EXIT.REFUSED_NOW : EXIT.AUTH;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 402) return EXIT.BALANCE;
  if (apiCodigo === CODIGO_REJECTED) return EXIT.REJECTED;
  if (status === 429) return EXIT.RATE_LIMITED;
  if (status >= 500) return EXIT.SERVER;
  return EXIT.ERROR;
}
