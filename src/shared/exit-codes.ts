/**
 * The CLI's exit codes (docs/design.md §9), a contract scripts depend on. Shared
 * because the server publishes the table in its OpenAPI document; the CLI's
 * errors (src/cli/exit-codes.ts) carry one of these.
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
    meaning: 'refused now by state: line or client not active, outside the allowed hours, line cap, line braked (403 with api_codigo 301, 302, 303, 603, 639)',
  },
  { code: EXIT.REJECTED, meaning: 'message refused for good (502 with api_codigo 704); a retry never helps' },
  { code: EXIT.TIMEOUT, meaning: 'a watch or wait timed out' },
  {
    code: EXIT.SOME_REFUSED,
    meaning: '`send bulk`: some rows were refused or not sent (the others were accepted); `cola cancel`, `retry`: some messages were not',
  },
  { code: EXIT.INTERRUPTED, meaning: 'a prompt was cancelled, or a command stopped by Ctrl-C' },
];
