import type { Ctx } from './context.js';
import { ApiError, CliError } from './exit-codes.js';
import { EXIT } from '../shared/exit-codes.js';

/** Time for a watch: real by default, injected by tests of the logic. */
export interface WatchClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: WatchClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise<void>((r) => setTimeout(r, ms)),
};

export interface WatchOptions {
  /** Epoch ms after which the watch gives up. */
  deadline: number;
  /** The error for a watch that ran out of time (exit 11); `cause`: the last failure, when the server was down then. */
  timedOut: (cause?: string) => CliError;
  /** Longest pause between two tries while the server is away (ms). */
  maxBackoffMs?: number;
  /** Longest wait for one answer (ms), so a dead connection does not hold the watch past its deadline. */
  requestTimeoutMs?: number;
  clock?: WatchClock;
}

/**
 * What a watch rides out: no connection (refused, reset, timed out), a
 * pasarela answering 503 (APAGANDO, 901: stopping; or not ready), or a 5xx
 * that is not pasarela's JSON (a proxy's page while the server is away).
 * Any other 5xx of the server (a deterministic 500, a 502 for a gateway
 * that is down) would answer the same until the deadline: the watch ends at
 * once with it (exit 7).
 */
export function isTransient(err: unknown): err is CliError {
  if (!(err instanceof CliError)) return false;
  if (err.exitCode === EXIT.UNREACHABLE) return true;
  if (err.exitCode !== EXIT.SERVER) return false;
  return err instanceof ApiError ? err.status === 503 : true;
}

/**
 * A long watch (`celular qr`, `--wait`): its requests survive a server
 * restart or a lost connection. A failed request is tried again with a
 * backoff (0.25 s, doubling, at most 5 s) for as long as the watch's
 * deadline holds; stderr says once "server unreachable, retrying…" and,
 * when an answer comes again, "reconnected". Past the deadline: the
 * watch's timeout error (exit 11). Any other error ends the watch at once.
 */
export class Watch {
  private readonly clock: WatchClock;
  private down = false;
  private attempt = 0;
  private lastError?: string;
  /**
   * Where the watch's notices go: stderr. A view drawn in place (the QR)
   * routes them through itself, so its next redraw erases them too.
   */
  notify: (text: string) => void = (text) => this.ctx.term.err(text);

  constructor(
    private readonly ctx: Ctx,
    private readonly o: WatchOptions,
  ) {
    this.clock = o.clock ?? realClock;
  }

  get deadline(): number {
    return this.o.deadline;
  }

  /** True until the deadline. */
  alive(): boolean {
    return this.clock.now() < this.o.deadline;
  }

  sleep(ms: number): Promise<void> {
    return this.clock.sleep(Math.max(0, Math.min(ms, this.o.deadline - this.clock.now())));
  }

  /** The watch's timeout error, naming the last failure when the server was away at the end. */
  timedOut(): CliError {
    return this.o.timedOut(this.down ? this.lastError : undefined);
  }

  /** Runs `request` (given the time it may take) until it answers, riding out transient failures. */
  async call<T>(request: (timeoutMs: number) => Promise<T>): Promise<T> {
    const maxBackoff = this.o.maxBackoffMs ?? 5000;
    const perRequest = this.o.requestTimeoutMs ?? 10_000;
    for (;;) {
      const left = this.o.deadline - this.clock.now();
      if (left <= 0) throw this.timedOut();
      try {
        const answer = await request(Math.max(1, Math.min(left, perRequest)));
        if (this.down) this.notify('reconnected');
        this.down = false;
        this.attempt = 0;
        return answer;
      } catch (err) {
        if (!isTransient(err)) throw err;
        this.lastError = err.message;
        if (!this.down) this.notify(`${err.exitCode === EXIT.SERVER ? 'server error' : 'server unreachable'}, retrying… (${err.message})`);
        this.down = true;
        const pause = Math.min(maxBackoff, 250 * 2 ** this.attempt);
        this.attempt += 1;
        await this.sleep(pause);
      }
    }
  }
}
