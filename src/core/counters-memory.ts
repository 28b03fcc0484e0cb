import type { Clock } from './clock.js';
import type { Counters } from './ports.js';

/**
 * Fixed-window counters in process memory. Expired windows are dropped on
 * access and by a sweep every 1024 increments, so memory stays bounded by the
 * keys active within their windows.
 */
export class MemoryCounters implements Counters {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private ops = 0;

  constructor(private readonly clock: Clock) {}

  async incr(key: string, windowMs: number): Promise<{ count: number; resetAt: number }> {
    const now = this.clock.now();
    if (++this.ops % 1024 === 0) this.sweep(now);
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

  /** Number of live windows; exposed for the bounded-memory test. */
  size(): number {
    return this.windows.size;
  }

  sweep(now = this.clock.now()): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }
}
