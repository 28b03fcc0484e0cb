import type Database from 'better-sqlite3';
import type { KvEntry, KvKey, KvStore } from '../../core/ports/kv.js';
import { grouped, immediate, readTogether, stmt } from './statements.js';

/** The small key-value space in SQLite; values are JSON. The many-forms run the single statements in one commit. */
export function kv(db: Database.Database): KvStore {
  const getOne = (k: KvKey): unknown => {
    const r = stmt(db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(k.ns, k.key) as { value: string } | undefined;
    return r ? JSON.parse(r.value) : null;
  };
  // Grouped: an adapter's bookkeeping per message shares the commit of the writes around it.
  const setMany = (entries: KvEntry[]): Promise<void> =>
    grouped(db, () => {
      const set = stmt(
        db,
        'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, ?) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expira_at = excluded.expira_at',
      );
      for (const e of entries) set.run(e.ns, e.key, JSON.stringify(e.value), e.expiraAt ?? null);
    });
  const deleteMany = (keys: KvKey[]): Promise<void> =>
    grouped(db, () => {
      const del = stmt(db, 'DELETE FROM kv WHERE ns = ? AND key = ?');
      for (const k of keys) del.run(k.ns, k.key);
    });
  return {
    async kvGet<T>(ns: string, key: string): Promise<T | null> {
      return getOne({ ns, key }) as T | null;
    },
    kvGetMany: async (keys) => readTogether(db, () => keys.map(getOne)),

    async kvFirst<T>(ns: string, key: string, value: T): Promise<T> {
      return immediate(db, () => {
        stmt(db, 'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, NULL) ON CONFLICT (ns, key) DO NOTHING').run(ns, key, JSON.stringify(value));
        return JSON.parse((stmt(db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(ns, key) as { value: string }).value) as T;
      });
    },

    async kvClaim<T>(ns: string, key: string, value: T, expiraAt: number): Promise<T | null> {
      return immediate(db, () => {
        const r = stmt(db, 'INSERT INTO kv (ns, key, value, expira_at) VALUES (?, ?, ?, ?) ON CONFLICT (ns, key) DO NOTHING').run(
          ns,
          key,
          JSON.stringify(value),
          expiraAt,
        );
        return r.changes === 1 ? null : (getOne({ ns, key }) as T);
      });
    },

    async kvTake<T>(ns: string, key: string): Promise<T | null> {
      const r = await grouped(db, () => stmt(db, 'DELETE FROM kv WHERE ns = ? AND key = ? RETURNING value').get(ns, key) as { value: string } | undefined);
      return r ? (JSON.parse(r.value) as T) : null;
    },

    async kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void> {
      return setMany([{ ns, key, value, expiraAt }]);
    },
    kvSetMany: setMany,

    async kvExpire(now: number, limit: number): Promise<number> {
      return grouped(
        db,
        () => stmt(db, 'DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv WHERE expira_at < ? LIMIT CAST(? AS INTEGER))').run(now, limit).changes,
      );
    },

    async kvDelete(ns: string, key: string): Promise<void> {
      return deleteMany([{ ns, key }]);
    },
    kvDeleteMany: deleteMany,

    async kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>> {
      return (stmt(db, 'SELECT key, value FROM kv WHERE ns = ? ORDER BY key').all(ns) as Array<{ key: string; value: string }>).map((r) => ({
        key: r.key,
        value: JSON.parse(r.value) as T,
      }));
    },
  };
}
