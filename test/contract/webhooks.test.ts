import { describe, expect, it } from 'vitest';
import { ADAPTERS, celular, messages, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/** The journal written with each change, moved to the outbox. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: WebhooksStore contract`, () => {
    const ctx = storeEachTest(adapter);
    const newCliente = (max: number | null = null) => newClienteOf(ctx.store, max);

    it('journals each change with it for a client with an active webhook only, and moves journaled events to the outbox in one step', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      const m = messages(c.id, cel.celular.id)();
      const seen: Array<[string, unknown]> = [];
      const route = (ev: { evento: string; data: Record<string, unknown> }, cfg: unknown) => {
        seen.push([ev.evento, (ev.data as { estado?: string; status?: string }).estado ?? (ev.data as { status?: string }).status]);
        return cfg ? { id: `evt_${seen.length}`, body: JSON.stringify(ev) } : null;
      };
      const connected = (fecha: number) => ({ evento: 'session.status' as const, cliente_id: c.id, celular_id: cel.celular.id, data: { status: 'connected' }, fecha });
      // No webhook, or an inactive one: nobody to tell, nothing journaled.
      await ctx.store.acceptMensaje(m, { charge: true, maxPending: null }, 2);
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: false }, 3);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 3, connected(3));
      expect(await ctx.store.moveEventsToOutbox(10, route, 4)).toBe(0);
      expect(seen).toEqual([]);
      // Active: each change journals its event with it, and the move turns them into deliveries.
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 5);
      await ctx.store.markSent(m.msg_id, 'G1', 6);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 7, connected(7));
      await ctx.store.failMensaje(m.msg_id, 'x', 8);
      expect(await ctx.store.moveEventsToOutbox(10, route, 9)).toBe(3);
      expect(seen).toEqual([['message.status', 'enviado'], ['session.status', 'connected'], ['message.status', 'error']]);
      expect(await ctx.store.moveEventsToOutbox(10, route, 10)).toBe(0);
      expect((await ctx.store.dueEntregas(c.id, 10, 10)).map((e) => e.evento)).toEqual(['message.status', 'session.status', 'message.status']);
      // Due from the move (9): not before, and nothing else pending after it.
      expect(await ctx.store.dueEntregas(c.id, 8, 10)).toEqual([]);
      expect(await ctx.store.nextEntregaAt(c.id, 8)).toBe(9);
      expect(await ctx.store.entregaQueues()).toEqual([{ cliente_id: c.id, next_at: 9 }]);
    });

  });
}
