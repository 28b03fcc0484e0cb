import { ERRORS } from '../core/errors.js';
/**
 * Exit codes of docs/design.md §9, a contract scripts depend on. Errors below main()
 * are thrown as CliError and turned into one of these at the edge.
 */
export const EXIT = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  AUTH: 3,
  NOT_FOUND: 4,
  BALANCE: 5,
  RATE_LIMITED: 6,
  SERVER: 7,
  UNREACHABLE: 8,
  /** Refused now by the state of the line or the account; may succeed once that changes. */
  REFUSED_NOW: 9,
  /** The message was refused for good (the recipient cannot receive it); retrying never helps. */
  REJECTED: 10,
  /** A watch or a wait (`celular qr`, `--wait`) ran out of time. */
  TIMEOUT: 11,
  /** `send bulk`: some rows were refused (or not sent after a 402); the others were accepted. Also `cola cancel` and `retry`: some messages were not. */
  SOME_REFUSED: 12,
  INTERRUPTED: 130,
} as const;

/** The table behind `--help`, the OpenAPI document's `x-cli-exit-codes` and docs/decisions.md D-58. */
export const EXIT_TABLE: ReadonlyArray<{ code: number; meaning: string }> = [
  { code: EXIT.OK, meaning: 'ok' },
  { code: EXIT.ERROR, meaning: 'other error (for example 400, 409)' },
  { code: EXIT.USAGE, meaning: 'usage error: bad command, option or value (checked before any request)' },
  { code: EXIT.AUTH, meaning: 'bad credentials: 401, or 403 PROHIBIDO (201); no key configured' },
  { code: EXIT.NOT_FOUND, meaning: 'not found (404)' },
  { code: EXIT.BALANCE, meaning: 'insufficient balance (402)' },
  { code: EXIT.RATE_LIMITED, meaning: 'duplicate or rate limited (429)' },
  { code: EXIT.SERVER, meaning: 'server or gateway error (5xx)' },
  { code: EXIT.UNREACHABLE, meaning: 'cannot reach the server' },
  {
    code: EXIT.REFUSED_NOW,
    meaning: 'refused now by state: line or client not active, outside the allowed hours, line cap (403 with api_codigo 301, 302, 303, 603)',
  },
  { code: EXIT.REJECTED, meaning: 'message refused for good (502 with api_codigo 704); a retry never helps' },
  { code: EXIT.TIMEOUT, meaning: 'a watch or wait timed out' },
  {
    code: EXIT.SOME_REFUSED,
    meaning: '`send bulk`: some rows were refused or not sent (the others were accepted); `cola cancel`, `retry`: some messages were not',
  },
  { code: EXIT.INTERRUPTED, meaning: 'a prompt was cancelled, or a command stopped by Ctrl-C' },
];

export const EXIT_HELP = `Exit codes:\n${EXIT_TABLE.map((e) => `  ${String(e.code).padStart(3)}  ${e.meaning}`).join('\n')}`;

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
  [ERRORS.CELULAR_NOT_ACTIVE, ERRORS.CLIENT_NOT_ACTIVE, ERRORS.OUTSIDE_HOURS, ERRORS.CELULAR_CAP].map((e) => e.codigo),
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
