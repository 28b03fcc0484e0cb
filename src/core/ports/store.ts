import type { AccountsStore, LedgerStore } from './accounts.js';
import type { ChartsStore } from './charts.js';
import type { EngineAuthStore } from './engine-auth.js';
import type { EngineHoldsStore } from './engine-holds.js';
import type { GatewayServersStore } from './gateway-servers.js';
import type { GruposStore } from './grupos.js';
import type { KvStore } from './kv.js';
import type { LeasesStore } from './leases.js';
import type { LineHealthStore } from './line-health.js';
import type { MessagesStore } from './messages.js';
import type { QueueStore } from './queue.js';
import type { WebhooksStore } from './webhooks.js';

/** Whether the store takes writes now (see Store.writeHealth). */
export type StoreWriteHealth = { writable: true } | { writable: false; reason: string; since: number };

/**
 * What callers may need to know of the store they were given, instead of
 * its dialect's name: whether other nodes serve it too, and its names for
 * people.
 */
export interface StoreCaps {
  /** Its kind as /health and the start banner show it: 'sqlite', 'postgres'. */
  readonly name: string;
  /** Its name in sentences: 'SQLite', 'PostgreSQL'. */
  readonly label: string;
  /**
   * Served by any number of nodes at once (PostgreSQL): their clocks are
   * never compared, settings may come from the store, and stale claims are
   * never released wholesale at start. False: this process's alone (SQLite,
   * behind the data directory's lock).
   */
  readonly shared: boolean;
}

/**
 * The store, one port per concern. Each method is one atomic operation; an
 * adapter stores and locks, and takes its decisions from the core (the money
 * and state rules are in core/billing/ledger.ts, the caps in core/sending/caps.ts). Every
 * adapter passes the same contract suite per port (test/contract/). An
 * adapter composes it from one factory per port over its connection
 * (src/store/sqlite/store.ts, src/store/postgres/store.ts).
 */
export interface Store
  extends
    AccountsStore,
    LedgerStore,
    ChartsStore,
    GatewayServersStore,
    GruposStore,
    MessagesStore,
    QueueStore,
    WebhooksStore,
    KvStore,
    LeasesStore,
    EngineAuthStore,
    EngineHoldsStore,
    LineHealthStore {
  readonly caps: StoreCaps;
  /**
   * Whether the store takes writes. Free while no write has failed; after a
   * write met a full disk or an I/O error, a probe write tells whether it
   * has recovered.
   */
  writeHealth(): Promise<StoreWriteHealth>;
  /**
   * A consistent copy of the whole store into `file` (which must not be
   * read until this resolves), taken while the store keeps serving; the
   * copy's schema version is returned. Only an embedded store has one: on
   * PostgreSQL the operator uses pg_dump.
   */
  backupTo?(file: string): Promise<{ schemaVersion: number }>;
  close(): Promise<void>;
}
