import { describe, expect, it } from 'vitest';
import { movementTipo } from '../../src/core/billing/movimientos.js';
import type { MovimientoFilter, MovimientoRow } from '../../src/core/ports/accounts.js';
import { ADAPTERS, celular, messages, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/** The ledger's listing (filters, paging to the end, the bounded total) and a month's consumption per line, on every dialect. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: LedgerStore contract`, () => {
    const ctx = storeEachTest(adapter);

    /** A client with two lines: credit by hand, sends charged to the line then the global balance, one failed and refunded. */
    async function seed() {
      const c = await newClienteOf(ctx.store);
      const l1 = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      const l2 = await ctx.store.insertCelular(celular(c.id, '525512345679'), 1000);
      if (!l1.ok || !l2.ok) throw new Error('insert');
      const [a, b] = [l1.celular.id, l2.celular.id];
      const opts = { charge: true, maxPending: null };
      expect((await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'recarga', actor: 'operator' }, 100)).ok).toBe(true);
      expect((await ctx.store.changeBalance({ cliente_id: c.id, celular_id: a, monto: 3, motivo: 'r', actor: `cliente:${c.id}` }, 200)).ok).toBe(true);
      const ma = messages(c.id, a);
      const sentA = [];
      for (let i = 0; i < 4; i++) {
        const m = ma();
        expect(await ctx.store.acceptMensaje(m, opts, 300 + i)).toMatchObject({ ok: true });
        sentA.push(m.msg_id);
      }
      const mb = { ...messages(c.id, b)(), msg_id: '00000000-0000-4000-8000-00000000b001' };
      expect(await ctx.store.acceptMensaje(mb, opts, 350)).toMatchObject({ ok: true, cargo: 'global' });
      expect(await ctx.store.failMensaje(sentA[1]!, 'x', 'no_enviado', 400)).toMatchObject({ estado: 'error' });
      // Another client's movements never show.
      const other = await newClienteOf(ctx.store);
      await ctx.store.changeBalance({ cliente_id: other.id, celular_id: null, monto: 9, motivo: 'recarga', actor: 'operator' }, 150);
      return { c, a, b, sentA, mb: mb.msg_id };
    }

    const page = (f: Partial<MovimientoFilter> & { cliente_id: number }) => ctx.store.listMovimientos({ page: 1, por_pagina: 50, totalHasta: 1000, ...f });

    it('lists newest first with every filter; the sum of the ledger is the balances', async () => {
      const { c, a, b, sentA, mb } = await seed();
      const all = await page({ cliente_id: c.id });
      // 2 manual, 5 charges (3 to line a, 1 global from a, 1 global from b), 1 refund.
      expect(all.total).toBe(8);
      expect(all.rows.map((r) => r.fecha)).toEqual([400, 350, 303, 302, 301, 300, 200, 100]);
      expect(all.rows.map(movementTipo)).toEqual(['reembolso', 'cobro', 'cobro', 'cobro', 'cobro', 'cobro', 'manual', 'manual']);
      expect(all.rows[0]).toMatchObject({ cliente_id: c.id, celular_id: a, monto: 1, motivo: `reembolso ${sentA[1]}`, actor: 'sistema' });
      expect(all.rows[1]).toMatchObject({ celular_id: null, monto: -1, motivo: `envio ${mb}` });
      // Ledger = balance: every movement summed is what the balances hold now.
      const cli = (await ctx.store.getCliente(c.id))!;
      const lines = [(await ctx.store.getCelular(a))!, (await ctx.store.getCelular(b))!];
      const sum = all.rows.reduce((n, r) => n + r.monto, 0);
      expect(sum).toBe(cli.saldo_global + lines[0]!.saldo_actual + lines[1]!.saldo_actual);
      for (const r of all.rows) expect(Number.isSafeInteger(r.id) && Number.isSafeInteger(r.fecha)).toBe(true);

      const kinds = async (f: Partial<MovimientoFilter>) => (await page({ cliente_id: c.id, ...f })).rows.map((r) => r.fecha);
      expect(await kinds({ tipo: 'manual' })).toEqual([200, 100]);
      expect(await kinds({ tipo: 'reembolso' })).toEqual([400]);
      expect(await kinds({ tipo: 'cobro' })).toEqual([350, 303, 302, 301, 300]);
      expect(await kinds({ celular_id: a })).toEqual([400, 302, 301, 300, 200]);
      expect(await kinds({ celular_id: a, tipo: 'manual' })).toEqual([200]);
      expect(await kinds({ celular_id: a, tipo: 'reembolso' })).toEqual([400]);
      expect(await kinds({ celular_id: b })).toEqual([]);
      expect(await kinds({ desde: 200, hasta: 350 })).toEqual([303, 302, 301, 300, 200]);
      expect(await kinds({ desde: 301, hasta: 302, celular_id: a })).toEqual([301]);
      expect((await page({ cliente_id: c.id, tipo: 'cobro', celular_id: a })).total).toBe(3);
    });

    it('pages to the end by number and by keyset; the total stops at its bound', async () => {
      const { c } = await seed();
      const seen: MovimientoRow[] = [];
      for (let p = 1; ; p++) {
        const r = await page({ cliente_id: c.id, page: p, por_pagina: 3 });
        expect(r.total).toBe(8);
        if (r.rows.length === 0) break;
        seen.push(...r.rows);
      }
      expect(seen.map((r) => r.fecha)).toEqual([400, 350, 303, 302, 301, 300, 200, 100]);
      const keyset: MovimientoRow[] = [];
      let despues: MovimientoFilter['despues'];
      for (;;) {
        const r = await ctx.store.listMovimientos({ cliente_id: c.id, page: 1, por_pagina: 3, ...(despues ? { despues } : {}) });
        expect(r.total).toBe(-1);
        keyset.push(...r.rows);
        if (r.rows.length < 3) break;
        despues = { fecha: r.rows[2]!.fecha, id: r.rows[2]!.id };
      }
      expect(keyset.map((r) => r.id)).toEqual(seen.map((r) => r.id));
      expect((await page({ cliente_id: c.id, totalHasta: 8 })).total).toBe(8);
      expect((await page({ cliente_id: c.id, totalHasta: 7 })).total).toBeNull();
      expect((await page({ cliente_id: c.id, totalHasta: 7, por_pagina: 2 })).rows).toHaveLength(2);
    });

    it("counts a month's messages and credits per line: failed ones left out, refunds given back, lines with none at zero", async () => {
      const { c, a, b } = await seed();
      expect(await ctx.store.consumoLineas(c.id, 0, 1000)).toEqual([
        { celular_id: a, numero: '525512345678', mensajes: 3, monto: 3 },
        { celular_id: b, numero: '525512345679', mensajes: 1, monto: 1 },
      ]);
      // The window is [desde, hasta): the sends at 300 and 301 only (301 failed and refunded).
      expect(await ctx.store.consumoLineas(c.id, 300, 302)).toEqual([
        { celular_id: a, numero: '525512345678', mensajes: 1, monto: 1 },
        { celular_id: b, numero: '525512345679', mensajes: 0, monto: 0 },
      ]);
      expect(await ctx.store.consumoLineas(c.id + 100, 0, 1000)).toEqual([]);
      // Uncharged sends (an unlimited plan) are messages that cost nothing.
      await ctx.store.acceptMensaje({ ...messages(c.id, b)(), msg_id: '00000000-0000-4000-8000-00000000b002' }, { charge: false, maxPending: null }, 500);
      expect((await ctx.store.consumoLineas(c.id, 0, 1000))[1]).toEqual({ celular_id: b, numero: '525512345679', mensajes: 2, monto: 1 });
    });
  });
}
