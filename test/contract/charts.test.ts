import { describe, expect, it } from 'vitest';
import type { ChartCount, ChartScope } from '../../src/core/ports/charts.js';
import type { MensajeEstado } from '../../src/core/ports/model.js';
import { ADAPTERS, celular, storeEachTest } from './adapters.js';

/**
 * The charts' kept rows (D-100, D-101; SQLite migration 22, PostgreSQL 18):
 * after sends, failures, receipts and deletes, every scope's counts per
 * minute and quarter hour equal the messages' own created_at and estado;
 * samples of several nodes add up (attempts summed, the queue's largest
 * reading), and a prune removes what is past its keeping.
 */

/** A Monday at 10:00 UTC: minutes and quarters fall where the test says. */
const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const MIN = 60_000;

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: ChartsStore contract`, () => {
    const ctx = storeEachTest(adapter);
    let n = 0;

    async function client(lines: string[]) {
      const c = await ctx.store.createCliente(
        { nombre: 'G', email: 'g@x.mx', plan: 'ilimitado', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: `h${++n}` },
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
      const msg_id = `00000000-0000-4000-a000-${String(++n).padStart(12, '0')}`;
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

    /** What the counts must say, from the messages themselves. */
    async function expected(ids: string[], scope: ChartScope, grano: number, desde: number, hasta: number): Promise<ChartCount[]> {
      const sums = new Map<string, ChartCount>();
      for (const id of ids) {
        const m = await ctx.store.getMensaje(id);
        if (!m) continue;
        if (scope.celular_id !== undefined && m.celular_id !== scope.celular_id) continue;
        if (scope.cliente_id !== undefined && m.cliente_id !== scope.cliente_id) continue;
        const t = Math.floor(m.created_at / (grano * MIN));
        if (t < desde || t >= hasta) continue;
        const k = `${t} ${m.estado}`;
        const row = sums.get(k) ?? { t, estado: m.estado, n: 0 };
        row.n += 1;
        sums.set(k, row);
      }
      return sort([...sums.values()]);
    }
    const sort = (rows: ChartCount[]) => rows.filter((r) => r.n !== 0).sort((a, b) => a.t - b.t || (a.estado < b.estado ? -1 : a.estado > b.estado ? 1 : 0));

    it('counts every scope per minute and quarter hour by the estado each message is in now', async () => {
      const a = await client(['525500000001', '525500000002']);
      const b = await client(['525500000003']);
      const ids: string[] = [];
      // Messages over 40 minutes (three quarters), on three lines of two clients.
      for (let i = 0; i < 24; i += 1) {
        const [cid, line] = i % 3 === 0 ? [b.clienteId, b.lines[0]!] : [a.clienteId, a.lines[i % 2]!];
        ids.push(await accept(cid, line, T0 + i * 100_000 + 7));
      }
      // Their lives: sent, delivered, read, failed, some left pending; one deleted.
      const at = T0 + 45 * MIN;
      for (let i = 0; i < 24; i += 1) {
        const id = ids[i]!;
        if (i % 4 === 3) {
          expect(await ctx.store.failMensaje(id, 'refused', 'rechazado', at)).toMatchObject({ estado: 'error' });
          continue;
        }
        if (i % 5 === 4) continue;
        const m = await ctx.store.markSent(id, `G-${i}`, at);
        expect(m).toMatchObject({ estado: 'enviado' });
        const line = m!.celular_id;
        if (i % 2 === 0) await ctx.store.receipt(line, `G-${i}`, 'entregado', at + 1);
        if (i % 6 === 0) await ctx.store.receipt(line, `G-${i}`, 'leido', at + 2);
      }
      await ctx.exec(`DELETE FROM mensajes WHERE msg_id = '${ids[10]}'`);
      const estados = new Set<MensajeEstado>();
      for (const id of ids) {
        const m = await ctx.store.getMensaje(id);
        if (m) estados.add(m.estado);
      }
      expect([...estados].sort()).toEqual(['entregado', 'enviado', 'error', 'leido', 'pendiente']);

      const scopes: ChartScope[] = [
        {},
        { cliente_id: a.clienteId },
        { cliente_id: b.clienteId },
        { cliente_id: a.clienteId, celular_id: a.lines[0]! },
        { cliente_id: a.clienteId, celular_id: a.lines[1]! },
        { cliente_id: b.clienteId, celular_id: b.lines[0]! },
      ];
      for (const scope of scopes) {
        for (const grano of [1, 15]) {
          const desde = Math.floor((T0 - 60 * MIN) / (grano * MIN));
          const hasta = Math.floor((T0 + 120 * MIN) / (grano * MIN));
          const got = sort(await ctx.store.chartCounts(scope, grano, desde, hasta));
          expect(got, `${JSON.stringify(scope)} grano ${grano}`).toEqual(await expected(ids, scope, grano, desde, hasta));
          expect(got.length).toBeGreaterThan(0);
        }
      }
      // A range is a range: the last 10 minutes of the sends only.
      const from = Math.floor((T0 + 30 * MIN) / MIN);
      expect(sort(await ctx.store.chartCounts({}, 1, from, from + 10))).toEqual(await expected(ids, {}, 1, from, from + 10));
    });

    it("adds the nodes' samples of a bucket: attempts summed, the queue's largest reading kept, one node's repeats added", async () => {
      const lat = (i: number) => Array.from({ length: 10 }, (_, k) => (k === i ? 1 : 0));
      const t = Math.floor(T0 / MIN);
      await ctx.store.writeSamples([
        { grano: 1, t, nodo: 'a', cola: 5, antiguo_s: 30, ok: 2, fallidas: 1, lat: lat(0) },
        { grano: 60, t: Math.floor(t / 60), nodo: 'a', cola: 5, antiguo_s: 30, ok: 2, fallidas: 1, lat: lat(0) },
      ]);
      await ctx.store.writeSamples([{ grano: 1, t, nodo: 'b', cola: 7, antiguo_s: 10, ok: 3, fallidas: 0, lat: lat(9) }]);
      await ctx.store.writeSamples([{ grano: 1, t, nodo: 'a', cola: 1, antiguo_s: 40, ok: 1, fallidas: 0, lat: lat(0) }]);
      await ctx.store.writeSamples([{ grano: 1, t: t + 1, nodo: 'a', cola: 0, antiguo_s: 0, ok: 0, fallidas: 0, lat: lat(-1) }]);
      // One call with two rows of one bucket and node: added as two calls would (PostgreSQL writes a call in one statement).
      await ctx.store.writeSamples([
        { grano: 1, t: t + 2, nodo: 'a', cola: 3, antiguo_s: 5, ok: 1, fallidas: 1, lat: lat(2) },
        { grano: 1, t: t + 2, nodo: 'a', cola: 2, antiguo_s: 9, ok: 4, fallidas: 0, lat: lat(2) },
      ]);
      const got = await ctx.store.chartSamples(1, t - 5, t + 5);
      expect(got).toEqual([
        { t, cola: 7, antiguo_s: 40, ok: 6, fallidas: 1, lat: [2, 0, 0, 0, 0, 0, 0, 0, 0, 1] },
        { t: t + 1, cola: 0, antiguo_s: 0, ok: 0, fallidas: 0, lat: new Array(10).fill(0) },
        { t: t + 2, cola: 3, antiguo_s: 9, ok: 5, fallidas: 1, lat: [0, 0, 2, 0, 0, 0, 0, 0, 0, 0] },
      ]);
      expect(await ctx.store.chartSamples(60, Math.floor(t / 60), Math.floor(t / 60) + 1)).toEqual([
        { t: Math.floor(t / 60), cola: 5, antiguo_s: 30, ok: 2, fallidas: 1, lat: lat(0) },
      ]);
      expect(await ctx.store.chartSamples(1, t + 3, t + 10)).toEqual([]);
    });

    it('prunes minute rows past two days and the rest past their keeping, leaving newer rows', async () => {
      const c = await client(['525500000009']);
      const old = await accept(c.clienteId, c.lines[0]!, T0 - 3 * 86_400_000);
      const recent = await accept(c.clienteId, c.lines[0]!, T0);
      const t = Math.floor(T0 / MIN);
      await ctx.store.writeSamples([
        { grano: 1, t: t - 3 * 1440, nodo: 'a', cola: 1, antiguo_s: 1, ok: 0, fallidas: 0, lat: new Array(10).fill(0) },
        { grano: 1, t, nodo: 'a', cola: 1, antiguo_s: 1, ok: 0, fallidas: 0, lat: new Array(10).fill(0) },
      ]);
      const gone = await ctx.store.pruneCharts(T0 - 2 * 86_400_000, T0 - 8 * 86_400_000);
      expect(gone).toBe(2);
      const scope = { cliente_id: c.clienteId, celular_id: c.lines[0]! };
      expect(await ctx.store.chartCounts(scope, 1, 0, t + 10)).toEqual([{ t, estado: 'pendiente', n: 1 }]);
      // The quarter rows are kept eight days: the old message still counts there.
      expect((await ctx.store.chartCounts(scope, 15, 0, t)).map((r) => r.n)).toEqual([1, 1]);
      expect((await ctx.store.chartSamples(1, 0, t + 10)).map((r) => r.t)).toEqual([t]);
      // A change of state of a message whose minute row is gone leaves no negative count behind.
      expect(await ctx.store.failMensaje(old, 'x', 'rechazado', T0)).toMatchObject({ estado: 'error' });
      expect((await ctx.store.chartCounts(scope, 1, 0, t + 10)).every((r) => r.n > 0)).toBe(true);
      expect(recent).toBeTruthy();
    });

    it('prunes in bounded batches: at most `limit` rows of each kind a call, fewer once nothing is left', async () => {
      const c = await client(['525500000010']);
      for (let i = 0; i < 3; i++) await accept(c.clienteId, c.lines[0]!, T0 - 3 * 86_400_000 - i * MIN);
      const t = Math.floor(T0 / MIN);
      await ctx.store.writeSamples(
        [3, 4, 5].map((d) => ({ grano: 1, t: t - d * 1440, nodo: 'a', cola: 1, antiguo_s: 1, ok: 0, fallidas: 0, lat: new Array(10).fill(0) })),
      );
      const args = [T0 - 2 * 86_400_000, T0 - 8 * 86_400_000] as const;
      // Three old minute rows of counts and three of samples: two of each a call, then what is left, then none.
      expect(await ctx.store.pruneCharts(...args, 2)).toBe(4);
      expect(await ctx.store.pruneCharts(...args, 2)).toBe(2);
      expect(await ctx.store.pruneCharts(...args, 2)).toBe(0);
      const scope = { cliente_id: c.clienteId, celular_id: c.lines[0]! };
      expect(await ctx.store.chartCounts(scope, 1, 0, t + 10)).toEqual([]);
    });
  });
}
