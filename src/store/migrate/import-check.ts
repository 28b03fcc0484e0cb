import type Database from 'better-sqlite3';
import type { Client } from '../postgres/db.js';
import { COPIED } from './import.js';
import { EVENT_PREFIX_KV } from '../../core/events/event-log.js';

/**
 * What `pasarela migrate` checks before it commits, on both sides: rows per
 * table, the event-id prefix, the sums of the balances and of the ledger, each balance against its
 * own ledger rows, and the recounted history and inbox counts against their rows.
 * Any difference the copy made is a mismatch and the transaction is rolled
 * back; a balance that already disagreed with its ledger in SQLite is copied
 * as it was and reported, not refused (the copy cannot mend the source).
 */

export interface TableCount {
  table: string;
  sqlite: number;
  postgres: number;
}

export interface Sums {
  saldo_global: number;
  saldo_celulares: number;
  movimientos: number;
}

/** A balance that is not the sum of its ledger rows (global: celular_id null). */
export interface LedgerGap {
  cliente_id: number;
  celular_id: number | null;
  saldo: number;
  ledger: number;
}

export interface Check {
  tables: TableCount[];
  sums: { sqlite: Sums; postgres: Sums };
  /** Balances compared with their ledger. */
  balances: number;
  /** Gaps SQLite already had, copied as they were. */
  gapsInSource: LedgerGap[];
  /** What the copy got wrong; empty when it is exact. */
  mismatches: string[];
}

/** The same questions for either store: SQLite answers at once, PostgreSQL through the transaction. */
type Ask = (sql: string) => Promise<Array<Record<string, number | null>>>;

const SUMS = `SELECT
  (SELECT COALESCE(SUM(saldo_global), 0) FROM clientes) AS saldo_global,
  (SELECT COALESCE(SUM(saldo_actual), 0) FROM celulares) AS saldo_celulares,
  (SELECT COALESCE(SUM(monto), 0) FROM movimientos_saldo) AS movimientos`;

async function gaps(ask: Ask): Promise<{ balances: number; gaps: LedgerGap[] }> {
  const global = new Map<number, number>();
  const line = new Map<number, number>();
  for (const r of await ask('SELECT cliente_id, celular_id, SUM(monto) AS s FROM movimientos_saldo GROUP BY cliente_id, celular_id')) {
    if (r.celular_id === null) global.set(r.cliente_id!, r.s!);
    else line.set(r.celular_id!, (line.get(r.celular_id!) ?? 0) + r.s!);
  }
  const out: LedgerGap[] = [];
  const clientes = await ask('SELECT id, saldo_global AS saldo FROM clientes ORDER BY id');
  for (const r of clientes) {
    const ledger = global.get(r.id!) ?? 0;
    if (ledger !== r.saldo) out.push({ cliente_id: r.id!, celular_id: null, saldo: r.saldo!, ledger });
  }
  const celulares = await ask('SELECT id, cliente_id, saldo_actual AS saldo FROM celulares ORDER BY id');
  for (const r of celulares) {
    const ledger = line.get(r.id!) ?? 0;
    if (ledger !== r.saldo) out.push({ cliente_id: r.cliente_id!, celular_id: r.id!, saldo: r.saldo!, ledger });
  }
  return { balances: clientes.length + celulares.length, gaps: out };
}

export const gapName = (g: LedgerGap) => (g.celular_id === null ? `client ${g.cliente_id}'s global balance` : `celular ${g.celular_id}'s balance`);

export async function checkCopy(c: Client, src: Database.Database): Promise<Check> {
  const lite: Ask = async (sql) => src.prepare(sql).all() as Array<Record<string, number | null>>;
  const pg: Ask = async (sql) => (await c.query(sql)).rows as Array<Record<string, number | null>>;
  const mismatches: string[] = [];

  const tables: TableCount[] = [];
  for (const table of COPIED) {
    const sql = `SELECT COUNT(*) AS n FROM ${table}`;
    const t = { table, sqlite: (await lite(sql))[0]!.n!, postgres: (await pg(sql))[0]!.n! };
    tables.push(t);
    if (t.sqlite !== t.postgres) mismatches.push(`${table}: ${t.sqlite} rows in SQLite, ${t.postgres} in PostgreSQL`);
  }

  // Every event id is made from the prefix: the source's, or ids (and the attempts that name them) would change.
  const PREFIX = `SELECT value FROM kv WHERE ns = '${EVENT_PREFIX_KV.ns}' AND key = '${EVENT_PREFIX_KV.key}'`;
  const prefixes = {
    sqlite: (src.prepare(PREFIX).get() as { value: string } | undefined)?.value,
    postgres: ((await c.query(PREFIX)).rows[0] as { value: string } | undefined)?.value,
  };
  if (prefixes.sqlite !== prefixes.postgres) mismatches.push(`event id prefix: ${prefixes.sqlite} in SQLite, ${prefixes.postgres} in PostgreSQL`);

  const sumsOf = (r: Record<string, number | null> | undefined): Sums => ({
    saldo_global: r?.saldo_global ?? 0,
    saldo_celulares: r?.saldo_celulares ?? 0,
    movimientos: r?.movimientos ?? 0,
  });
  const sums = { sqlite: sumsOf((await lite(SUMS))[0]), postgres: sumsOf((await pg(SUMS))[0]) };
  for (const k of Object.keys(sums.sqlite) as Array<keyof Sums>) {
    if (sums.sqlite[k] !== sums.postgres[k]) mismatches.push(`sum of ${k}: ${sums.sqlite[k]} in SQLite, ${sums.postgres[k]} in PostgreSQL`);
  }

  const before = await gaps(lite);
  const after = await gaps(pg);
  const known = new Set(before.gaps.map((g) => JSON.stringify(g)));
  for (const g of after.gaps) {
    if (!known.has(JSON.stringify(g))) mismatches.push(`${gapName(g)} is ${g.saldo} but its ledger sums ${g.ledger} in PostgreSQL, unlike in SQLite`);
  }

  for (const [table, counts] of [
    ['mensajes', ['conteos_mensajes', 'conteos_cuartos']],
    ['recibidos', ['conteos_recibidos', 'conteos_recibidos_cuartos']],
  ] as const) {
    const rows = tables.find((t) => t.table === table)!.postgres;
    for (const k of counts) {
      const n = (await pg(`SELECT COALESCE(SUM(n), 0) AS n FROM ${k}`))[0]!.n!;
      if (n !== rows) mismatches.push(`${k} counts ${n} messages, ${table} holds ${rows}`);
    }
  }

  return { tables, sums, balances: after.balances, gapsInSource: before.gaps, mismatches };
}
