import type Database from 'better-sqlite3';
import { chmodSync } from 'node:fs';
import type { Store, StoreCaps } from '../../core/ports/store.js';
import { PROBE_BYTES, writeHealthOf } from '../faults.js';
import type { WriteGate } from '../write-gate.js';
import { accounts, lineasAfter } from './accounts.js';
import { charts } from './charts.js';
import { engineAuth } from './engine-auth.js';
import { engineHolds } from './engine-holds.js';
import { BACKSTOP_PAGES, Checkpointer } from './checkpointer.js';
import { migrate, openDb, schemaVersion } from './db.js';
import { gatewayServers } from './gateway-servers.js';
import { grupos } from './grupos.js';
import { history } from './history.js';
import { idempotency } from './idempotency.js';
import { inbox } from './inbox.js';
import { kv } from './kv.js';
import { leases } from './leases.js';
import { lineHealth } from './line-health.js';
import { ledger } from './ledger.js';
import { messages } from './messages.js';
import { accept } from './accept.js';
import { queue } from './queue.js';
import { transitions } from './transitions.js';
import { immediate, stmt, useWriteGate } from './statements.js';
import { webhooks } from './webhooks.js';

/** One process serves a SQLite file (the data directory's lock): nothing is shared with other nodes. */
export const SQLITE_CAPS: StoreCaps = { name: 'sqlite', label: 'SQLite', shared: false };

/** The embedded store, with what only it has: its connection, its schema version, a second writer thread, online backups. */
export interface SqliteStore extends Store {
  readonly db: Database.Database;
  /** Applies every migration not yet recorded; returns the versions applied now. */
  migrate(): number[];
  /**
   * Another thread of this process writes the same file (server/background/): transactions take turns through
   * `gate`, and checkpoints are left to the checkpointer (only a served store has a second thread, and a checkpointer).
   */
  shareWrites(gate: WriteGate): void;
  schemaVersion(): number;
  backupTo(file: string): Promise<{ schemaVersion: number }>;
}

/**
 * The embedded store: one SQLite file in WAL mode, composed of one module
 * per port over one connection. better-sqlite3 is synchronous, so each
 * method runs to completion before another starts; the methods documented
 * as atomic use a transaction as well, so they stay atomic for any other
 * process that opens the same file. With `background`, WAL checkpoints run
 * on a thread of their own (see checkpointer.ts).
 */
export function openSqliteStore(file: string, opts: { background?: { checkpointMs: number; onError: (message: string) => void } } = {}): SqliteStore {
  const db = openDb(file);
  migrate(db);
  let checkpointer: Checkpointer | null = null;
  if (opts.background && file !== ':memory:') {
    db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    checkpointer = new Checkpointer(file, opts.background.checkpointMs, opts.background.onError);
  }
  return {
    caps: SQLITE_CAPS,
    db,
    ...accounts(db),
    ...charts(db),
    ...gatewayServers(db),
    ...grupos(db),
    ...messages(db),
    ...transitions(db),
    ...accept(db),
    ...idempotency(db),
    ...inbox(db),
    ...history(db),
    ...ledger(db),
    ...queue(db),
    ...webhooks(db),
    ...kv(db),
    ...engineAuth(db),
    ...engineHolds(engineAuth(db)),
    ...leases((afterId, limit) => lineasAfter(db, afterId, limit)),
    ...lineHealth(db),
    migrate: () => migrate(db),
    shareWrites: (gate) => {
      useWriteGate(db, gate);
      // Both threads' connections leave the WAL to the request thread's checkpointer. At SQLite's default (1,000
      // pages) the background thread's COMMITs ran a checkpoint nearly every time under a send load: 3.4 ms each.
      db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    },
    schemaVersion: () => schemaVersion(db),
    writeHealth: () =>
      writeHealthOf(db, db.name, () =>
        immediate(db, () => {
          stmt(db, "INSERT OR REPLACE INTO kv (ns, key, value) VALUES ('salud', 'sonda', ?)").run('x'.repeat(PROBE_BYTES));
          stmt(db, "DELETE FROM kv WHERE ns = 'salud' AND key = 'sonda'").run();
        }),
      ),
    /**
     * SQLite's online backup API: pages are copied in steps between which
     * writers go on; a page written meanwhile restarts the copy of what
     * changed, so the file is one consistent snapshot whatever the load.
     */
    async backupTo(to: string): Promise<{ schemaVersion: number }> {
      const version = schemaVersion(db);
      await db.backup(to);
      chmodSync(to, 0o600);
      return { schemaVersion: version };
    },
    async close(): Promise<void> {
      await checkpointer?.stop();
      checkpointer = null;
      if (db.open) db.close();
    },
  };
}
