import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { ChartCount, ChartScope } from '../../src/core/ports/charts.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { ADAPTERS, celular, PG_ABSENT, PG_URL, pgSchema, storeEachTest } from './adapters.js';

/**
 * Each client's hours (docs/decisions.md D-106; SQLite migration 27,
 * PostgreSQL 23): the grain the week's chart of everyone and of a client
 * reads. After sends, failures, receipts and a delete across hour edges, an
 * hour's counts equal its messages' own and its four quarters' summed; a
 * range is exact at its edges; a prune removes the hours past their keeping;
 * the migration fills the hours of the kept week from the quarters.
 */

/** A Monday at 10:00 UTC: hours and quarters fall where the test says. */
const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const MIN = 60_000;
const HOUR = 60 * MIN;

const sort = (rows: ChartCount[]) => rows.filter((r) => r.n !== 0).sort((a, b) => a.t - b.t || (a.estado < b.estado ? -1 : a.estado > b.estado ? 1 : 0));

/** Rows of a finer grain added into buckets `ratio` times as wide. */
function coarser(rows: ChartCount[], ratio: number): ChartCount[] {
  const sums = new Map<string, ChartCount>();
  for (const r of rows) {
    const t = Math.floor(r.t / ratio);
    const k = `${t} ${r.estado}`;
    const row = sums.get(k) ?? { t, estado: r.estado, n: 0 };
    row.n += r.n;
    sums.set(k, row);
  }
  return sort([...sums.values()]);
}

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: each client's hours`, () => {
    const ctx = storeEachTest(adapter);
    let n = 0;

    async function client(lines: string[]) {
      const c = await ctx.store.createCliente(
        { nombre: 'H', email: 'h@x.mx', plan: 'ilimitado', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: `hh${++n}` },
        1,
      );
      const ids: number[] = [];
      for (const num of lines) {
        const cel = await ctx.store.insertCelular(celular(c.id, num), 1);
        if (!cel.ok) throw new Error('insert');
        ids.push(cel.celular.id);
      }
      return { clienteId: c.id, lines: ids };
    }

    async function accept(clienteId: number, celularId: number, at: number): Promise<string> {
      const msg_id = `00000000-0000-4000-b000-${String(++n).padStart(12, '0')}`;
      const r = await ctx.store.acceptMensaje(
        {
          msg_id,
          cliente_id: clienteId,
          celular_id: celularId,
          destinatario: '14155552671',
          tipo: 'texto',
          modo: 'cola',
          texto: 'x',
          media: null,
          payload: { texto: 'x' },
          expira_at: null,
        },
        { charge: false, maxPending: null },
        at,
      );
      expect(r).toMatchObject({ ok: true });
      return msg_id;
    }

    /** What an hour's counts must say, from the messages themselves. */
    async function expected(ids: string[], scope: ChartScope, desde: number, hasta: number): Promise<ChartCount[]> {
      const rows: ChartCount[] = [];
      for (const id of ids) {
        const m = await ctx.store.getMensaje(id);
        if (!m) continue;
        if (scope.cliente_id !== undefined && m.cliente_id !== scope.cliente_id) continue;
        const t = Math.floor(m.created_at / HOUR);
        if (t >= desde && t < hasta) rows.push({ t, estado: m.estado, n: 1 });
      }
      return coarser(rows, 1);
    }

    it('counts each hour as its messages and its four quarters say, across hour edges', async () => {
      const a = await client(['525500000011', '525500000012']);
      const b = await client(['525500000013']);
      const ids: string[] = [];
      // From 09:40 to 11:35: the 10:00 and 11:00 edges crossed, and one message on each side of them to the millisecond.
      for (let i = 0; i < 24; i += 1) {
        const [cid, line] = i % 3 === 0 ? [b.clienteId, b.lines[0]!] : [a.clienteId, a.lines[i % 2]!];
        ids.push(await accept(cid, line, T0 - 20 * MIN + i * 5 * MIN + 11));
      }
      for (const at of [T0 - 1, T0, T0 + HOUR - 1, T0 + HOUR]) ids.push(await accept(a.clienteId, a.lines[0]!, at));
      const at = T0 + 2 * HOUR;
      for (let i = 0; i < ids.length; i += 1) {
        const id = ids[i]!;
        if (i % 4 === 3) {
          expect(await ctx.store.failMensaje(id, 'refused', 'rechazado', at)).toMatchObject({ estado: 'error' });
          continue;
        }
        if (i % 5 === 4) continue;
        const m = await ctx.store.markSent(id, `H-${i}`, at);
        expect(m).toMatchObject({ estado: 'enviado' });
        if (i % 2 === 0) await ctx.store.receipt(m!.celular_id, `H-${i}`, 'entregado', at + 1);
        if (i % 6 === 0) await ctx.store.receipt(m!.celular_id, `H-${i}`, 'leido', at + 2);
      }
      await ctx.exec(`DELETE FROM mensajes WHERE msg_id = '${ids[7]}'`);

      const desde = Math.floor((T0 - 2 * HOUR) / HOUR);
      const hasta = Math.floor((T0 + 3 * HOUR) / HOUR);
      for (const scope of [{}, { cliente_id: a.clienteId }, { cliente_id: b.clienteId }] as ChartScope[]) {
        const hours = sort(await ctx.store.chartCounts(scope, 60, desde, hasta));
        const quarters = await ctx.store.chartCounts(scope, 15, desde * 4, hasta * 4);
        expect(hours, JSON.stringify(scope)).toEqual(await expected(ids, scope, desde, hasta));
        expect(hours, JSON.stringify(scope)).toEqual(coarser(quarters, 4));
        // Three hours hold messages: 09:00, 10:00 and 11:00.
        expect(new Set(hours.map((r) => r.t)).size, JSON.stringify(scope)).toBe(3);
      }
      // A range is exact at its edges: the 10:00 hour alone holds T0 and T0 + HOUR - 1, not T0 - 1 nor T0 + HOUR.
      const ten = T0 / HOUR;
      const only = sort(await ctx.store.chartCounts({ cliente_id: a.clienteId }, 60, ten, ten + 1));
      expect(only.every((r) => r.t === ten)).toBe(true);
      expect(only).toEqual(await expected(ids, { cliente_id: a.clienteId }, ten, ten + 1));
      expect(only.reduce((s, r) => s + r.n, 0)).toBeGreaterThanOrEqual(2);
      expect(await ctx.store.chartCounts({}, 60, ten + 3, ten + 10)).toEqual([]);
    });

    it("prunes the hours past the week's keeping, leaving newer ones", async () => {
      const c = await client(['525500000019']);
      const old = await accept(c.clienteId, c.lines[0]!, T0 - 9 * 86_400_000);
      await accept(c.clienteId, c.lines[0]!, T0 - 7 * 86_400_000);
      await accept(c.clienteId, c.lines[0]!, T0);
      const scope = { cliente_id: c.clienteId };
      const all = () => ctx.store.chartCounts(scope, 60, 0, T0 / HOUR + 1);
      expect((await all()).map((r) => r.t)).toEqual([(T0 - 9 * 86_400_000) / HOUR, (T0 - 7 * 86_400_000) / HOUR, T0 / HOUR]);
      // Kept eight days, as the quarters: the hour of nine days ago goes (with its minute and quarter rows), the others stay.
      const gone = await ctx.store.pruneCharts(T0 - 2 * 86_400_000, T0 - 8 * 86_400_000);
      expect(gone).toBeGreaterThanOrEqual(1 + 2 + 1);
      expect((await all()).map((r) => r.t)).toEqual([(T0 - 7 * 86_400_000) / HOUR, T0 / HOUR]);
      // A change of state of a message whose hour is gone shows in no kept hour.
      expect(await ctx.store.failMensaje(old, 'x', 'rechazado', T0)).toMatchObject({ estado: 'error' });
      expect(sort(await ctx.store.chartCounts(scope, 60, (T0 - 8 * 86_400_000) / HOUR, T0 / HOUR + 1))).toEqual([
        { t: (T0 - 7 * 86_400_000) / HOUR, estado: 'pendiente', n: 1 },
        { t: T0 / HOUR, estado: 'pendiente', n: 1 },
      ]);
    });
  });
}

/** Messages an earlier version wrote: [client, line, estado, created_at], over ten days and across hour edges. */
const OLD: Array<[number, number, string, number]> = Array.from({ length: 60 }, (_, i) => [
  1 + (i % 2),
  1 + (i % 3),
  ['pendiente', 'enviado', 'entregado', 'leido', 'error'][i % 5]!,
  T0 - 10 * 86_400_000 + i * 4 * HOUR + (i % 4) * 15 * MIN - (i % 2),
]);
const insertOld = (n: number) =>
  `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, created_at)
   VALUES (${n === 0 ? "?, ?, ?, '5215512345678', 'texto', 'cola', ?, ?" : "$1, $2, $3, '5215512345678', 'texto', 'cola', $4, $5"})`;
/** The hours the migration must have filled: every whole hour from eight days before the newest message. */
function expectedFill(): Array<{ hora: number; cliente_id: number; estado: string; n: number }> {
  const newest = Math.max(...OLD.map((r) => r[3]));
  const from = Math.floor((newest - 8 * 86_400_000) / HOUR);
  const sums = new Map<string, { hora: number; cliente_id: number; estado: string; n: number }>();
  for (const [cliente_id, , estado, at] of OLD) {
    const hora = Math.floor(at / HOUR);
    if (hora < from) continue;
    const k = `${hora} ${cliente_id} ${estado}`;
    const row = sums.get(k) ?? { hora, cliente_id, estado, n: 0 };
    row.n += 1;
    sums.set(k, row);
  }
  return [...sums.values()].sort((a, b) => a.hora - b.hora || a.cliente_id - b.cliente_id || (a.estado < b.estado ? -1 : 1));
}

describe("the hours' migration", () => {
  it("SQLite: fills each client's hours of the last eight days from the quarters", () => {
    const db = new Database(':memory:');
    const target = MIGRATIONS.find((m) => /per hour by estado/.test(m.name))!;
    for (const m of MIGRATIONS.filter((m) => m.version < target.version)) db.exec(m.sql);
    OLD.forEach(([c, l, e, at], i) => db.prepare(insertOld(0)).run(`m-${i}`, c, l, e, at));
    db.exec(target.sql);
    const rows = db.prepare('SELECT hora, cliente_id, estado, n FROM conteos_horas ORDER BY hora, cliente_id, estado').all();
    expect(rows).toEqual(expectedFill());
    expect(rows.length).toBeGreaterThan(10);
    db.close();
  });

  it.skipIf(PG_ABSENT !== null)('PostgreSQL: the same hours', async () => {
    const fresh = await pgSchema();
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c search_path=${fresh.schema}`);
    const c = new pg.Client({ connectionString: url.toString() });
    try {
      await c.connect();
      const target = PG_MIGRATIONS.find((m) => /per hour by estado/.test(m.name))!;
      for (const m of PG_MIGRATIONS.filter((m) => m.version < target.version)) await c.query(m.sql);
      for (const [i, [cl, l, e, at]] of OLD.entries()) await c.query(insertOld(1), [`m-${i}`, cl, l, e, at]);
      await c.query(target.sql);
      const { rows } = await c.query(
        'SELECT hora::int AS hora, cliente_id::int AS cliente_id, estado, n::int AS n FROM conteos_horas ORDER BY hora, cliente_id, estado',
      );
      expect(rows).toEqual(expectedFill());
    } finally {
      await c.end();
      await fresh.drop();
    }
  });
});
