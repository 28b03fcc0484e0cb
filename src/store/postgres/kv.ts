import type { KvStore } from '../../core/ports/kv.js';
import type { Db } from './db.js';

/** The small key-value space in PostgreSQL; values are JSON. */
export function kv(db: Db): KvStore {
  return {
    async kvGet<T>(ns: string, key: string): Promise<T | null> {
      const r = await db.one<{ value: string }>('SELECT value FROM kv WHERE ns = $1 AND key = $2', [ns, key]);
      return r ? (JSON.parse(r.value) as T) : null;
    },

    /** The insert, or the row another node put there first (a conflicting insert waits for that row's commit). */
    async kvFirst<T>(ns: string, key: string, value: T): Promise<T> {
      const r = await db.one<{ value: string }>(
        `WITH ins AS (INSERT INTO kv (ns, key, value, expira_at) VALUES ($1, $2, $3, NULL) ON CONFLICT (ns, key) DO NOTHING RETURNING value)
       SELECT value FROM ins UNION ALL SELECT value FROM kv WHERE ns = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
        [ns, key, JSON.stringify(value)],
      );
      // Empty when the other row committed after this statement's snapshot was taken: a new statement sees it.
      const v = r ?? (await db.one<{ value: string }>('SELECT value FROM kv WHERE ns = $1 AND key = $2', [ns, key]));
      return JSON.parse(v!.value) as T;
    },

    async kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void> {
      await db.q(
        `INSERT INTO kv (ns, key, value, expira_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expira_at = excluded.expira_at`,
        [ns, key, JSON.stringify(value), expiraAt ?? null],
      );
    },

    /** Expired entries a batch at a time; entries another node is removing are skipped, not waited for. */
    async kvExpire(now: number, limit: number): Promise<number> {
      const r = await db.query(
        `DELETE FROM kv WHERE (ns, key) IN (
         SELECT ns, key FROM kv WHERE expira_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [now, limit],
      );
      return r.rowCount ?? 0;
    },

    async kvDelete(ns: string, key: string): Promise<void> {
      await db.q('DELETE FROM kv WHERE ns = $1 AND key = $2', [ns, key]);
    },

    async kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>> {
      const rows = await db.q<{ key: string; value: string }>('SELECT key, value FROM kv WHERE ns = $1 ORDER BY key', [ns]);
      return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }));
    },
  };
}
