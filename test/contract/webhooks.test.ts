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
        return cfg ? { id: `evt_${seen.length}`, body: JSON.stringify(ev), entrega: true, copias: [] } : null;
      };
      const connected = (fecha: number) => ({
        evento: 'session.status' as const,
        cliente_id: c.id,
        celular_id: cel.celular.id,
        data: { status: 'connected' },
        fecha,
      });
      // No webhook, or an inactive one: nobody to tell, nothing journaled.
      await ctx.store.acceptMensaje(m, { charge: true, maxPending: null }, 2);
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: false }, 3);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 3, connected(3));
      expect(await ctx.store.moveEventsToOutbox(10, route, 4)).toEqual({ taken: 0, copies: [] });
      expect(seen).toEqual([]);
      // Active: each change journals its event with it, and the move turns them into deliveries.
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 5);
      await ctx.store.markSent(m.msg_id, 'G1', 6);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 7, connected(7));
      await ctx.store.receipt(cel.celular.id, 'G1', 'error', 8, 'x');
      expect(await ctx.store.moveEventsToOutbox(10, route, 9)).toEqual({ taken: 3, copies: [] });
      expect(seen).toEqual([
        ['message.status', 'enviado'],
        ['session.status', 'connected'],
        ['message.status', 'error'],
      ]);
      expect(await ctx.store.moveEventsToOutbox(10, route, 10)).toEqual({ taken: 0, copies: [] });
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

      expect(await ctx.store.outboxDepth(120)).toEqual({ pending: 3, due: 2 });
      expect((await ctx.store.claimEntregas(c.id, 200, 1, { id: 'k1', until: 300 })).map((e) => e.id)).toEqual(['e1']);
      await ctx.store.recordAttempt('e1', 'k1', { status: 500, duracion_ms: 12, error: 'HTTP 500' }, { estado: 'pendiente', proximo_intento_at: 5000 }, 200);
      expect((await ctx.store.dueEntregas(c.id, 200, 10)).map((e) => e.id)).toEqual(['e2']);
      // Metrics: e1 waits for its retry; e2 and o1 are due.
      expect(await ctx.store.outboxDepth(200)).toEqual({ pending: 3, due: 2 });
      expect(await ctx.store.outboxDepth(5000)).toEqual({ pending: 3, due: 3 });
      expect(await ctx.store.nextEntregaAt(c.id, 200)).toBe(5000);
      expect((await ctx.store.claimEntregas(c.id, 205, 10, { id: 'k1', until: 300 })).map((e) => e.id)).toEqual(['e2']);
      await ctx.store.recordAttempt('e2', 'k1', { status: 200, duracion_ms: 8, error: null }, { estado: 'entregado' }, 210);
      expect((await ctx.store.claimEntregas(c.id, 5000, 10, { id: 'k2', until: 6000 })).map((e) => e.id)).toEqual(['e1']);
      await ctx.store.recordAttempt('e1', 'k2', { status: 410, duracion_ms: 9, error: 'HTTP 410' }, { estado: 'fallido' }, 5000);
      expect(await ctx.store.dueEntregas(c.id, 10_000, 10)).toEqual([]);
      expect(await ctx.store.outboxDepth(10_000)).toEqual({ pending: 1, due: 1 });

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

/** Claims: each due delivery is attempted once per due time, whoever claims it, on any number of store handles (nodes). */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: WebhooksStore contract, claims`, () => {
    const ctx = storeEachTest(adapter);
    const enqueue = async (clienteId: number, n: number, at: number, prefix = 'e') => {
      for (let i = 0; i < n; i++)
        await ctx.store.enqueueEntrega({ id: `${prefix}${i}`, cliente_id: clienteId, evento: 'message.status', body: `{"n":${i}}` }, at + i);
    };
    const ids = (rows: Array<{ id: string }>) => rows.map((e) => e.id);

    it('a claim takes due, unclaimed deliveries in order up to its limit; another claim skips them until they are recorded, given back or the claim runs out', async () => {
      const c = await newClienteOf(ctx.store);
      await enqueue(c.id, 4, 100);
      // Due by 102: e0..e2, oldest first, two at most.
      expect(ids(await ctx.store.claimEntregas(c.id, 102, 2, { id: 'a', until: 1000 }))).toEqual(['e0', 'e1']);
      expect(ids(await ctx.store.claimEntregas(c.id, 102, 5, { id: 'b', until: 1000 }))).toEqual(['e2']);
      expect(await ctx.store.claimEntregas(c.id, 102, 5, { id: 'c', until: 1000 })).toEqual([]);
      // A claim in force is when the delivery may next be taken; e3 falls due at 103.
      expect(await ctx.store.nextEntregaAt(c.id, 102)).toBe(103);
      expect(ids(await ctx.store.claimEntregas(c.id, 103, 5, { id: 'c', until: 1000 }))).toEqual(['e3']);
      expect(await ctx.store.nextEntregaAt(c.id, 103)).toBe(1000);
      // Only the holder records, and its record clears the claim: a retry is claimable at its time.
      expect(await ctx.store.recordAttempt('e0', 'b', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 110)).toBe(false);
      expect(
        await ctx.store.recordAttempt('e0', 'a', { status: 500, duracion_ms: 1, error: 'HTTP 500' }, { estado: 'pendiente', proximo_intento_at: 200 }, 110),
      ).toBe(true);
      expect(await ctx.store.recordAttempt('e0', 'a', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 111)).toBe(false);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 5, { id: 'd', until: 1000 }))).toEqual(['e0']);
      // Given back unattempted (only by its holder): due again at once, its attempts untouched.
      expect(await ctx.store.releaseEntregas(['e1', 'e2'], 'b')).toBe(1);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 5, { id: 'e', until: 1000 }))).toEqual(['e2']);
      // A claim that ran out (its holder died): anyone takes the delivery, and the old holder's record is refused.
      expect(ids(await ctx.store.claimEntregas(c.id, 1000, 5, { id: 'f', until: 2000 }))).toEqual(['e1', 'e2', 'e3', 'e0']);
      expect(await ctx.store.recordAttempt('e1', 'a', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 1001)).toBe(false);
      expect(await ctx.store.recordAttempt('e1', 'f', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 1001)).toBe(true);
      const list = await ctx.store.listEntregas(c.id, 10);
      expect(list.find((e) => e.id === 'e0')).toMatchObject({ estado: 'pendiente', intentos: 1 });
      expect(list.find((e) => e.id === 'e1')).toMatchObject({ estado: 'entregado', intentos: 1 });
      expect(list.find((e) => e.id === 'e1')!.intentos_detalle.map((i) => i.status)).toEqual([200]);
      // What readers see of a delivery has no claim in it.
      expect(Object.keys(list[0]!).sort()).toEqual(
        [
          'body',
          'cliente_id',
          'created_at',
          'entregado_at',
          'estado',
          'evento',
          'id',
          'intentos',
          'intentos_detalle',
          'proximo_intento_at',
          'ultimo_error',
        ].sort(),
      );
    });

    it('firstOnly claims deliveries never attempted and leaves due retries', async () => {
      const c = await newClienteOf(ctx.store);
      await enqueue(c.id, 3, 100);
      await ctx.store.claimEntregas(c.id, 100, 1, { id: 'a', until: 1000 });
      await ctx.store.recordAttempt('e0', 'a', { status: 500, duracion_ms: 1, error: 'HTTP 500' }, { estado: 'pendiente', proximo_intento_at: 101 }, 100);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 5, { id: 'b', until: 1000, firstOnly: true }))).toEqual(['e1', 'e2']);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 5, { id: 'c', until: 1000 }))).toEqual(['e0']);
    });

    it('claims racing on several handles of one store never take a delivery twice', async () => {
      const c = await newClienteOf(ctx.store);
      await enqueue(c.id, 120, 100);
      const handles = [ctx.store, await ctx.node(), await ctx.node()];
      const taken: string[] = [];
      // Twelve claimers, four per handle, each claiming five at a time until nothing is left.
      await Promise.all(
        Array.from({ length: 12 }, async (_, k) => {
          for (let round = 0; ; round++) {
            const got = await handles[k % 3]!.claimEntregas(c.id, 500, 5, { id: `k${k}.${round}`, until: 10_000 });
            if (got.length === 0) return;
            taken.push(...ids(got));
          }
        }),
      );
      expect(taken.length).toBe(120);
      expect(new Set(taken).size).toBe(120);
    });
  });
}

/** Listeners (`webhook listen`): leases with a per-client limit, and what the journal's move hands them. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: WebhooksStore contract, listeners`, () => {
    const ctx = storeEachTest(adapter);
    const escucha = (clienteId: number, id: string, expira_at: number, eventos = ['all']) => ({
      id,
      cliente_id: clienteId,
      url: `http://127.0.0.1:9/${id}`,
      secret: `secret-of-${id}`,
      eventos,
      created_at: 100,
      expira_at,
    });

    it('adds up to the limit of live ones (expired ones do not count and are removed), renews and removes only live ones of the same client', async () => {
      const c = await newClienteOf(ctx.store);
      const other = await newClienteOf(ctx.store);
      expect(await ctx.store.addEscucha(escucha(c.id, 'esc_a', 1000), 2, 100)).toMatchObject({ id: 'esc_a', eventos: ['all'], expira_at: 1000 });
      expect(await ctx.store.addEscucha(escucha(c.id, 'esc_b', 500, ['message.status']), 2, 100)).toMatchObject({ id: 'esc_b' });
      expect(await ctx.store.addEscucha(escucha(c.id, 'esc_c', 1000), 2, 100)).toBe('limite');
      // Another client's limit is its own.
      expect(await ctx.store.addEscucha(escucha(other.id, 'esc_o', 1000), 2, 100)).toMatchObject({ id: 'esc_o' });
      expect((await ctx.store.liveEscuchas(c.id, 100)).map((e) => [e.id, e.secret, e.eventos])).toEqual([
        ['esc_a', 'secret-of-esc_a', ['all']],
        ['esc_b', 'secret-of-esc_b', ['message.status']],
      ]);
      // At 500 esc_b has expired: not live, not renewable, not removable, and no longer counted.
      expect((await ctx.store.liveEscuchas(c.id, 500)).map((e) => e.id)).toEqual(['esc_a']);
      expect(await ctx.store.renewEscucha(c.id, 'esc_b', 1500, 500)).toBeNull();
      expect(await ctx.store.addEscucha(escucha(c.id, 'esc_c', 1500), 2, 500)).toMatchObject({ id: 'esc_c' });
      expect(await ctx.store.deleteEscucha(c.id, 'esc_b', 600)).toBe(false);
      // Renewing moves the lease; another client's id is not this client's.
      expect(await ctx.store.renewEscucha(other.id, 'esc_a', 5000, 600)).toBeNull();
      expect(await ctx.store.renewEscucha(c.id, 'esc_a', 5000, 600)).toMatchObject({ id: 'esc_a', expira_at: 5000 });
      expect((await ctx.store.liveEscuchas(c.id, 2000)).map((e) => e.id)).toEqual(['esc_a']);
      expect(await ctx.store.deleteEscucha(other.id, 'esc_a', 2000)).toBe(false);
      expect(await ctx.store.deleteEscucha(c.id, 'esc_a', 2000)).toBe(true);
      expect(await ctx.store.deleteEscucha(c.id, 'esc_a', 2000)).toBe(false);
      expect(await ctx.store.liveEscuchas(c.id, 2000)).toEqual([]);
      expect((await ctx.store.liveEscuchas(other.id, 600)).map((e) => e.id)).toEqual(['esc_o']);
    });

    it("a live listener has events journaled without a configuration; the move hands each event its client's live listeners and returns the copies asked for", async () => {
      const c = await newClienteOf(ctx.store);
      const other = await newClienteOf(ctx.store);
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345679'), 1000);
      if (!cel.ok) throw new Error('insert');
      const connected = (fecha: number) => ({
        evento: 'session.status' as const,
        cliente_id: c.id,
        celular_id: cel.celular.id,
        data: { status: 'connected' },
        fecha,
      });
      const given: Array<[string, string[]]> = [];
      const route = (ev: { evento: string; cliente_id: number }, cfg: unknown, escuchas: Array<{ id: string }>) => {
        given.push([ev.evento, escuchas.map((e) => e.id)]);
        return escuchas.length > 0 ? { id: `evt_${given.length}`, body: `{"n":${given.length}}`, entrega: cfg !== null, copias: escuchas as never } : null;
      };
      await ctx.store.addEscucha(escucha(c.id, 'esc_1', 3000), 5, 1000);
      await ctx.store.addEscucha(escucha(other.id, 'esc_other', 3000), 5, 1000);
      // Live at the event's time: journaled although the client has no configuration.
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2000, connected(2000));
      const moved = await ctx.store.moveEventsToOutbox(10, route, 2100);
      expect(moved.taken).toBe(1);
      expect(given).toEqual([['session.status', ['esc_1']]]);
      expect(moved.copies.map((k) => [k.escucha.id, k.escucha.secret, k.id, k.evento, k.body])).toEqual([
        ['esc_1', 'secret-of-esc_1', 'evt_1', 'session.status', '{"n":1}'],
      ]);
      // entrega false: nothing in the outbox.
      expect(await ctx.store.entregaQueues()).toEqual([]);
      // With a configuration too: both, under one id.
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 2200);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2300, connected(2300));
      expect((await ctx.store.moveEventsToOutbox(10, route, 2400)).copies.map((k) => k.id)).toEqual(['evt_2']);
      expect((await ctx.store.dueEntregas(c.id, 2400, 10)).map((e) => e.id)).toEqual(['evt_2']);
      // Expired at the move: the route gets no listener; without a configuration the event is not journaled at all.
      await ctx.store.deleteWebhook(c.id, 2500);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2600, connected(2600));
      expect(await ctx.store.moveEventsToOutbox(10, route, 3000)).toEqual({ taken: 1, copies: [] });
      expect(given[2]).toEqual(['session.status', []]);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 3100, connected(3100));
      expect(await ctx.store.moveEventsToOutbox(10, route, 3200)).toEqual({ taken: 0, copies: [] });
    });
  });
}
