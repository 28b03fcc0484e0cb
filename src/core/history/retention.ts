import type { Core } from '../context.js';

/** Statements per pass by default: what one pass leaves (more than batch x this) the next one takes. */
const BATCHES_PER_PASS = 100;

export interface RetentionOptions {
  /** How long rows are kept; 0 keeps everything. */
  retentionMs: number;
  /** How often a pass runs (after the one at start); 0: only when asked. */
  intervalMs: number;
  /** Rows one statement may remove. */
  batch: number;
  /** Statements per pass at most (default 100); Infinity: until nothing is left. */
  maxBatches?: number;
  /** Removes up to `limit` rows older than `before`; how many went. */
  purge: (before: number, limit: number) => Promise<number>;
  onError: (err: unknown) => void;
}

/**
 * A table's retention: a pass removes, a batch per statement and oldest
 * first, every row older than `retentionMs` before `core.clock.now()`,
 * yielding the store to requests and messages between batches. Passes run
 * at start and every `intervalMs`, one at a time; several nodes of one store
 * purging at once skip each other's rows.
 */
export class Retention {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly core: Pick<Core, 'clock'>,
    private readonly opts: RetentionOptions,
  ) {}

  get retentionMs(): number {
    return this.opts.retentionMs;
  }

  /** One pass now (after any pass in flight); how many rows it removed. */
  run(): Promise<number> {
    const pass = this.chain.then(() => this.pass());
    this.chain = pass.catch(() => undefined);
    return pass;
  }

  private async pass(): Promise<number> {
    if (this.opts.retentionMs <= 0) return 0;
    const before = this.core.clock.now() - this.opts.retentionMs;
    let removed = 0;
    for (let i = 0; i < (this.opts.maxBatches ?? BATCHES_PER_PASS); i += 1) {
      const n = await this.opts.purge(before, this.opts.batch);
      removed += n;
      if (n < this.opts.batch) break;
      await new Promise((r) => setImmediate(r));
    }
    return removed;
  }

  start(): void {
    if (this.opts.retentionMs <= 0 || this.opts.intervalMs <= 0) return;
    const tick = () => void this.run().catch(this.opts.onError);
    tick();
    this.timer = setInterval(tick, this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.chain;
  }
}

/** Expired kv rows one statement removes (the kv_expira index serves it on both dialects). */
export const KV_EXPIRE_BATCH = 500;

/**
 * The kv store's expired rows (panel form tokens, shown-once pages, sessions,
 * dedupe blocks): each row carries its own expiry, so a pass removes those
 * whose expira_at has passed, at most KV_EXPIRE_BATCH × 100 a pass (the next
 * one takes the rest). Sign-in alone swept them before, 32 at a time: a
 * panel used by long sessions grew one row per form posted.
 */
export function kvExpiry(core: Pick<Core, 'store' | 'clock'>, opts: { intervalMs: number; onError: (err: unknown) => void }): Retention {
  // The rows' own expiry is the bound: "retention" is 1 ms, `before` + 1 is now.
  return new Retention(core, { ...opts, retentionMs: 1, batch: KV_EXPIRE_BATCH, purge: (before, limit) => core.store.kvExpire(before + 1, limit) });
}
