import { describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * The expiry sweep of a send's validity (QueueStore.expireDue, docs/validity.md) on every store: only pending queued
 * messages whose validity passed, never one under a live claim, each ended once with its refund (even by two nodes
 * at once), and `next` the sweep's next work; the queue's look reports the same work (`expiry`).
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: QueueStore expiry sweep contract`, () => {
    const ctx = storeEachTest(adapter);

    async function line() {
      const c = await newCliente(ctx.store);
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 100, motivo: 'r', actor: 'op' }, 1);
      return { c, cel: cel.celular, msg: messages(c.id, cel.celular.id) };
    }

    it('ends the expired ones (not a claimed one, not one with time left), refunded, once', async () => {
      const { c, cel, msg } = await line();
      const opts = { charge: true, maxPending: null };
      const [head, code, later, none] = [msg(), msg(), msg(), msg()];
      expect(await ctx.store.acceptMensaje({ ...head, vigencia_hasta: 100 }, opts, 2)).toMatchObject({ ok: true, mensaje: { vigencia_hasta: 100 } });
      expect(await ctx.store.acceptMensaje({ ...code, vigencia_hasta: 100 }, opts, 2)).toMatchObject({ ok: true });
      expect(await ctx.store.acceptMensaje({ ...later, vigencia_hasta: 500 }, opts, 2)).toMatchObject({ ok: true });
      expect(await ctx.store.acceptMensaje(none, opts, 2)).toMatchObject({ ok: true, mensaje: { vigencia_hasta: null } });
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(96);
      // Nothing due yet: the next is the first validity end. The queue's look says as much, in its own read (D-191).
      expect((await ctx.store.queueLook(99)).expiry).toEqual({ expired: false, next: 100 });
      expect(await ctx.store.expireDue(99, 'expired', 10)).toEqual({ ended: [], next: 100 });
      // The head is being sent (claimed, lease until 160): left to its sender; the next sweep is due at its lease's end.
      expect(await ctx.store.claimQueued(head.msg_id, slotClaim(cel, 50, 110), 50)).toEqual({ ok: true });
      expect((await ctx.store.queueLook(100)).expiry).toEqual({ expired: true, next: 160 });
      const first = await ctx.store.expireDue(100, 'expired', 10);
      expect(first.ended.map((m) => m.msg_id)).toEqual([code.msg_id]);
      expect(first.ended[0]).toMatchObject({ estado: 'error', error_clase: 'caducado', error: 'expired', cobrado: 0, vigencia_hasta: 100 });
      expect(first.next).toBe(160);
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(97);
      // Again: nothing twice.
      expect((await ctx.store.queueLook(101)).expiry).toEqual({ expired: false, next: 160 });
      expect((await ctx.store.expireDue(101, 'expired', 10)).ended).toEqual([]);
      // The head's claim ended without a send (a retry): the sweep ends it then; a claim after it finds nothing.
      await ctx.store.retryLater(head.msg_id, 200, 'transient');
      expect((await ctx.store.queueLook(150)).expiry).toEqual({ expired: true, next: 500 });
      const second = await ctx.store.expireDue(150, 'expired', 10);
      expect(second.ended.map((m) => m.msg_id)).toEqual([head.msg_id]);
      expect(second.next).toBe(500);
      expect(await ctx.store.claimQueued(head.msg_id, slotClaim(cel, 300, 60_000), 300)).toEqual({ ok: false, reason: 'taken' });
      expect((await ctx.store.getMensaje(later.msg_id))!.estado).toBe('pendiente');
      expect((await ctx.store.getMensaje(none.msg_id))!.estado).toBe('pendiente');
      // A message sent within its validity leaves the sweep's index with its place.
      expect(await ctx.store.claimQueued(later.msg_id, slotClaim(cel, 300, 60_000), 300)).toEqual({ ok: true });
      expect(await ctx.store.markSent(later.msg_id, 'G-1', 301)).toMatchObject({ estado: 'enviado' });
      expect(await ctx.store.expireDue(1_000, 'expired', 10)).toEqual({ ended: [], next: null });
      expect((await ctx.store.queueLook(1_000)).expiry).toEqual({ expired: false, next: null });
      expect((await ctx.store.getMensaje(later.msg_id))!.estado).toBe('enviado');
      expect(await ctx.store.queueSizes([cel.id])).toEqual([{ celular_id: cel.id, pendientes: 1 }]);
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(98);
    });

    it('two sweeps at once (two nodes) end each message once, in batches', async () => {
      const { c, msg } = await line();
      const other = await ctx.node();
      const opts = { charge: true, maxPending: null };
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const m = { ...msg(), vigencia_hasta: 50 + i };
        ids.push(m.msg_id);
        expect(await ctx.store.acceptMensaje(m, opts, 2)).toMatchObject({ ok: true });
      }
      const runs = await Promise.all([ctx.store, other, ctx.store, other].map((st) => st.expireDue(100, 'expired', 7)));
      let rest = runs.flatMap((r) => r.ended.map((m) => m.msg_id));
      for (let i = 0; i < 10; i++) rest = [...rest, ...(await other.expireDue(100, 'expired', 7)).ended.map((m) => m.msg_id)];
      expect(rest.sort()).toEqual([...ids].sort());
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(100);
    });
  });
}
