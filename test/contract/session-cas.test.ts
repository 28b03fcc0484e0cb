import { describe, expect, it } from 'vitest';
import { ADAPTERS, celular, storeEachTest } from './adapters.js';

/**
 * The compare-and-set session statuses are applied through
 * (core/accounts/celulares.ts applySessionStatus): the write, and its journaled event,
 * happen only while the line still holds what was read.
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: updateCelularIf`, () => {
    const ctx = storeEachTest(adapter);

    it('writes and journals only while the row holds what was read; a stale expectation writes nothing', async () => {
      const c = await ctx.store.createCliente(
        { nombre: 'S', email: 's@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' },
        1,
      );
      const ins = await ctx.store.insertCelular(celular(c.id, '525512345670'), 1);
      if (!ins.ok) throw new Error('insert');
      const read = ins.celular;
      const event = (n: number) => ({ evento: 'session.status', cliente_id: c.id, celular_id: read.id, data: { n }, fecha: n });

      // Another writer records `connected` first.
      const first = await ctx.store.updateCelularIf(read.id, read, { last_status: 'connected', last_status_check: 20, estado: 'activo' }, 20, event(20));
      expect(first).toMatchObject({ last_status: 'connected', last_status_check: 20, estado: 'activo' });
      // The one that read before it loses, and its event is not journaled.
      expect(
        await ctx.store.updateCelularIf(read.id, read, { last_status: 'connecting', last_status_check: 10, estado: 'desconectado' }, 21, event(21)),
      ).toBeNull();
      expect(await ctx.store.getCelular(read.id)).toMatchObject({ last_status: 'connected', last_status_check: 20, estado: 'activo' });
      await ctx.settled();
      expect((await ctx.store.eventsAfter(c.id, null, 100)).map((ev) => ev.fecha)).toEqual([20]);
      // Expecting what is there now, it writes.
      expect(await ctx.store.updateCelularIf(read.id, first!, { last_status: 'disconnected', last_status_check: 40 }, 40)).toMatchObject({
        last_status: 'disconnected',
      });
      expect(await ctx.store.updateCelularIf(read.id + 1000, first!, { last_status: 'connected' }, 41)).toBeNull();
    });

    it('recordStatusChecks writes when each line was checked, one call for many, only where the row holds the check and no newer one; answers the others', async () => {
      const c = await ctx.store.createCliente(
        { nombre: 'S', email: 's@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' },
        1,
      );
      const ids: number[] = [];
      for (const n of [1, 2, 3, 4]) {
        const ins = await ctx.store.insertCelular(celular(c.id, `52551234568${n}`), 1);
        if (!ins.ok) throw new Error('insert');
        const row = await ctx.store.updateCelularIf(
          ins.celular.id,
          ins.celular,
          { last_status: 'connected', last_status_check: 10, estado: 'activo', vinculado: 1 },
          10,
        );
        ids.push(row!.id);
      }
      const [a, b, d, e] = ids as [number, number, number, number];
      // d was checked later than this pass saw it; e changed status meanwhile.
      await ctx.store.updateCelularIf(d, (await ctx.store.getCelular(d))!, { last_status_check: 90 }, 90);
      await ctx.store.updateCelularIf(e, (await ctx.store.getCelular(e))!, { last_status: 'disconnected', last_status_check: 20, estado: 'desconectado' }, 20);
      const check = (id: number) => ({ id, status: 'connected' as const, estado: 'activo' as const, vinculado: 1, at: 50 });
      const missed = await ctx.store.recordStatusChecks([a, b, d, e].map(check), 60);
      expect([...missed].sort((x, y) => x - y)).toEqual([d, e]);
      expect(await ctx.store.getCelular(a)).toMatchObject({ last_status: 'connected', last_status_check: 50, estado: 'activo', vinculado: 1, updated_at: 60 });
      expect(await ctx.store.getCelular(d)).toMatchObject({ last_status_check: 90 });
      expect(await ctx.store.getCelular(e)).toMatchObject({ last_status: 'disconnected', last_status_check: 20, estado: 'desconectado' });
      expect(await ctx.store.recordStatusChecks([], 70)).toEqual([]);
      await ctx.settled();
      expect(await ctx.store.eventsAfter(c.id, null, 100)).toEqual([]);
    });
  });
}
