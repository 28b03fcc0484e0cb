/**
 * The parts of `serve` (serve.ts lists them in start order): each start
 * returns what it made and how to stop it, and the one stop routine stops
 * what started, in reverse. A failed start and `close()` both end there, so
 * the start order is written once and the stop order follows from it.
 */

/** How a started part stops; every field is optional. */
export interface Stopping {
  /** At once, before any part stops: stop taking new work (readiness, a dispatcher abandoning its attempts). */
  halt?(): void;
  /** Ends the part; resolves when its work in flight has ended. */
  stop?(): Promise<unknown>;
  /** The stop timeout ran out while work parts were stopping: end what is left now. */
  abandon?(): Promise<unknown> | void;
  /**
   * A part the others use (the lock, the store, the counters, the gateway,
   * the node's presence): stopped after every work part, whatever the
   * timeout, since abandoned work may still hold it until then.
   */
  base?: boolean;
}

export interface Part<T> {
  name: string;
  start(): Promise<Started<T>> | Started<T>;
}

export type Started<T> = Stopping & { value: T };

/** The logger the parts write to (pino's, built before any part: serve.ts). */
export interface Log {
  error(obj: unknown, msg: string): void;
  warn(obj: unknown, msg: string): void;
  info(obj: unknown, msg: string): void;
}

export class Parts {
  private readonly started: Array<Stopping & { name: string }> = [];
  private stopped: Promise<{ complete: boolean }> | undefined;

  constructor(private readonly log: Log) {}

  /** Starts a part and records it for the stop routine; its failure leaves it out (it undoes its own half-start). */
  async start<T>(part: Part<T>): Promise<T> {
    const { value, ...stopping } = await part.start();
    this.started.push({ name: part.name, ...stopping });
    return value;
  }

  /**
   * Stops what started, in reverse: every part halts; the work parts stop
   * one by one within `timeoutMs` (past it, each is told to abandon its
   * work); then the base parts. A part that fails to stop is logged and the
   * next one stops anyway; the first base part's failure is thrown at the
   * end, once all are stopped. Once: a second call gets the first's result.
   */
  stop(timeoutMs: number): Promise<{ complete: boolean }> {
    return (this.stopped ??= this.stopAll(timeoutMs));
  }

  private async stopAll(timeoutMs: number): Promise<{ complete: boolean }> {
    const parts = [...this.started].reverse();
    for (const p of parts) p.halt?.();
    const work = parts.filter((p) => !p.base);
    const graceful = (async () => {
      for (const p of work) await p.stop?.().catch((err: unknown) => this.log.warn({ err, part: p.name }, 'a part did not stop cleanly'));
    })();
    const complete = await settlesWithin(graceful, timeoutMs);
    if (!complete) {
      // What is still in flight is abandoned: its claims run out, and another node or the next start sends it.
      this.log.warn({ stopTimeoutMs: timeoutMs }, 'the graceful stop timed out: work still in flight is abandoned');
      for (const p of work) await Promise.resolve(p.abandon?.()).catch(() => undefined);
    }
    let failure: { err: unknown } | undefined;
    for (const p of parts.filter((q) => q.base)) {
      await p.stop?.().catch((err: unknown) => {
        failure ??= { err };
      });
    }
    if (failure) throw failure.err;
    return { complete };
  }
}

/** Whether `p` settles within `ms` (its failure counts as settled: the stop goes on). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
