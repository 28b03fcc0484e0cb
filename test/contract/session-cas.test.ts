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
  });
}
