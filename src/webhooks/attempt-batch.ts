import type { AttemptRecord } from '../core/ports/webhooks.js';

interface Waiting {
  rec: AttemptRecord;
  resolve: (recorded: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Attempts' records written together (store.recordAttempts): those that end
 * in the same turn of the event loop, and while one write is in flight, all
 * that end meanwhile, in the next. One statement (PostgreSQL) or transaction
 * (SQLite) then records many deliveries instead of one each; each caller
 * still hears its own answer (false: its claim was no longer its own).
 */
export class AttemptBatch {
  private waiting: Waiting[] = [];
  private writing = false;
  private scheduled = false;

  constructor(private readonly write: (list: AttemptRecord[]) => Promise<boolean[]>) {}

  record(rec: AttemptRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ rec, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.waiting;
    if (batch.length === 0) return;
    this.waiting = [];
    this.writing = true;
    try {
      const recorded = await this.write(batch.map((w) => w.rec));
      batch.forEach((w, i) => w.resolve(recorded[i] === true));
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.writing = false;
      if (this.waiting.length > 0) this.schedule();
    }
  }
}
