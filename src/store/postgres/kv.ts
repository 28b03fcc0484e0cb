import type { KvEntry, KvKey, KvStore } from '../../core/ports/kv.js';
import type { Db } from './db.js';
import { batched } from '../../core/queue/turns.js';

/** A key given twice in one insert would be an error ("cannot affect row a second time"): its last value is kept. */
const lastOfEach = (entries: KvEntry[]): KvEntry[] => [...new Map(entries.map((e) => [`${e.ns}\0${e.key}`, e])).values()];

/** The small key-value space in PostgreSQL; values are JSON. The many-forms are one statement over arrays. */
export function kv(db: Db): KvStore {
  const readNow = async (keys: KvKey[]): Promise<unknown[]> => {
    const rows = await db.q<{ i: number; value: string }>(
      `SELECT k.i, kv.value FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(ns, key, i) JOIN kv ON kv.ns = k.ns AND kv.key = k.key`,
      [keys.map((k) => k.ns), keys.map((k) => k.key)],
    );
    const out: unknown[] = keys.map(() => null);
    for (const r of rows) out[Number(r.i) - 1] = JSON.parse(r.value);
    return out;
  };
  const writeNow = async (entries: KvEntry[]): Promise<void> => {
    const e = lastOfEach(entries);
    // In key order: two nodes' batches over the same keys lock them in one order.
    await db.q(
      `INSERT INTO kv (ns, key, value, expira_at) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS e(ns, key, value, expira_at)
       ORDER BY e.ns, e.key
       ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expira_at = excluded.expira_at`,
      [e.map((x) => x.ns), e.map((x) => x.key), e.map((x) => JSON.stringify(x.value)), e.map((x) => x.expiraAt ?? null)],
    );
  };
  // The reads and the writes arriving together (a gateway's sends on many lines): one statement, one commit (D-193).
  const getMany = batched(null, async (asks: KvKey[][]) => {
    const all = await readNow(asks.flat());
    let at = 0;
    return asks.map((keys) => all.slice(at, (at += keys.length)));
  });
  const setMany = batched(null, async (batches: KvEntry[][]): Promise<void[]> => {
    // In arrival order: a key two calls of the turn write keeps the later call's value.
    await writeNow(batches.flat());
    return batches.map(() => undefined);
  });
  const deleteMany = async (keys: KvKey[]): Promise<void> => {
    await db.q('DELETE FROM kv WHERE (ns, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))', [keys.map((k) => k.ns), keys.map((k) => k.key)]);
  };
  return {
    async kvGet<T>(ns: string, key: string): Promise<T | null> {
      return (await getMany([{ ns, key }]))[0] as T | null;
    },
    kvGetMany: getMany,

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

    /** Like kvFirst, with an expiry, and saying whether this call stored it. */
    async kvClaim<T>(ns: string, key: string, value: T, expiraAt: number): Promise<T | null> {
      const r = await db.one<{ mine: boolean; value: string | null }>(
        `WITH ins AS (INSERT INTO kv (ns, key, value, expira_at) VALUES ($1, $2, $3, $4) ON CONFLICT (ns, key) DO NOTHING RETURNING 1)
         SELECT EXISTS (SELECT 1 FROM ins) AS mine, (SELECT value FROM kv WHERE ns = $1 AND key = $2) AS value`,
        [ns, key, JSON.stringify(value), expiraAt],
      );
      if (r!.mine) return null;
      // Null when the other row committed after this statement's snapshot was taken: a new statement sees it.
      const v = r!.value ?? (await db.one<{ value: string }>('SELECT value FROM kv WHERE ns = $1 AND key = $2', [ns, key]))?.value;
      return v === undefined ? null : (JSON.parse(v) as T);
    },

    async kvTake<T>(ns: string, key: string): Promise<T | null> {
      const r = await db.one<{ value: string }>('DELETE FROM kv WHERE ns = $1 AND key = $2 RETURNING value', [ns, key]);
      return r ? (JSON.parse(r.value) as T) : null;
    },

    async kvSet<T>(ns: string, key: string, value: T, expiraAt?: number): Promise<void> {
      await setMany([{ ns, key, value, expiraAt }]);
    },
    kvSetMany: setMany,

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
      await deleteMany([{ ns, key }]);
    },
    kvDeleteMany: deleteMany,

    async kvList<T>(ns: string): Promise<Array<{ key: string; value: T }>> {
      const rows = await db.q<{ key: string; value: string }>('SELECT key, value FROM kv WHERE ns = $1 ORDER BY key', [ns]);
      return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }));
    },
  };
}
