import type { Clock } from '../time/clock.js';
import type { Counters } from '../ports/counters.js';

/**
 * Fixed-window counters in process memory. Expired windows are dropped on
 * access, and each increment also looks at the next few entries of a rolling
 * sweep, so memory stays bounded by the keys active within their windows while
 * no single call pays for a pass over all of them.
 */
/** Entries the rolling sweep looks at per increment: more than one, so it outpaces new keys. */
const SWEEP_PER_OP = 4;
/** Holds beyond which a hold sweeps the expired ones. */
const HOLDS_SWEEP_AT = 1000;

export class MemoryCounters implements Counters {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  /** Holds (hold/unhold): each is ended by its holder, or found expired by the next hold of its key. */
  private readonly holds = new Map<string, { holder: string; resetAt: number }>();
  private cursor: Iterator<[string, { count: number; resetAt: number }]> | null = null;

  constructor(private readonly clock: Clock) {}

  async incr(key: string, windowMs: number): Promise<{ count: number; resetAt: number }> {
    const now = this.clock.now();
    this.sweepSome(now, SWEEP_PER_OP);
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count += 1;
    return { ...w };
  }

  async get(key: string): Promise<{ count: number; resetAt: number } | null> {
    const w = this.windows.get(key);
    if (!w) return null;
    if (w.resetAt <= this.clock.now()) {
      this.windows.delete(key);
      return null;
    }
    return { ...w };
  }

  async decr(key: string): Promise<void> {
    const w = this.windows.get(key);
    if (w && w.count > 0) w.count -= 1;
  }

  async delete(key: string): Promise<void> {
    this.windows.delete(key);
  }

  async hold(key: string, holder: string, ttlMs: number, from?: string): Promise<{ holder: string; resetAt: number }> {
    const now = this.clock.now();
    // A hold whose unhold went elsewhere (to Redis, back after an outage) is dropped once expired.
    if (this.holds.size > HOLDS_SWEEP_AT) for (const [k, x] of this.holds) if (x.resetAt <= now) this.holds.delete(k);
    const h = this.holds.get(key);
    if (h && h.resetAt > now && h.holder !== holder && h.holder !== from) return { ...h };
    const mine = { holder, resetAt: now + ttlMs };
    this.holds.set(key, mine);
    return { ...mine };
  }

  async unhold(key: string, holder: string): Promise<void> {
    if (this.holds.get(key)?.holder === holder) this.holds.delete(key);
  }

  backend(): string {
    return 'memory';
  }

  /** Number of live windows; exposed for the bounded-memory test. */
  size(): number {
    return this.windows.size;
  }

  sweep(now = this.clock.now()): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }

  /** Looks at up to `n` entries where the rolling sweep left off (deleting the current entry is safe for a Map iterator). */
  private sweepSome(now: number, n: number): void {
    for (let i = 0; i < n; i++) {
      this.cursor ??= this.windows.entries();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = null;
        return;
      }
      if (next.value[1].resetAt <= now) this.windows.delete(next.value[0]);
    }
  }
}
