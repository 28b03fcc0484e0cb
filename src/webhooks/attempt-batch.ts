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
 * that schedules a retry does not wait (its due time is hinted only once it
 * is recorded), nor does any after drain(); and flush() writes what waits
 * (the dispatcher's slots, which the records hold, are wanted). While one
 * write alone is in flight, what ends meanwhile goes in the next.
 */
export class AttemptBatch {
  private waiting: Waiting[] = [];
  private writing = false;
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private draining = false;
  /** A record waiting now may not wait for a claim. */
  private urgent = false;

  constructor(
    private readonly write: (list: AttemptRecord[]) => Promise<boolean[]>,
    private readonly lingerMs: number,
  ) {}

  record(rec: AttemptRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ rec, resolve, reject });
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

  /** What waits for a claim is written at the next turn (something waits for the slots these records hold). */
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
