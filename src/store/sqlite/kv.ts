import type Database from 'better-sqlite3';
import type { KvStore } from '../../core/ports/kv.js';
import { grouped, immediate, stmt } from './statements.js';

/** The small key-value space in SQLite; values are JSON. */
export function kv(db: Database.Database): KvStore {
  return {
    async kvGet<T>(ns: string, key: string): Promise<T | null> {
      const r = stmt(db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(ns, key) as { value: string } | undefined;
      return r ? (JSON.parse(r.value) as T) : null;
    },

    async kvFirst<T>(ns: string, key: string, value: T): Promise<T> {
      return immediate(db, () => {
        stmt(db, 'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, NULL) ON CONFLICT (ns, key) DO NOTHING').run(ns, key, JSON.stringify(value));
        return JSON.parse((stmt(db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(ns, key) as { value: string }).value) as T;
      });
    },

    async kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void> {
      // Grouped: an adapter's bookkeeping per message shares the commit of the writes around it.
      return grouped(db, () => {
        stmt(
          db,
          'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, ?) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expira_at = excluded.expira_at',
        ).run(ns, key, JSON.stringify(value), expiraAt ?? null);
      });
    },

    async kvExpire(now: number, limit: number): Promise<number> {
      return grouped(db, () => stmt(db, 'DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv WHERE expira_at < ? LIMIT ?)').run(now, limit).changes);
    },

    async kvDelete(ns: string, key: string): Promise<void> {
      return grouped(db, () => {
        stmt(db, 'DELETE FROM kv WHERE ns = ? AND key = ?').run(ns, key);
      });
    },

    async kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>> {
      return (stmt(db, 'SELECT key, value FROM kv WHERE ns = ? ORDER BY key').all(ns) as Array<{ key: string; value: string }>).map((r) => ({
        key: r.key,
        value: JSON.parse(r.value) as T,
      }));
    },
  };
}
