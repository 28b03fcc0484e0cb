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

/** A client's webhook configuration with its undo stack, and the outbox's deliveries and attempts. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: WebhooksStore contract, configuration and deliveries`, () => {
    const ctx = storeEachTest(adapter);
    const cfg = (clienteId: number, url: string) => ({ cliente_id: clienteId, url, secret: 's3', eventos: ['message.status'], activo: true });

    it('set replaces and can be undone; delete leaves nothing active and can be undone too; restore with nothing left says so', async () => {
      const c = await newClienteOf(ctx.store);
      expect(await ctx.store.getWebhook(c.id)).toBeNull();
      expect(await ctx.store.restoreWebhook(c.id, 5)).toBe('nada');
      expect(await ctx.store.setWebhook(cfg(c.id, 'https://a.example/h'), 10)).toMatchObject({ url: 'https://a.example/h', activo: true, updated_at: 10 });
      await ctx.store.setWebhook(cfg(c.id, 'https://b.example/h'), 20);
      expect(await ctx.store.deleteWebhook(c.id, 30)).toBe(true);
      expect(await ctx.store.deleteWebhook(c.id, 31)).toBe(false);
      expect((await ctx.store.getWebhook(c.id))?.activo ?? false).toBe(false);
      expect(await ctx.store.restoreWebhook(c.id, 40)).toMatchObject({ url: 'https://b.example/h', activo: true });
      expect(await ctx.store.restoreWebhook(c.id, 50)).toMatchObject({ url: 'https://a.example/h' });
      expect(await ctx.store.restoreWebhook(c.id, 60)).toBeNull();
      expect(await ctx.store.restoreWebhook(c.id, 70)).toBe('nada');
      await ctx.store.setWebhook(cfg(c.id, 'https://c.example/h'), 80);
      await ctx.store.deactivateWebhook(c.id, 90);
      expect(await ctx.store.getWebhook(c.id)).toMatchObject({ url: 'https://c.example/h', activo: false, updated_at: 90 });
    });

    it('deliveries fall due in order, record each attempt, end delivered or failed, and can be sent again under the same id', async () => {
      const c = await newClienteOf(ctx.store);
      const other = await newClienteOf(ctx.store);
      await ctx.store.enqueueEntrega({ id: 'e1', cliente_id: c.id, evento: 'message.status', body: '{"n":1}' }, 100);
      await ctx.store.enqueueEntrega({ id: 'e2', cliente_id: c.id, evento: 'message.status', body: '{"n":2}' }, 101);
      await ctx.store.enqueueEntrega({ id: 'o1', cliente_id: other.id, evento: 'message.status', body: '{}' }, 150);
      expect((await ctx.store.entregaQueues()).sort((a, b) => a.cliente_id - b.cliente_id)).toEqual([
        { cliente_id: c.id, next_at: 100 },
        { cliente_id: other.id, next_at: 150 },
      ]);
      expect((await ctx.store.dueEntregas(c.id, 100, 10)).map((e) => e.id)).toEqual(['e1']);
      expect((await ctx.store.dueEntregas(c.id, 200, 10)).map((e) => e.id)).toEqual(['e1', 'e2']);

      await ctx.store.recordAttempt('e1', { status: 500, duracion_ms: 12, error: 'HTTP 500' }, { estado: 'pendiente', proximo_intento_at: 5000 }, 200);
      expect((await ctx.store.dueEntregas(c.id, 200, 10)).map((e) => e.id)).toEqual(['e2']);
      expect(await ctx.store.nextEntregaAt(c.id, 200)).toBe(5000);
      await ctx.store.recordAttempt('e2', { status: 200, duracion_ms: 8, error: null }, { estado: 'entregado' }, 210);
      await ctx.store.recordAttempt('e1', { status: 410, duracion_ms: 9, error: 'HTTP 410' }, { estado: 'fallido' }, 5000);
      expect(await ctx.store.dueEntregas(c.id, 10_000, 10)).toEqual([]);

      const list = await ctx.store.listEntregas(c.id, 10);
      const e1 = list.find((e) => e.id === 'e1')!;
      expect(e1).toMatchObject({ estado: 'fallido', intentos: 2, ultimo_error: 'HTTP 410' });
      expect(e1.intentos_detalle.map((i) => [i.n, i.status])).toEqual([
        [1, 500],
        [2, 410],
      ]);
      expect(list.find((e) => e.id === 'e2')).toMatchObject({ estado: 'entregado', entregado_at: 210, intentos: 1 });

      expect(await ctx.store.redeliver(other.id, 'e1', 6000)).toBe(false);
      expect(await ctx.store.redeliver(c.id, 'e1', 6000)).toBe(true);
      expect((await ctx.store.dueEntregas(c.id, 6000, 10)).map((e) => [e.id, e.estado])).toEqual([['e1', 'pendiente']]);
    });
  });
}
