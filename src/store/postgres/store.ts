import type { Store, StoreCaps } from '../../core/ports/store.js';
import { PROBE_BYTES, writeHealthOf } from '../faults.js';
import { type AcceptPaths, acceptTurns } from './accept.js';
import { accounts } from './accounts.js';
import { charts } from './charts.js';
import { engineAuth } from './engine-auth.js';
import { engineHolds } from './engine-holds.js';
import { Db, type PgOptions } from './db.js';
import { gatewayServers } from './gateway-servers.js';
import { grupos } from './grupos.js';
import { history } from './history.js';
import { ledger } from './ledger.js';
import { idempotency } from './idempotency.js';
import { inbox } from './inbox.js';
import { kv } from './kv.js';
import { leases } from './leases.js';
import { lineHealth } from './line-health.js';
import { messages } from './messages.js';
import { migrate } from './migrations.js';
import { queue } from './queue.js';
import { transitions } from './transitions.js';
import { webhooks } from './webhooks.js';

/** Any number of nodes serve one database together. */
export const POSTGRES_CAPS: StoreCaps = { name: 'postgres', label: 'PostgreSQL', shared: true };

/** The networked store, with what only it has: its pool and its name for messages. */
export interface PgStore extends Store {
  readonly db: Db;
  /** The store's name in messages: its URL without the password. */
  readonly name: string;
  /** How its acceptance turns were taken (D-83). */
  readonly acceptPaths: AcceptPaths;
  schemaVersion(): Promise<number>;
  /** The schema its tables live in (the URL's search_path, or `public`): its signals' channels are that schema's own. */
  schemaName(): Promise<string>;
}

/**
 * The networked store: PostgreSQL through a pool, for any number of nodes on
 * one database, composed of one module per port over the pool. Every method
 * is one statement or one transaction; those that read and then write lock
 * the rows they change (in the order of docs/store-locks.md), so
 * balances, caps and queue depths stay exact with several nodes writing.
 * The migrations are applied before it is returned.
 */
export async function openPgStore(url: string, opts: PgOptions = {}): Promise<PgStore> {
  const db = new Db(url, opts);
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  const accepts = acceptTurns(db);
  return {
    caps: POSTGRES_CAPS,
    db,
    name: db.name,
    acceptPaths: accepts.paths,
    ...accounts(db),
    ...charts(db),
    ...gatewayServers(db),
    ...grupos(db),
    ...messages(db, accepts.acceptOne),
    ...transitions(db),
    ...idempotency(db),
    ...inbox(db),
    ...history(db),
    ...ledger(db),
    ...queue(db),
    ...webhooks(db),
    ...kv(db),
    ...engineAuth(db),
    ...engineHolds(db),
    ...lineHealth(db),
    // On the database's clock (postgres/leases.ts): the `now` the port passes is not used.
    ...leases(db),
    async schemaVersion(): Promise<number> {
      return (await db.one<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations'))?.v ?? 0;
    },
    async schemaName(): Promise<string> {
      return (await db.one<{ s: string }>('SELECT current_schema() AS s'))?.s ?? 'public';
    },
    writeHealth: () =>
      writeHealthOf(db.pool, db.name, () =>
        db.tx(async (c) => {
          await c.query(
            "INSERT INTO kv (ns, key, value) VALUES ('salud', 'sonda', repeat('x', $1)) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value",
            [PROBE_BYTES],
          );
          await c.query("DELETE FROM kv WHERE ns = 'salud' AND key = 'sonda'");
        }),
      ),
    close: () => db.close(),
  };
}
