export interface KvKey {
  ns: string;
  key: string;
}

export interface KvEntry extends KvKey {
  value: unknown;
  expiraAt?: number;
}

/** Small durable key-value space for adapters (the simulator's sessions live here). */
export interface KvStore {
  kvGet<T>(ns: string, key: string): Promise<T | null>;
  /** Several entries in one read (one statement on a shared store): each value, or null, in the order asked. */
  kvGetMany(keys: KvKey[]): Promise<unknown[]>;
  /** With `expiraAt`, the entry is forgotten after then (kvExpire removes it). */
  kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void>;
  /** Several entries in one write (one statement, one commit); a key given twice keeps its last value. */
  kvSetMany(entries: KvEntry[]): Promise<void>;
  /** Stores `value` unless the key holds one already (never expiring); returns what the key holds after. Atomic across nodes. */
  kvFirst<T>(ns: string, key: string, value: T): Promise<T>;
  /**
   * Stores `value` (expiring at `expiraAt`) unless the key holds one already:
   * null when this call stored it, else the value held. Atomic across nodes
   * (two claims of one key: one gets null). The panel's one-use form tokens.
   */
  kvClaim<T>(ns: string, key: string, value: T, expiraAt: number): Promise<T | null>;
  /** Removes the entry and returns its value (null when absent): of two takes at once, one gets it. */
  kvTake<T>(ns: string, key: string): Promise<T | null>;
  /** Removes up to `limit` entries expired before `now` (any namespace); returns how many. */
  kvExpire(now: number, limit: number): Promise<number>;
  kvDelete(ns: string, key: string): Promise<void>;
  /** Several entries removed in one statement. */
  kvDeleteMany(keys: KvKey[]): Promise<void>;
  kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>>;
}
