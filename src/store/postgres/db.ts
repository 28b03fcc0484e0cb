import { createHash } from 'node:crypto';
import pg from 'pg';
import { storeFault } from '../faults.js';
import type { Placeholder } from '../recipe-sql.js';

/**
 * The PostgreSQL connection side of the store: a pool whose rows come back
 * with the types the ports promise, single statements and transactions that
 * turn a store failure into STORE_UNAVAILABLE, and the keys of the
 * transaction-scoped advisory locks.
 */

/** pg hands BIGINT (and NUMERIC) back as strings; every one of ours is a ms timestamp, an id, a count or a balance, all safe integers. */
const INT8 = 20;
const NUMERIC = 1700;
const types = new pg.TypeOverrides();
types.setTypeParser(INT8, 'text', Number);
types.setTypeParser(NUMERIC, 'text', Number);

/** PostgreSQL's placeholder for recipe-sql.ts. */
export const ph: Placeholder = (i) => `$${i}`;

/** First key of our two-key advisory locks; the second names the object. */
export const LOCK = {
  migrations: 0x7061_0001,
  gatewayId: 0x7061_0002,
  placement: 0x7061_0004,
  idempotencyKey: 0x7061_0012,
  listeners: 0x7061_0005,
} as const;

/** Deadlocks and serialization failures are retried (twice): the transaction that lost is rolled back whole. */
const RETRYABLE = new Set(['40P01', '40001']);
const retryable = (err: unknown, attempt: number): boolean => RETRYABLE.has(String((err as { code?: unknown }).code)) && attempt < 3;

export type Client = pg.PoolClient;
/** A pool or a transaction's client: what a read that runs in either takes. */
export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>;
}
export type Row = Record<string, unknown>;

/** How the store names itself in errors and health: the URL without its password or options. */
export function publicName(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return 'postgres';
  }
}

export interface PgOptions {
  /** A schema of its own (tests); the tables live there and in nothing else. */
  schema?: string;
  /** Connections in the pool. */
  max?: number;
}

/** How long an unused pooled connection is kept: longer than any periodic pass of a node (D-149). */
export const POOL_IDLE_MS = 600_000;

export class Db {
  readonly pool: pg.Pool;
  readonly name: string;

  constructor(url: string, opts: PgOptions = {}) {
    this.name = publicName(url);
    this.pool = new pg.Pool({
      connectionString: url,
      types,
      max: opts.max ?? 10,
      // Kept ten minutes, not pg's 10 s: a node's periodic work (the health pass each minute, the polls) would otherwise
      // find its connections closed and open new ones, each paying a backend's start and every statement's prepare again.
      idleTimeoutMillis: POOL_IDLE_MS,
      ...(opts.schema ? { options: `-c search_path=${plainIdent(opts.schema)}` } : {}),
    });
    // An idle connection the server dropped is an event, not a crash; the next query opens another.
    this.pool.on('error', () => {});
    this.pool.on('connect', prepareOnce);
  }

  /** One statement, committed on its own; one that lost a deadlock had no effect, so it is run again. */
  async query(sql: string, params: unknown[] = []): Promise<{ rows: Row[]; rowCount: number | null }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pool.query(sql, params);
      } catch (err) {
        if (retryable(err, attempt)) continue;
        throw storeFault(this.pool, this.name, err);
      }
    }
  }

  q<T = Row>(sql: string, params: unknown[] = []): Promise<T[]> {
    return rows<T>(this, sql, params);
  }

  one<T = Row>(sql: string, params: unknown[] = []): Promise<T | null> {
    return row<T>(this, sql, params);
  }

  /** Runs `fn` in one READ COMMITTED transaction; the row locks it takes make it exact (docs/store-locks.md). */
  async tx<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let c: Client;
      try {
        c = await this.pool.connect();
      } catch (err) {
        throw storeFault(this.pool, this.name, err);
      }
      try {
        await c.query('BEGIN');
        const result = await fn(c);
        await c.query('COMMIT');
        c.release();
        return result;
      } catch (err) {
        let broken = false;
        try {
          await c.query('ROLLBACK');
        } catch {
          broken = true;
        }
        c.release(broken);
        if (retryable(err, attempt)) continue;
        throw storeFault(this.pool, this.name, err);
      }
    }
  }

  async close(): Promise<void> {
    if (!this.pool.ended && !this.pool.ending) await this.pool.end();
  }
}

/**
 * The last statement pg ran in this process and the last protocol message of
 * each kind it read, kept alive. V8's optimized code for pg's row parsing (and
 * ours above it) holds the shapes of pg's per-statement objects weakly: when
 * the last object of a shape dies, as it does at the full GC that falls
 * between an idle node's rare passes, the code goes with it and the next pass
 * compiles it all again (20-45 ms of node a health pass against 8-13:
 * bench/README, "An idle node's health pass"). One of each is bounded memory:
 * the largest page a statement answers.
 */
const kept: { statement: pg.Query | null; messages: Record<string, unknown> } = { statement: null, messages: {} };

/** What `kept` holds (tests: the hook must keep seeing pg's statements and messages). */
export function keptByPg(): { statement: pg.Query | null; messages: readonly string[] } {
  return { statement: kept.statement, messages: Object.keys(kept.messages) };
}

type Done = (err: Error | undefined, result: unknown) => void;

/**
 * Every statement with parameters runs as a named prepared statement, named
 * by its text: each connection has the server parse and plan it once, not on
 * every call (the store's statements are a fixed set, so the names are too).
 * Statements without parameters (BEGIN, COMMIT, migrations of several
 * statements) go as they are. The prepared ones go as a `pg.Query` of ours, the
 * one `kept` holds last.
 */
const names = new Map<string, string>();
function prepareOnce(client: pg.PoolClient): void {
  const plain = client.query.bind(client) as (...a: unknown[]) => unknown;
  client.connection.on('message', (msg: { name: string }) => void (kept.messages[msg.name] = msg));
  const submit = (name: string, text: string, values: unknown[], done: Done): void => {
    plain((kept.statement = new pg.Query({ name, text, values }, done)));
  };
  // Every caller keeps calling client.query(text, values): the connection's own method is replaced.
  Object.assign(client, {
    query: (text: unknown, values?: unknown, cb?: Done) => {
      if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return plain(text, values, cb);
      let name = names.get(text);
      if (!name) names.set(text, (name = `p${createHash('sha1').update(text).digest('hex').slice(0, 16)}`));
      if (cb) return submit(name, text, values, cb);
      return new Promise((resolve, reject) => submit(name, text, values, (err, res) => (err ? reject(err) : resolve(res))));
    },
  });
}

/** A schema name that needs no quoting anywhere (it travels in the connection's startup options). */
export function plainIdent(s: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(s)) throw new Error(`not a plain schema name: ${s}`);
  return s;
}

/** Array parameters over `items` (for unnest): `width` arrays, the k-th of each item's `row`'s k-th values (all there for no item). */
export function arrays<T>(items: readonly T[], width: number, row: (i: T) => unknown[]): unknown[][] {
  const rows = items.map(row);
  return Array.from({ length: width }, (_, k) => rows.map((r) => r[k]));
}

/** A column list (`a, b`) with each column qualified by `alias` (`x.a, x.b`). */
export const qualified = (cols: string, alias: string): string => cols.replace(/[a-z_]+/g, (c) => `${alias}.${c}`);

/** A statement's rows, typed, on the pool or in a transaction. */
export async function rows<T = Row>(q: Queryable, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await q.query(sql, params)).rows as T[];
}

export async function row<T = Row>(q: Queryable, sql: string, params: unknown[] = []): Promise<T | null> {
  return (await rows<T>(q, sql, params))[0] ?? null;
}
