import type { AttemptRecord } from '../core/ports/webhooks.js';

interface Waiting {
  rec: AttemptRecord;
  resolve: (recorded: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Attempts' records written together (store.recordAttempts), many
 * deliveries per statement (PostgreSQL) or transaction (SQLite) instead of
 * one each; each caller still hears its own answer (false: its claim was no
 * longer its own). A record waits up to `lingerMs` for the dispatcher's next
 * claim, of any client, to carry it (store.recordAndClaim: one round trip
 * for both), and is written alone only when no claim came (D-78). A record
 * that schedules a retry does not wait (the delivery is free for its retry
 * only once recorded), nor does any after drain(); flush() writes what waits now.
 * While one write alone is in flight, what ends meanwhile goes in the next.
 * The dispatcher does not wait for a record to free the attempt's slot
 * (D-192): idle() is how a stop or a test's step knows every record is in.
 */
export class AttemptBatch {
  private waiting: Waiting[] = [];
  private writing = false;
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private draining = false;
  /** A record waiting now may not wait for a claim. */
  private urgent = false;
  /** Records handed in and not yet answered (waiting, or in a write or a claim in flight). */
  private open = 0;
  private idlers: Array<() => void> = [];

  constructor(
    private readonly write: (list: AttemptRecord[]) => Promise<boolean[]>,
    private readonly lingerMs: number,
  ) {}

  record(rec: AttemptRecord): Promise<boolean> {
    this.open += 1;
    return new Promise<boolean>((resolve, reject) => {
      this.waiting.push({
        rec,
        resolve: (v) => (resolve(v), this.answered()),
        reject: (err) => (reject(err instanceof Error ? err : new Error(String(err))), this.answered()),
      });
      if (this.draining || this.lingerMs <= 0 || rec.outcome.proximo_intento_at !== undefined) {
        this.urgent = true;
        this.schedule();
      } else this.timer ??= setTimeout(() => this.schedule(), this.lingerMs);
    });
  }

  /**
   * Runs a claim with every record waiting now (`fn` gets them, possibly
   * none, and answers each as recordAttempts would): the records are settled
   * by its answer, or all rejected with its error, which is thrown too.
   */
  async carry<T>(fn: (list: AttemptRecord[]) => Promise<{ recorded: boolean[]; claimed: T }>): Promise<T> {
    const batch = this.take();
    let r: { recorded: boolean[]; claimed: T };
    try {
      r = await fn(batch.map((w) => w.rec));
    } catch (err) {
      for (const w of batch) w.reject(err);
      throw err;
    }
    batch.forEach((w, i) => w.resolve(r.recorded[i] === true));
    return r.claimed;
  }

  /** One record answered (after its caller's promise settled): the last one wakes idle()'s waiters. */
  private answered(): void {
    if (--this.open > 0) return;
    for (const f of this.idlers.splice(0)) f();
  }

  /** Resolves once every record handed in so far, and any since, is answered: written, carried or failed. */
  idle(): Promise<void> {
    return this.open === 0 ? Promise.resolve() : new Promise((resolve) => this.idlers.push(resolve));
  }

  /** What waits for a claim is written at the next turn. */
  flush(): void {
    if (this.waiting.length === 0) return;
    this.urgent = true;
    this.schedule();
  }

  /** From now on nothing waits for a claim (a stop): what waits is written at once. */
  drain(): void {
    this.draining = true;
    this.flush();
  }

  private take(): Waiting[] {
    const batch = this.waiting;
    this.waiting = [];
    this.urgent = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return batch;
  }

  /** A write alone at the next turn (after the one in flight, if any). */
  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.writeAlone();
    });
  }

  private async writeAlone(): Promise<void> {
    const batch = this.take();
    if (batch.length === 0) return;
    this.writing = true;
    try {
      const recorded = await this.write(batch.map((w) => w.rec));
      batch.forEach((w, i) => w.resolve(recorded[i] === true));
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.writing = false;
      // What ended meanwhile keeps its wait for a claim, unless it may not wait or its wait is over.
      if (this.waiting.length > 0 && (this.urgent || this.timer === null)) this.schedule();
    }
  }
}
