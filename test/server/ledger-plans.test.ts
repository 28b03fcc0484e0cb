import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MovimientoFilter } from '../../src/core/ports/accounts.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { celular, openPg, pgSchema, PG_URL } from '../contract/adapters.js';
import { describeWith, postgres } from '../helpers/services.js';

/**
 * The ledger's statements on PostgreSQL over 200,000 movements and 20,000
 * messages, analysed: each page, its bounded total and a month's consumption
 * per line read through an index (the one its filter names), never a scan of
 * the ledger or of the messages, nor a sort of a client's whole ledger; the
 * total stops at its bound.
 * SQLite's are checked in query-plans.test.ts.
 */

describeWith(postgres, 'ledger plans on PostgreSQL', () => {
  let store: PgStore;
  let drop: () => Promise<void>;
  let schema: string;
  let cliente: number;
  let line: number;
  const ran: Array<{ sql: string; params: unknown[] }> = [];

  beforeAll(async () => {
    const s = await pgSchema();
    drop = s.drop;
    schema = s.schema;
    store = await openPg(schema);
    const c = await store.createCliente(
      { nombre: 'A', email: 'a@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' },
      1,
    );
    const l = await store.insertCelular(celular(c.id, '525512345678'), 1);
    if (!l.ok) throw new Error('insert');
    [cliente, line] = [c.id, l.celular.id];
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`SET search_path TO ${schema}`);
      // Four clients' charges over a year, a refund in 50 and a manual change in 500; half of them on the line's balance.
      await client.query(
        `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor)
         SELECT 1000 + g::bigint * 80000, $1::bigint + (g % 4), CASE WHEN g % 2 = 0 THEN $2::bigint END,
                CASE WHEN g % 500 = 0 THEN 5 WHEN g % 50 = 0 THEN 1 ELSE -1 END, 0,
                CASE WHEN g % 500 = 0 THEN 'recarga' WHEN g % 50 = 0 THEN 'reembolso x' || g ELSE 'envio x' || g END,
                CASE WHEN g % 500 = 0 THEN 'operator' ELSE 'sistema' END
         FROM generate_series(1, 200000) g`,
        [cliente, line],
      );
      // The counts' triggers are not what is measured here: left out of the fill.
      await client.query('ALTER TABLE mensajes DISABLE TRIGGER USER');
      await client.query(
        `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, created_at)
         SELECT md5(g::text)::uuid::text, $1::bigint, $2::bigint, '14155552671', 'texto', 'cola', CASE WHEN g % 10 = 0 THEN 'error' ELSE 'leido' END, 'x',
                CASE WHEN g % 10 = 0 THEN 0 ELSE 1 END, 1000 + g::bigint * 1500000
         FROM generate_series(1, 20000) g`,
        [cliente, line],
      );
      await client.query('ALTER TABLE mensajes ENABLE TRIGGER USER');
      // As autovacuum leaves a table at rest: its visibility map set, so the counts read the index alone.
      await client.query('VACUUM ANALYZE movimientos_saldo');
      await client.query('VACUUM ANALYZE mensajes');
    } finally {
      await client.end();
    }
    // Every statement of the pool (q and one both run through query).
    const query = store.db.query.bind(store.db);
    store.db.query = async (sql: string, params: unknown[] = []) => {
      ran.push({ sql, params });
      return query(sql, params);
    };
  }, 600_000);
  afterAll(async () => {
    await store?.close();
    await drop?.();
  });

  async function plans(): Promise<string[]> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`SET search_path TO ${schema}`);
      const out: string[] = [];
      for (const r of ran) out.push(JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) ${r.sql}`, r.params)).rows[0]['QUERY PLAN']));
      return out;
    } finally {
      await client.end();
    }
  }

  it('reads every page and bounded total through the index of its filter (PostgreSQL)', async () => {
    const want: Array<[Partial<MovimientoFilter>, string]> = [
      [{}, 'movimientos_cliente_fecha'],
      [{ tipo: 'cobro' }, 'movimientos_cliente_fecha'],
      [{ tipo: 'reembolso' }, 'movimientos_reembolsos'],
      [{ tipo: 'manual' }, 'movimientos_manuales'],
      [{ celular_id: line }, 'movimientos_celular_fecha'],
      [{ desde: 1000 + 50_000 * 80000, hasta: 1000 + 100_000 * 80000 }, 'movimientos_cliente_fecha'],
      [{ despues: { fecha: 1000 + 150_000 * 80000, id: 150_000 } }, 'movimientos_cliente_fecha'],
    ];
    for (const [f, index] of want) {
      ran.length = 0;
      const r = await store.listMovimientos({ cliente_id: cliente, page: 3, por_pagina: 50, totalHasta: 10_000, ...f });
      expect(r.rows.length).toBeGreaterThan(0);
      // This client's refunds and manual changes are counted; every other filter holds more rows than the bound.
      expect(r.total, JSON.stringify(f)).toBe(f.tipo === 'manual' ? 400 : f.tipo === 'reembolso' ? 1600 : null);
      const [count, rowsPlan] = await plans();
      // The total stops at its bound (LIMIT) whatever path it takes: at most 10,001 rows read of a client holding a quarter of the table.
      expect(count, JSON.stringify(f)).toContain('"Node Type":"Limit"');
      // The page: through the index of its filter, in its order; a sort only of a partial index's few rows (refunds, manual changes).
      expect(rowsPlan, JSON.stringify(f)).not.toContain('Seq Scan');
      if (f.tipo !== 'reembolso' && f.tipo !== 'manual') expect(rowsPlan, JSON.stringify(f)).not.toContain('"Node Type":"Sort"');
      expect(rowsPlan, JSON.stringify(f)).toContain(`"Index Name":"${index}"`);
    }
    // A line with a manual filter: either index holds the filter (the partial one the manual changes, the line's all its rows).
    ran.length = 0;
    await store.listMovimientos({ cliente_id: cliente, celular_id: line, tipo: 'manual', page: 1, por_pagina: 50, totalHasta: 10_000 });
    expect((await plans())[1]).not.toContain('Seq Scan');
  });

  it("reads a month's consumption per line from a range of its dates (PostgreSQL)", async () => {
    ran.length = 0;
    const month = { desde: 1000 + 10_000 * 1500000, hasta: 1000 + 11_800 * 1500000 };
    expect(await store.consumoLineas(cliente, month.desde, month.hasta)).toEqual([{ celular_id: line, numero: '525512345678', mensajes: 1620, monto: 1620 }]);
    const [plan] = await plans();
    expect(plan).not.toContain('Seq Scan');
    // A range of the month's dates in an index of the client's (with the line, or the line filtered: one line here, the same rows).
    expect(plan).toMatch(/"Index Name":"mensajes_cliente_(celular_)?fecha"/);
    expect(plan).toMatch(/"Index Cond":"[^"]*created_at >= [^"]*created_at < /);
  });
});
