/** Small durable key-value space for adapters (the simulator's sessions live here). */
export interface KvStore {
  kvGet<T>(ns: string, key: string): Promise<T | null>;
  /** With `expiraAt`, the entry is forgotten after then (kvExpire removes it). */
  kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void>;
  /** Stores `value` unless the key holds one already (never expiring); returns what the key holds after. Atomic across nodes. */
  kvFirst<T>(ns: string, key: string, value: T): Promise<T>;
  /** Removes up to `limit` entries expired before `now` (any namespace); returns how many. */
  kvExpire(now: number, limit: number): Promise<number>;
  kvDelete(ns: string, key: string): Promise<void>;
  kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>>;
}
