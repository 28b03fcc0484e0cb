import { describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/** The queue's cancel, listing and slot reads (D-95) on every store: a cancel and a claim of one message never both win. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: QueueStore cancel and listing contract`, () => {
    const ctx = storeEachTest(adapter);

    async function line() {
      const c = await newCliente(ctx.store);
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 10, motivo: 'r', actor: 'op' }, 1);
      return { c, cel: cel.celular, msg: messages(c.id, cel.celular.id) };
    }

    it('cancels an unclaimed queued message with its refund; a claimed one is enviando, a cancelled one is never claimed', async () => {
      const { c, cel, msg } = await line();
      const opts = { charge: true, maxPending: null };
      const [a, b, d] = [msg(), msg(), msg('directo')];
      for (const m of [a, b, d]) expect(await ctx.store.acceptMensaje(m, opts, 2)).toMatchObject({ ok: true });
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(7);
      // Claimed: a cancel leaves it alone until the claim ends.
      expect(await ctx.store.claimQueued(a.msg_id, slotClaim(cel, 3, 60_000), 3)).toEqual({ ok: true });
      expect(await ctx.store.cancelQueued(a.msg_id, 'cancelled', 4)).toEqual({ ok: false, reason: 'enviando' });
      // Unclaimed: cancelled, refunded, out of the queue; a claim after it finds nothing.
      const r = await ctx.store.cancelQueued(b.msg_id, 'cancelled', 5);
      expect(r).toMatchObject({ ok: true, reembolso: 1, mensaje: { estado: 'error', error_clase: 'cancelado', cobrado: 0 } });
      expect(await ctx.store.claimQueued(b.msg_id, slotClaim(cel, 6, 60_000), 6)).toEqual({ ok: false, reason: 'taken' });
      expect(await ctx.store.cancelQueued(b.msg_id, 'cancelled', 7)).toEqual({ ok: false, reason: 'no_pendiente' });
      expect(await ctx.store.cancelQueued(d.msg_id, 'cancelled', 7)).toEqual({ ok: false, reason: 'directo' });
      expect(await ctx.store.cancelQueued('no-such', 'cancelled', 7)).toEqual({ ok: false, reason: 'no_pendiente' });
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(8);
      // The queue lists what is left, its counter agrees.
      expect((await ctx.store.listQueue([cel.id], 0, 10)).map((m) => m.msg_id)).toEqual([a.msg_id]);
      expect(await ctx.store.queueSizes([cel.id])).toEqual([{ celular_id: cel.id, pendientes: 1 }]);
    });

    it('lists a line in queue order a page after a place, and reads its slots and last send', async () => {
      const { cel, msg } = await line();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const m = msg();
        ids.push(m.msg_id);
        expect(await ctx.store.acceptMensaje(m, { charge: false, maxPending: null }, 10 + i)).toMatchObject({ ok: true });
      }
      const first = await ctx.store.listQueue([cel.id], 0, 2);
      expect(first.map((m) => m.msg_id)).toEqual(ids.slice(0, 2));
      expect((await ctx.store.listQueue([cel.id], first[1]!.seq, 10)).map((m) => m.msg_id)).toEqual(ids.slice(2));
      const claim = slotClaim(cel, 100, 60_000);
      expect(await ctx.store.claimQueued(ids[0]!, claim, 100)).toEqual({ ok: true });
      expect(await ctx.store.markSent(ids[0]!, 'G-1', 120)).toMatchObject({ estado: 'enviado' });
      const slots = await ctx.store.lineSlots(cel.id, claim.windows, 130);
      expect(slots.last).toBe(120);
      expect(slots.counts[0]).toEqual({ n: 1, oldest: 120 });
    });
  });
}
