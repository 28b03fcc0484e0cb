import { ERRORS } from '../core/api/errors.js';
import type { Ctx } from './context.js';
import { ApiError, CliError, CODIGO_REJECTED, CODIGO_UNCERTAIN } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';

/**
 * What `send --retry N` tries again, and after how long. Only what can
 * succeed later: 429 (after retry_after, else backoff), 5xx, a lost
 * connection or a timeout, and a duplicate still in flight (409, api_codigo
 * 608). Never a refusal: other 4xx, 402, 403, 502/704; never a direct send
 * whose outcome is unknown (502/705: the key would only replay it, and a new
 * key could send it twice); never an answer the server replayed
 * (`Idempotent-Replayed: true`), which is final. A send outside the
 * line's hours (403, api_codigo 303) is waited for only with --wait-window.
 */

/** api_codigo of a 409: the same Idempotency-Key is still being answered. */
export const CODIGO_IN_FLIGHT = ERRORS.IDEMPOTENCY_IN_PROGRESS.codigo;
/** api_codigo of a 403 outside the line's allowed hours (carries retry_after). */
export const CODIGO_OUTSIDE_HOURS = ERRORS.OUTSIDE_HOURS.codigo;
/** Consecutive waits for the window before giving up (its retry_after is when it opens). */
export const MAX_WINDOW_WAITS = 5;

export type RetryPlan =
  /** Try again after `seconds`, as one of the --retry attempts. */
  | { kind: 'retry'; seconds: number | undefined }
  /** The window is closed: wait `seconds` for it (only with --wait-window; not an attempt). */
  | { kind: 'window'; seconds: number }
  | { kind: 'final' };

export function retryPlan(err: unknown): RetryPlan {
  if (!(err instanceof CliError)) return { kind: 'final' };
  if (err.exitCode === EXIT.UNREACHABLE) return { kind: 'retry', seconds: undefined };
  if (err instanceof ApiError) {
    const s = err.retryAfter;
    // A first answer given again (a stored 5xx included) is final: the same key only replays it.
    if (err.replayed || err.apiCodigo === CODIGO_REJECTED || err.apiCodigo === CODIGO_UNCERTAIN) return { kind: 'final' };
    if (err.status === 429 || err.status >= 500 || err.status === 408) return { kind: 'retry', seconds: s };
    if (err.status === 409 && err.apiCodigo === CODIGO_IN_FLIGHT) return { kind: 'retry', seconds: s };
    if (err.status === 403 && err.apiCodigo === CODIGO_OUTSIDE_HOURS) return { kind: 'window', seconds: s ?? 60 };
    return { kind: 'final' };
  }
  // A CliError that is not an answer with a JSON body (for example a 5xx that is not JSON).
  if (err.exitCode === EXIT.RATE_LIMITED || err.exitCode === EXIT.SERVER) {
    const given = (err.body as { retry_after?: unknown } | undefined)?.retry_after;
    return { kind: 'retry', seconds: typeof given === 'number' ? given : undefined };
  }
  return { kind: 'final' };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The sleep the CLI uses between attempts. PASARELA_MAX_WAIT_MS caps every
 * wait (tests set it so a retry_after of minutes takes milliseconds); the
 * messages still say the server's figure.
 */
export function cappedSleep(env: NodeJS.ProcessEnv): (ms: number) => Promise<void> {
  const raw = env.PASARELA_MAX_WAIT_MS;
  const cap = raw !== undefined && /^[0-9]+$/.test(raw.trim()) ? Number(raw) : Number.POSITIVE_INFINITY;
  return (ms) => sleep(Math.min(ms, cap));
}

function seconds(s: number): string {
  if (s < 120) return `${s} s`;
  const m = Math.round(s / 60);
  return m < 120 ? `${s} s (${m} min)` : `${s} s (${Math.floor(m / 60)} h ${m % 60} min)`;
}

/** The error's text without the "(retry in N s)" the client adds, so a hint is printed once. */
const reasonOf = (err: CliError) => (err instanceof ApiError ? err.reason : err.message);

export interface RetryOptions {
  /** Wait for a closed sending window (403, api_codigo 303) instead of failing. */
  waitWindow?: boolean;
  /** The most the waits may add up to (ms): a wait past it fails at once instead (a late one-time code is worse than none). */
  maxWaitMs?: number;
}

/**
 * Calls the server, retrying up to `retries` times what retryPlan allows:
 * after `retry_after` when the server gives one, else 1 s, 2 s, 4 s ... (at
 * most 60 s). Each wait is said on stderr, once.
 */
export async function withRetry<T>(
  ctx: Ctx,
  retries: number,
  call: () => Promise<T>,
  wait: (ms: number) => Promise<void> = sleep,
  opts: RetryOptions = {},
): Promise<T> {
  let attempt = 0;
  let windowWaits = 0;
  let waited = 0;
  const budget = opts.maxWaitMs ?? Number.POSITIVE_INFINITY;
  // A wait that would take the total past --max-wait is not made: the error stands, with the reason.
  const overBudget = (e: CliError, ms: number) => {
    if (waited + ms <= budget) return false;
    e.message = `${e.message}\n(not waiting ${seconds(Math.ceil(ms / 1000))} more: --max-wait ${seconds(Math.round(budget / 1000))} ${waited > 0 ? `and ${seconds(Math.round(waited / 1000))} waited already` : 'allows less'})`;
    return true;
  };
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const plan = retryPlan(err);
      const e = err as CliError;
      if (plan.kind === 'window' && opts.waitWindow && windowWaits < MAX_WINDOW_WAITS) {
        if (overBudget(e, plan.seconds * 1000)) throw err;
        windowWaits += 1;
        ctx.term.err(`${reasonOf(e)}; waiting ${seconds(plan.seconds)} for the window to open (--wait-window)`);
        waited += plan.seconds * 1000;
        await wait(plan.seconds * 1000);
        continue;
      }
      if (plan.kind !== 'retry' || attempt >= retries) throw err;
      const ms = plan.seconds !== undefined ? plan.seconds * 1000 : Math.min(60_000, 1000 * 2 ** attempt);
      if (overBudget(e, ms)) throw err;
      attempt += 1;
      ctx.term.err(`${reasonOf(e)}; retry ${attempt}/${retries} in ${seconds(Math.ceil(ms / 1000))}`);
      waited += ms;
      await wait(ms);
    }
  }
}
