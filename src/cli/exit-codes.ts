/**
 * Exit codes of DESIGN §9, a contract scripts depend on. Errors below main()
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
  TIMEOUT: 11,
  INTERRUPTED: 130,
} as const;

export const EXIT_HELP = `Exit codes:
  0  ok                         5  insufficient balance (402)
  1  other error                6  duplicate or rate limited (429)
  2  usage error                7  server or gateway error (5xx)
  3  auth (401/403)             8  cannot reach the server
  4  not found (404)`;

export class CliError extends Error {
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

export function usage(message: string): CliError {
  return new CliError(message, EXIT.USAGE);
}

export function exitForStatus(status: number): number {
  if (status === 401 || status === 403) return EXIT.AUTH;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 402) return EXIT.BALANCE;
  if (status === 429) return EXIT.RATE_LIMITED;
  if (status >= 500) return EXIT.SERVER;
  return EXIT.ERROR;
}
