import type { Clock } from '../../core/time/clock.js';
import { SESSION_STATUSES } from '../../core/ports/model.js';
import type { Store } from '../../core/ports/store.js';

const SESSIONS: ReadonlySet<string> = new Set(SESSION_STATUSES);

/** How long a scrape waits for the store's numbers before it answers with the last ones. */
export const READ_DEADLINE_MS = 3000;

/**
 * The gauges read from the store at scrape time: the queue, the webhook
 * outbox, the lines. Read at most once per `cacheMs` and never twice at
 * once, so a scrape storm (or many Prometheus servers) cannot load the
 * store; a failed read keeps the last values and says so (`up`).
 */
export class StoreGauges {
  queue = { pending: 0, oldestAgeSeconds: 0 };
  outbox = { pending: 0, due: 0 };
  /** estado -> session status -> lines. */
  lines = new Map<string, Map<string, number>>();
  /** Lines braked now (core/accounts/line-brake.ts). */
  braked = 0;
  up = false;
  private readAt = -Infinity;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly cacheMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /**
   * Resolves when the gauges are fresh, or after `deadlineMs` with the last
   * values and `up` false: a store read that hangs (a pool with every
   * connection taken, a partition) never holds a scrape, and the read left
   * running is the only one until it settles.
   */
  refresh(deadlineMs = READ_DEADLINE_MS): Promise<void> {
    if (!this.reading && this.clock.ticks() - this.readAt < this.cacheMs) return Promise.resolve();
    this.reading ??= this.read().finally(() => {
      this.readAt = this.clock.ticks();
      this.reading = null;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.up = false;
        resolve();
      }, deadlineMs);
      timer.unref();
    });
    return Promise.race([this.reading, late]).finally(() => clearTimeout(timer));
  }

  private async read(): Promise<void> {
    try {
      const now = this.clock.now();
      const [queue, outbox, counts, braked] = await Promise.all([
        this.store.queueDepth(),
        this.store.outboxDepth(now),
        this.store.lineCounts(),
        this.store.brakedLines(),
      ]);
      this.braked = braked;
      this.queue = { pending: queue.pending, oldestAgeSeconds: queue.oldest_at === null ? 0 : Math.max(0, now - queue.oldest_at) / 1000 };
      this.outbox = outbox;
      const lines = new Map<string, Map<string, number>>();
      for (const c of counts) {
        // A status pasarela does not name (or none yet) is `unknown`: the label keeps its six values.
        const session = c.last_status !== null && SESSIONS.has(c.last_status) ? c.last_status : 'unknown';
        let bySession = lines.get(c.estado);
        if (!bySession) lines.set(c.estado, (bySession = new Map<string, number>()));
        bySession.set(session, (bySession.get(session) ?? 0) + c.n);
      }
      this.lines = lines;
      this.up = true;
    } catch (err) {
      this.up = false;
      this.onError(err);
    }
  }
}
