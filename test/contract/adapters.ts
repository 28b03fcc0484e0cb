import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { until } from '../helpers/poll.js';
import { afterEach, beforeEach } from 'vitest';
import type { NewCelular } from '../../src/core/ports/accounts.js';
import type { NewMensaje } from '../../src/core/ports/messages.js';
import type { EntregaRow } from '../../src/core/ports/model.js';
import type { Store } from '../../src/core/ports/store.js';
import { openPgStore } from '../../src/store/postgres/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { tempDir } from '../helpers/server.js';
import { postgres, POSTGRES_URL } from '../helpers/services.js';

/**
 * Every store adapter, for the contract suites (one per port: accounts,
 * messages, webhooks, kv): SQLite, and PostgreSQL when one answers. Each
 * adapter passes every suite unchanged.
 */

/** Where the tests find PostgreSQL (test/helpers/services.ts finds it for every suite). */
export const PG_URL = POSTGRES_URL;

/** Null when PostgreSQL answers at PG_URL; otherwise why its suites are left out. */
export const PG_ABSENT: string | null = postgres.available ? null : postgres.reason;

/** Runs one statement on the test database outside any store (schemas are made and dropped with it). */
export async function pgAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh schema of its own on the test database, dropped by `drop`. */
export async function pgSchema(): Promise<{ schema: string; drop: () => Promise<void> }> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await pgAdmin(`CREATE SCHEMA ${schema}`);
  return { schema, drop: () => pgAdmin(`DROP SCHEMA ${schema} CASCADE`) };
}

/**
 * Waits until no event of the schema's log is at or above the cluster's
 * xmin: readers of the log (eventsAfter, listener cursors) skip rows of
 * transactions that may still be followed by earlier ones, and other test
 * files' open transactions hold that line back for a moment.
 */
async function pgLogSettled(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await until(
      async () =>
        (await client.query(`SELECT NOT EXISTS (SELECT 1 FROM ${schema}.eventos WHERE xid >= pg_snapshot_xmin(pg_current_snapshot())) AS ok`)).rows[0].ok ===
        true,
      { what: 'the event log to settle' },
    );
  } finally {
    await client.end();
  }
}

/** A small pool per store: many test files run at once against one server. */
export const openPg = (schema: string) => openPgStore(PG_URL, { schema, max: 4 });
export interface StoreHandle {
  store: Store;
  /** Closes and opens the same store again (a restart). */
  reopen(): Promise<Store>;
  /** Resolves once every event logged so far is readable by the log's followers (PostgreSQL: below every snapshot's xmin). */
  settled(): Promise<void>;
  /** Runs SQL on the store's data from another connection: what no port does (deleting messages, for the count triggers). */
  exec(sql: string): Promise<void>;
  cleanup(): Promise<void>;
}

export interface Adapter {
  name: string;
  open(): Promise<StoreHandle>;
}

export const ADAPTERS: Adapter[] = [
  {
    name: 'sqlite',
    async open() {
      const dir = tempDir('pasarela-store-');
      const file = join(dir, 'test.db');
      return {
        store: openSqliteStore(file),
        reopen: async () => openSqliteStore(file),
        // One writer: what committed is readable.
        settled: async () => {},
        exec: async (sql) => {
          const db = new Database(file);
          try {
            db.exec(sql);
          } finally {
            db.close();
          }
        },
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  ...(PG_ABSENT
    ? []
    : [
        {
          name: 'postgres',
          async open(): Promise<StoreHandle> {
            const s = await pgSchema();
            return {
              store: await openPg(s.schema),
              reopen: () => openPg(s.schema),
              settled: () => pgLogSettled(s.schema),
              exec: (sql) => pgAdmin(`SET search_path TO ${s.schema}; ${sql}`),
              cleanup: s.drop,
            };
          },
        },
      ]),
];

/**
 * A fresh store for each test of the enclosing describe: `ctx.store` (a
 * restart replaces it); `ctx.node()` opens another store on the same data,
 * as a second node would (closed after the test).
 */
export function storeEachTest(adapter: Adapter): {
  store: Store;
  reopen(): Promise<Store>;
  node(): Promise<Store>;
  settled(): Promise<void>;
  exec(sql: string): Promise<void>;
} {
  let h: StoreHandle;
  let nodes: Store[] = [];
  const ctx = {
    store: undefined as unknown as Store,
    reopen: async () => {
      await ctx.store.close();
      ctx.store = await h.reopen();
      return ctx.store;
    },
    node: async () => {
      const other = await h.reopen();
      nodes.push(other);
      return other;
    },
    settled: () => h.settled(),
    exec: (sql: string) => h.exec(sql),
  };
  beforeEach(async () => {
    h = await adapter.open();
    ctx.store = h.store;
  });
  afterEach(async () => {
    for (const n of nodes) await n.close();
    nodes = [];
    await ctx.store.close();
    await h.cleanup();
  });
  return ctx;
}

export const celular = (cliente_id: number, numero: string): NewCelular => ({
  cliente_id,
  numero,
  nombre_interno: null,
  estado: 'desconectado',
  max_envios_por_minuto: 12,
  max_envios_por_hora: 500,
  max_envios_por_dia: null,
  hora_inicio_permitido: '00:00',
  hora_fin_permitido: '23:59',
  key_hash: 'k'.repeat(64),
  gateway_token_hash: `${numero}`.padEnd(64, 'g'),
});

/** New text messages of one line, numbered from 1, queued unless asked otherwise. */
export function messages(clienteId: number, celularId: number): (modo?: 'cola' | 'directo') => NewMensaje {
  let n = 0;
  return (modo = 'cola') => ({
    msg_id: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
    cliente_id: clienteId,
    celular_id: celularId,
    destinatario: '14155552671',
    tipo: 'texto',
    modo,
    texto: 'x',
    media: null,
    payload: { texto: 'x' },
    expira_at: null,
  });
}

/** A client (optionally capped at `max` lines), created at t=1000. */
export const newCliente = (store: Store, max: number | null = null) =>
  store.createCliente({ nombre: 'A', email: 'a@x.mx', plan: 'medido', estado: 'activo', max_celulares: max, saldo_global: 0, key_hash: 'h' }, 1000);

let probes = 0;

/**
 * A client's deliveries a claim at `now` takes (pending, due, not held by a
 * claim in force), in the order the dispatcher gets them, given back at once:
 * which deliveries are due when, read through the claim the product makes
 * and leaving the outbox as it was.
 */
export async function claimableAt(store: Store, clienteId: number, now: number, limit = 100): Promise<EntregaRow[]> {
  const claim = { id: `probe.${++probes}`, until: now + 1 };
  const rows = await store.claimEntregas(clienteId, now, limit, claim);
  await store.releaseEntregas(
    rows.map((e) => e.id),
    claim.id,
  );
  return rows;
}
