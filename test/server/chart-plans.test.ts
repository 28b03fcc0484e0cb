import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChartScope } from '../../src/core/ports/charts.js';
import type { Store } from '../../src/core/ports/store.js';
import { countsParams, countsSql, SAMPLES_SQL } from '../../src/store/chart-sql.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { celular, openPg, pgSchema } from '../contract/adapters.js';
import { tempDir } from '../helpers/server.js';
import { describeWith, postgres, POSTGRES_URL } from '../helpers/services.js';

/**
 * The charts' statements (D-100, D-101) on a store with a long history: each
 * read is a key range of count or sample rows, and the triggers' statements
 * find their rows by key; no plan scans a table.
 */

const MIN = 60_000;
const NOW = Date.UTC(2026, 10, 23, 10, 0, 0);
const DAYS = 10;
const MESSAGES = 30_000;
const ESTADOS = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];

/** Every scope and grain a chart reads, with its bucket range of the last day (minutes) or week (quarters). */
function reads(clienteId: number, celularId: number): Array<{ scope: ChartScope; grano: number; desde: number; hasta: number }> {
  const scopes: ChartScope[] = [{}, { cliente_id: clienteId }, { cliente_id: clienteId, celular_id: celularId }];
  return scopes.flatMap((scope) => [
    { scope, grano: 1, desde: (NOW - 3_600_000) / MIN, hasta: NOW / MIN },
    { scope, grano: 15, desde: (NOW - 7 * 86_400_000) / (15 * MIN), hasta: NOW / (15 * MIN) },
  ]);
}

/** Two clients, the first with two lines, the second with one: [client 1 line 1, client 1 line 2, client 2 line 1]. */
async function seedLines(store: Store): Promise<Array<{ cliente: number; celular: number }>> {
  const out: Array<{ cliente: number; celular: number }> = [];
  for (const [k, count] of [
    [1, 2],
    [2, 1],
  ] as const) {
    const c = await store.createCliente(
      { nombre: `c${k}`, email: `c${k}@x.mx`, plan: 'ilimitado', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: `k${k}` },
      1,
    );
    for (let i = 0; i < count; i += 1) {
      const cel = await store.insertCelular(celular(c.id, `5255000000${k}${i}`), 1);
      if (!cel.ok) throw new Error('insert');
      out.push({ cliente: c.id, celular: cel.celular.id });
    }
  }
  return out;
}

async function exercise(store: Store, clienteId: number, celularId: number): Promise<void> {
  for (const r of reads(clienteId, celularId)) await store.chartCounts(r.scope, r.grano, r.desde, r.hasta);
  const lat = new Array<number>(10).fill(0);
  await store.writeSamples([{ grano: 1, t: NOW / MIN, nodo: 'n', cola: 1, antiguo_s: 1, ok: 1, fallidas: 0, lat }]);
  for (const g of [1, 15, 60]) await store.chartSamples(g, 0, NOW / (g * MIN));
  await store.pruneCharts(NOW - 2 * 86_400_000, NOW - 8 * 86_400_000);
}

describe('SQLite: the charts read and keep their rows by key', () => {
  const dir = tempDir('pasarela-chart-plans-');
  let store: SqliteStore;
  let ids: { cliente: number; celular: number };
  const prepared = new Set<string>();
  // eslint-disable-next-line @typescript-eslint/unbound-method -- restored after, always called with .call(db)
  const realPrepare = Database.prototype.prepare;

  beforeAll(async () => {
    store = openSqliteStore(join(dir, 'plans.db'));
    const db = store.db;
    const lines = await seedLines(store);
    const insert = db.prepare(
      `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, intentos, created_at)
       VALUES (?, ?, ?, '525512345678', 'texto', 'cola', ?, 'x', 0, 0, ?)`,
    );
    db.transaction(() => {
      for (let i = 0; i < MESSAGES; i += 1) {
        const line = lines[i % 3]!;
        insert.run(`m-${i}`, line.cliente, line.celular, ESTADOS[i % 5], NOW - DAYS * 86_400_000 + Math.floor((i * DAYS * 86_400_000) / MESSAGES));
      }
    })();
    db.exec("UPDATE mensajes SET estado = 'leido' WHERE msg_id IN ('m-1', 'm-2')");
    db.exec("DELETE FROM mensajes WHERE msg_id = 'm-3'");
    db.exec('ANALYZE');
    ids = lines[1]!;
    Database.prototype.prepare = function (this: Database.Database, sql: string) {
      prepared.add(sql.replace(/\s+/g, ' ').trim());
      return realPrepare.call(this, sql);
    } as typeof Database.prototype.prepare;
  });
  afterAll(async () => {
    Database.prototype.prepare = realPrepare;
    await store?.close();
  });

  it(`scans no table, on a store of ${MESSAGES} messages over ${DAYS} days`, async () => {
    await exercise(store, ids.cliente, ids.celular);
    const db = store.db;
    const triggers = (
      realPrepare.call(db, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'conteos_lineas_%'") as Database.Statement
    ).all() as Array<{ sql: string }>;
    expect(triggers).toHaveLength(3);
    for (const t of triggers) {
      const body = /\bBEGIN\b([\s\S]*)\bEND\s*$/.exec(t.sql)![1]!;
      for (const st of body
        .split(';')
        .map((x) => x.trim())
        .filter(Boolean))
        prepared.add(st.replace(/\b(NEW|OLD)\.\w+/g, '?').replace(/\s+/g, ' '));
    }
    const charts = [...prepared].filter((s) => /conteos_lineas|conteos_cuartos|muestras/.test(s));
    // Five count reads, the sample upsert, its read, the prune's two bounded deletes (counts, samples: each grain a parameter), the triggers' three statements (+1, and -1 on each grain).
    expect(charts.length).toBeGreaterThanOrEqual(5 + 1 + 1 + 2 + 3);
    const scans: string[] = [];
    for (const sql of charts) {
      const plan = realPrepare.call(db, `EXPLAIN QUERY PLAN ${sql}`);
      const rows = (plan.all.bind(plan) as (...p: unknown[]) => Array<{ detail: string }>)(...Array<null>((sql.match(/\?/g) ?? []).length).fill(null));
      // A statement's own list of rows (the triggers' two buckets) is no table.
      for (const r of rows) if (/^SCAN (?!CONSTANT|\d+-ROW VALUES CLAUSE)/.test(r.detail)) scans.push(`${r.detail}  <-  ${sql}`);
    }
    expect(scans).toEqual([]);
    // And the rows a chart reads stay within its buckets: a week of one client is at most 672 quarters by 5 estados.
    for (const r of reads(ids.cliente, ids.celular)) {
      expect((await store.chartCounts(r.scope, r.grano, r.desde, r.hasta)).length).toBeLessThanOrEqual((r.hasta - r.desde) * 5);
    }
  });
});

describeWith(postgres, 'PostgreSQL: the charts read and keep their rows by key', () => {
  let store: Store;
  let drop: () => Promise<void>;
  let schema: string;
  let lines: Array<{ cliente: number; celular: number }>;

  beforeAll(async () => {
    const s = await pgSchema();
    schema = s.schema;
    drop = s.drop;
    store = await openPg(schema);
    lines = await seedLines(store);
    const c = new pg.Client({ connectionString: POSTGRES_URL });
    await c.connect();
    try {
      await c.query(`SET search_path TO ${schema}`);
      await c.query(
        `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, intentos, created_at)
         SELECT md5(g::text)::uuid::text, (ARRAY[$4::bigint, $4::bigint, $6::bigint])[g % 3 + 1], (ARRAY[$5::bigint, $7::bigint, $8::bigint])[g % 3 + 1], '525512345678', 'texto', 'cola',
                (ARRAY['enviado','entregado','leido','error','pendiente'])[g % 5 + 1], 'x', 0, 0, $1::bigint + (g::bigint * $2::bigint) / $3::bigint
         FROM generate_series(0, $3::int - 1) g`,
        [NOW - DAYS * 86_400_000, DAYS * 86_400_000, MESSAGES, lines[0]!.cliente, lines[0]!.celular, lines[2]!.cliente, lines[1]!.celular, lines[2]!.celular],
      );
      await c.query('ANALYZE');
    } finally {
      await c.end();
    }
  });
  afterAll(async () => {
    await store?.close();
    await drop?.();
  });

  it(`plans every chart read as an index range, on a store of ${MESSAGES} messages over ${DAYS} days`, async () => {
    await exercise(store, lines[1]!.cliente, lines[1]!.celular);
    const c = new pg.Client({ connectionString: POSTGRES_URL });
    await c.connect();
    const numbered = (sql: string) => {
      let i = 0;
      return sql.replace(/\?/g, () => `$${++i}`);
    };
    try {
      await c.query(`SET search_path TO ${schema}`);
      const plans: string[] = [];
      for (const r of reads(lines[1]!.cliente, lines[1]!.celular)) {
        const p = await c.query(`EXPLAIN ${numbered(countsSql(r.scope, r.grano))}`, countsParams(r.scope, r.grano, r.desde, r.hasta));
        plans.push(p.rows.map((x) => x['QUERY PLAN']).join('\n'));
      }
      const p = await c.query(`EXPLAIN ${numbered(SAMPLES_SQL)}`, [1, NOW / MIN - 60, NOW / MIN]);
      plans.push(p.rows.map((x) => x['QUERY PLAN']).join('\n'));
      for (const plan of plans) expect(plan).not.toMatch(/Seq Scan on (conteos_lineas|conteos_cuartos|mensajes)/);
      expect(plans.filter((x) => /conteos_lineas_tiempo|conteos_lineas_cliente|conteos_lineas_pkey/.test(x)).length).toBeGreaterThanOrEqual(3);
      expect(plans.some((x) => /conteos_cuartos_cuarto/.test(x))).toBe(true);
    } finally {
      await c.end();
    }
  });
});
