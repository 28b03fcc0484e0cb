import { describe, expect, it } from 'vitest';
import { ADAPTERS, celular, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/** Clients, lines, balances and their ledger, the audit trail; and a restart keeps them. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: AccountsStore contract`, () => {
    const ctx = storeEachTest(adapter);
    const newCliente = (max: number | null = null) => newClienteOf(ctx.store, max);

    it('creates celulares under the cap and refuses a taken number', async () => {
      const c = await newCliente(1);
      const a = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      expect(a.ok).toBe(true);
      expect(await ctx.store.insertCelular(celular(c.id, '525512345679'), 1000)).toEqual({ ok: false, reason: 'cap' });
      const other = await newCliente();
      expect(await ctx.store.insertCelular(celular(other.id, '525512345678'), 1000)).toEqual({ ok: false, reason: 'taken' });
      expect(await ctx.store.insertCelular(celular(9999, '525512345670'), 1000)).toEqual({ ok: false, reason: 'cliente' });
    });

    it('never lets a balance go negative and records every change', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      expect(await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 10, motivo: 'r', actor: 'op' }, 1)).toMatchObject({
        ok: true,
        saldo_global: 10,
      });
      expect(await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: -11, motivo: 'r', actor: 'op' }, 1)).toEqual({
        ok: false,
        reason: 'negativo',
      });
      expect(await ctx.store.changeBalance({ cliente_id: c.id, celular_id: cel.celular.id, monto: 3, motivo: 'r', actor: 'op' }, 1)).toMatchObject({
        ok: true,
        saldo_global: 10,
        saldo_celular: 3,
      });
      expect(await ctx.store.changeBalance({ cliente_id: c.id + 1, celular_id: cel.celular.id, monto: 3, motivo: 'r', actor: 'op' }, 1)).toEqual({
        ok: false,
        reason: 'cliente',
      });
      expect((await ctx.store.getCelular(cel.celular.id))?.saldo_actual).toBe(3);
    });

    it('deletes with an audit record that outlives the row', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      const audit = {
        actor: 'cliente:1',
        accion: 'celular.eliminar',
        objeto_tipo: 'celular',
        objeto_id: cel.celular.id,
        cliente_id: c.id,
        detalle: { numero: '525512345678' },
      };
      expect(await ctx.store.deleteCelular(cel.celular.id, audit, 2000)).toBe(true);
      expect(await ctx.store.deleteCelular(cel.celular.id, audit, 2000)).toBe(false);
      expect(await ctx.store.getCelular(cel.celular.id)).toBeNull();
      const rows = await ctx.store.listAudit({ cliente_id: c.id, limit: 10 });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ accion: 'celular.eliminar', fecha: 2000, detalle: { numero: '525512345678' } });
    });

    it('pages the audit trail newest first by id, for everyone or one client', async () => {
      const a = await newCliente();
      const b = await newCliente();
      for (const [i, c] of [a, b, a, a, b].entries()) {
        await ctx.store.audit({ actor: 'operator', accion: `x.${i}`, objeto_tipo: 'cliente', objeto_id: c.id, cliente_id: c.id, detalle: {} }, 2000 + i);
      }
      const first = await ctx.store.listAudit({ limit: 2 });
      expect(first.map((r) => r.accion)).toEqual(['x.4', 'x.3']);
      expect((await ctx.store.listAudit({ limit: 2, before_id: first[1]!.id })).map((r) => r.accion)).toEqual(['x.2', 'x.1']);
      const ofA = await ctx.store.listAudit({ cliente_id: a.id, limit: 2 });
      expect(ofA.map((r) => r.accion)).toEqual(['x.3', 'x.2']);
      expect((await ctx.store.listAudit({ cliente_id: a.id, limit: 2, before_id: ofA[1]!.id })).map((r) => r.accion)).toEqual(['x.0']);
    });

    it('finds a line by gateway or legacy token hash and by instance', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await ctx.store.updateCelular(cel.celular.id, { legacy_token_hash: 'L'.repeat(64), gateway_instancia: 'pasarela-1' }, 1001);
      expect((await ctx.store.getCelularByTokenHash('525512345678'.padEnd(64, 'g')))?.id).toBe(cel.celular.id);
      expect((await ctx.store.getCelularByTokenHash('L'.repeat(64)))?.id).toBe(cel.celular.id);
      expect(await ctx.store.getCelularByTokenHash('x'.repeat(64))).toBeNull();
      expect((await ctx.store.getCelularByInstancia('pasarela-1'))?.id).toBe(cel.celular.id);
    });

    it('counts lines by estado and last known session status (metrics)', async () => {
      expect(await ctx.store.lineCounts()).toEqual([]);
      const c = await newCliente();
      const ids: number[] = [];
      for (const n of ['525512345671', '525512345672', '525512345673']) {
        const r = await ctx.store.insertCelular(celular(c.id, n), 1000);
        if (!r.ok) throw new Error('insert');
        ids.push(r.celular.id);
      }
      await ctx.store.updateCelular(ids[0]!, { estado: 'activo', last_status: 'connected' }, 1001);
      await ctx.store.updateCelular(ids[1]!, { estado: 'activo', last_status: 'connected' }, 1001);
      const order = (x: { estado: string; last_status: string | null }) => `${x.estado}/${x.last_status}`;
      expect((await ctx.store.lineCounts()).sort((x, y) => order(x).localeCompare(order(y)))).toEqual([
        { estado: 'activo', last_status: 'connected', n: 2 },
        { estado: 'desconectado', last_status: null, n: 1 },
      ]);
    });

    it('keeps data and applies no migration twice on reopen', async () => {
      const c = await newCliente();
      await ctx.store.kvSet('ns', 'k', { a: 1 });
      await ctx.reopen();
      expect((await ctx.store.getCliente(c.id))?.nombre).toBe('A');
      expect(await ctx.store.kvGet('ns', 'k')).toEqual({ a: 1 });
      expect(await ctx.store.kvList('ns')).toEqual([{ key: 'k', value: { a: 1 } }]);
    });
  });
}
