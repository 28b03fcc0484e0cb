/**
 * Fixed-window counters: the shared memory of docs/design.md §1 and §5. In memory for one
 * node (src/core/nodes/counters-memory.ts); Redis when several nodes share the load
 * (src/counters). Every adapter passes test/contract/counters.test.ts.
 */
export interface Counters {
  /** Adds one and returns the count in the current window and when it resets. */
  incr(key: string, windowMs: number): Promise<{ count: number; resetAt: number }>;
  get(key: string): Promise<{ count: number; resetAt: number } | null>;
  /** Takes one back (never below zero); the window is unchanged. */
  decr(key: string): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Holds `key` for `holder` for `ttlMs` when no one else holds it, or when
   * `from` does (a holder found gone); returns who holds it after and when
   * that hold ends. Holding it again as its holder renews it.
   */
  hold(key: string, holder: string, ttlMs: number, from?: string): Promise<{ holder: string; resetAt: number }>;
  /** Ends `holder`'s hold of `key`; another holder's is left alone. */
  unhold(key: string, holder: string): Promise<void>;
  /**
   * Shared counters only: whether they answer from this node's memory now
   * (the shared backend failed or timed out), so a count known only there
   * (another node's duplicate block) may be missing.
   */
  degraded?(): boolean;
  /** What holds the counts now, for /health and the start banner: 'memory', 'redis', 'redis (unreachable: memory)'. */
  backend(): string;
}
