import { describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import { ADAPTERS, celular, claimableAt, messages, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/** The event log: each change logs its event with it; the events a configuration wanted are its deliveries. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: WebhooksStore contract`, () => {
    const ctx = storeEachTest(adapter);
    const newCliente = (max: number | null = null) => newClienteOf(ctx.store, max);

    it("a message's story facts: the claim's node and time, the failure's time, its ledger rows; its deliveries with each attempt's node, bounded", async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512340001'), 1000);
      if (!cel.ok) throw new Error('insert');
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['message.status'], activo: true }, 1);
      const m = messages(c.id, cel.celular.id)();
      await ctx.store.acceptMensaje(m, { charge: true, maxPending: null }, 2);
      expect(await ctx.store.mensajeHechos(c.id, m.msg_id)).toEqual({
        nodo: null,
        reclamado_at: null,
        error_at: null,
        movimientos: [{ fecha: 2, monto: -1, saldo_resultante: 4, motivo: `envio ${m.msg_id}`, celular_id: null }],
      });
      expect(await ctx.store.claimQueued(m.msg_id, slotClaim(cel.celular, 3, 60_000), 3, false, 'nodo-a')).toEqual({ ok: true });
      await ctx.store.failMensaje(m.msg_id, 'refused', 'rechazado', 9);
      const h = await ctx.store.mensajeHechos(c.id, m.msg_id);
      expect(h).toMatchObject({ nodo: 'nodo-a', reclamado_at: 3, error_at: 9 });
      expect(h!.movimientos.map((x) => [x.motivo, x.monto, x.saldo_resultante, x.fecha])).toEqual([
        [`envio ${m.msg_id}`, -1, 4, 2],
        [`reembolso ${m.msg_id}`, 1, 5, 9],
      ]);
      // Another client's view of the id, and an unknown id: nothing.
      expect(await ctx.store.mensajeHechos(c.id + 1000, m.msg_id)).toBeNull();
      expect(await ctx.store.mensajeHechos(c.id, 'nope')).toBeNull();
      // Its two events (pendiente, error) are deliveries: the first fails on node a, then is delivered on node b.
      await ctx.settled();
      const [first] = await ctx.store.claimEntregas(c.id, 10, 1, { id: 'k1', until: 100 });
      await ctx.store.recordAttempts([
        {
          id: first!.id,
          claimId: 'k1',
          attempt: { status: 500, duracion_ms: 7, error: 'HTTP 500' },
          outcome: { estado: 'pendiente', proximo_intento_at: 5 },
          now: 10,
          nodo: 'nodo-a',
        },
      ]);
      // Due again at 5, before the error's event (9): the next claim takes it first.
      const again = await ctx.store.claimEntregas(c.id, 20, 1, { id: 'k2', until: 100 });
      expect(again.map((e) => e.id)).toEqual([first!.id]);
      await ctx.store.recordAttempts([
        { id: first!.id, claimId: 'k2', attempt: { status: 200, duracion_ms: 3, error: null }, outcome: { estado: 'entregado' }, now: 21, nodo: 'nodo-b' },
      ]);
      const list = await ctx.store.entregasDeMensaje(c.id, m.msg_id, { entregas: 10, intentos: 10 });
      expect(list.map((e) => [e.id === first!.id, JSON.parse(e.data).estado, e.entrega, e.intentos])).toEqual([
        [true, 'pendiente', 'entregado', 2],
        [false, 'error', 'pendiente', 0],
      ]);
      expect(list[0]).toMatchObject({ evento: 'message.status', entregado_at: 21, ultimo_status: 200, ultima_duracion_ms: 3, ultimo_nodo: 'nodo-b' });
      expect(list[0]!.fallidos).toEqual([{ n: 1, fecha: 10, status: 500, duracion_ms: 7, error: 'HTTP 500', nodo: 'nodo-a' }]);
      // Bounded: one delivery and one more that tells there are more; none for another client or another message.
      const one = await ctx.store.entregasDeMensaje(c.id, m.msg_id, { entregas: 1, intentos: 0 });
      expect(one.map((e) => e.fallidos.length)).toEqual([0, 0]);
      expect(await ctx.store.entregasDeMensaje(c.id + 1000, m.msg_id, { entregas: 10, intentos: 10 })).toEqual([]);
      expect(await ctx.store.entregasDeMensaje(c.id, 'nope', { entregas: 10, intentos: 10 })).toEqual([]);
    });

    it('logs every change with it, for every client; only what an active, subscribed configuration wanted at the time is a delivery', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      const m = messages(c.id, cel.celular.id)();
      const connected = (fecha: number) => ({
        evento: 'session.status' as const,
        cliente_id: c.id,
        celular_id: cel.celular.id,
        data: { status: 'connected' },
        fecha,
      });
      const kinds = async () =>
        (await ctx.settled(), await ctx.store.eventsAfter(c.id, null, 100)).map((e) => [
          e.evento,
          (e.data as { estado?: string }).estado ?? (e.data as { status?: string }).status,
          e.fecha,
        ]);
      // No webhook, or an inactive one: logged all the same (a stream reads them), no delivery.
      await ctx.store.acceptMensaje(m, { charge: true, maxPending: null }, 2);
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: false }, 3);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 3, connected(3));
      expect(await kinds()).toEqual([
        ['message.status', 'pendiente', 2],
        ['session.status', 'connected', 3],
      ]);
      expect((await ctx.store.webhookLook(0, false)).queues).toEqual([]);
      // Active: each change logs its event with it, a delivery due at the event's time.
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 5);
      await ctx.store.markSent(m.msg_id, 'G1', 6);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 7, connected(7));
      await ctx.store.receipt(cel.celular.id, 'G1', 'error', 8, 'x');
      expect(await kinds()).toEqual([
        ['message.status', 'pendiente', 2],
        ['session.status', 'connected', 3],
        ['message.status', 'enviado', 6],
        ['session.status', 'connected', 7],
        ['message.status', 'error', 8],
      ]);
      const due = await claimableAt(ctx.store, c.id, 10, 10);
      expect(due.map((e) => [e.evento, e.proximo_intento_at])).toEqual([
        ['message.status', 6],
        ['session.status', 7],
        ['message.status', 8],
      ]);
      expect(await claimableAt(ctx.store, c.id, 5, 10)).toEqual([]);
      // The next due time after 6 is 7: a claim at 6 takes the first alone, one at 7 the second too.
      expect((await claimableAt(ctx.store, c.id, 6)).map((e) => e.proximo_intento_at)).toEqual([6]);
      expect((await claimableAt(ctx.store, c.id, 7)).map((e) => e.proximo_intento_at)).toEqual([6, 7]);
      expect((await ctx.store.webhookLook(0, false)).queues).toEqual([{ cliente_id: c.id, next_at: 6 }]);
      // The delivery's id and body are the event's, the same bytes every time they are read.
      const logged = await ctx.store.eventsAfter(c.id, null, 100);
      expect(due.map((e) => e.id)).toEqual(logged.slice(2).map((e) => e.id));
      expect(JSON.parse(due[0]!.body)).toMatchObject({
        id: due[0]!.id,
        evento: 'message.status',
        cliente_id: c.id,
        celular_id: cel.celular.id,
        data: { estado: 'enviado' },
      });
      expect((await claimableAt(ctx.store, c.id, 10, 10)).map((e) => e.body)).toEqual(due.map((e) => e.body));
      // Subscribed to one kind only: the other kind is logged, not delivered.
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['session.status'], activo: true }, 9);
      await ctx.store.receipt(cel.celular.id, 'G1', 'error', 10, 'y');
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 11, connected(11));
      expect((await claimableAt(ctx.store, c.id, 20, 10)).map((e) => e.proximo_intento_at)).toEqual([6, 7, 8, 11]);
    });

    it("reads a client's events after an id, in order, never another client's; an id of another shape reads from the start", async () => {
      const c = await newCliente();
      const other = await newCliente();
      const ev = (clienteId: number, n: number) => ({ evento: 'webhook.test', cliente_id: clienteId, celular_id: null, data: { n }, fecha: 100 + n });
      const ids: string[] = [];
      for (let n = 0; n < 5; n++) {
        ids.push(await ctx.store.logTestEvent(ev(c.id, n), false));
        await ctx.store.logTestEvent(ev(other.id, n), false);
      }
      expect(new Set(ids).size).toBe(5);
      await ctx.settled();
      for (const id of ids) expect(id).toMatch(/^evt_[0-9a-f]{32}$/);
      expect((await ctx.store.eventsAfter(c.id, null, 3)).map((e) => e.data.n)).toEqual([0, 1, 2]);
      expect((await ctx.store.eventsAfter(c.id, ids[2]!, 10)).map((e) => [e.id, e.data.n])).toEqual([
        [ids[3], 3],
        [ids[4], 4],
      ]);
      expect(await ctx.store.eventsAfter(c.id, ids[4]!, 10)).toEqual([]);
      expect((await ctx.store.eventsAfter(other.id, null, 10)).every((e) => e.cliente_id === other.id)).toBe(true);
      expect((await ctx.store.eventsAfter(c.id, 'evt_nope', 10)).length).toBe(5);
      // No delivery was asked for.
      expect((await ctx.store.webhookLook(0, false)).queues).toEqual([]);
    });

    it("eventKept: the client's event while it is in the log; never another client's, a pruned one or an id of another shape", async () => {
      const c = await newCliente();
      const other = await newCliente();
      const ev = (clienteId: number, n: number) => ({ evento: 'webhook.test', cliente_id: clienteId, celular_id: null, data: { n }, fecha: n });
      const old = await ctx.store.logTestEvent(ev(c.id, 1), false);
      const young = await ctx.store.logTestEvent(ev(c.id, 1000), false);
      const theirs = await ctx.store.logTestEvent(ev(other.id, 1000), false);
      await ctx.settled();
      expect(await ctx.store.eventKept(c.id, old)).toBe(true);
      expect(await ctx.store.eventKept(c.id, young)).toBe(true);
      expect(await ctx.store.eventKept(c.id, theirs)).toBe(false);
      expect(await ctx.store.eventKept(other.id, theirs)).toBe(true);
      expect(await ctx.store.eventKept(c.id, 'evt_nope')).toBe(false);
      expect(await ctx.store.eventKept(c.id, `evt_ffffffff${'0'.repeat(23)}1`)).toBe(false);
      expect(await ctx.store.pruneEvents(500, 10)).toBeGreaterThanOrEqual(1);
      expect(await ctx.store.eventKept(c.id, old)).toBe(false);
      expect(await ctx.store.eventKept(c.id, young)).toBe(true);
      expect(await ctx.store.newestEventId(c.id)).toBe(young);
      expect(await ctx.store.newestEventId(other.id)).toBe(theirs);
      expect(await ctx.store.newestEventId((await newCliente()).id)).toBeNull();
      expect(await ctx.store.eventsAfter(c.id, await ctx.store.newestEventId(c.id), 10)).toEqual([]);
      // Back from the newest (the panel monitor's start): one before it is the older kept one's place; past the log, null.
      const mid = await ctx.store.logTestEvent(ev(c.id, 1001), false);
      await ctx.settled();
      expect(await ctx.store.newestEventId(c.id, 0)).toBe(mid);
      expect(await ctx.store.newestEventId(c.id, 1)).toBe(young);
      expect(await ctx.store.newestEventId(c.id, 2)).toBeNull();
      expect((await ctx.store.eventsAfter(c.id, await ctx.store.newestEventId(c.id, 1), 10)).map((e) => e.id)).toEqual([mid]);
    });

    it('prunes events older than the cut with nothing left to deliver, oldest first, a batch at a time; pending deliveries stay', async () => {
      const c = await newCliente();
      const ev = (n: number) => ({ evento: 'webhook.test', cliente_id: c.id, celular_id: null, data: { n }, fecha: n * 10 });
      const pend = await ctx.store.logTestEvent(ev(0), true);
      for (let n = 1; n < 8; n++) await ctx.store.logTestEvent(ev(n), n === 5);
      await ctx.settled();
      // Older than 60: n 0..5; n 0 and 5 are pending.
      expect(await ctx.store.pruneEvents(60, 3)).toBe(3);
      expect(await ctx.store.pruneEvents(60, 3)).toBe(1);
      expect(await ctx.store.pruneEvents(60, 3)).toBe(0);
      expect((await ctx.store.eventsAfter(c.id, null, 10)).map((e) => e.data.n)).toEqual([0, 5, 6, 7]);
      const [first] = await ctx.store.claimEntregas(c.id, 100, 1, { id: 'k', until: 1000 });
      expect(first!.id).toBe(pend);
      await ctx.store.recordAttempt(pend, 'k', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 100);
      expect(await ctx.store.pruneEvents(60, 10)).toBe(1);
      expect((await ctx.store.eventsAfter(c.id, null, 10)).map((e) => e.data.n)).toEqual([5, 6, 7]);
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
      const ev = (clienteId: number, fecha: number) => ({ evento: 'webhook.test', cliente_id: clienteId, celular_id: null, data: {}, fecha });
      const e1 = await ctx.store.logTestEvent(ev(c.id, 100), true);
      const e2 = await ctx.store.logTestEvent(ev(c.id, 101), true);
      await ctx.store.logTestEvent(ev(other.id, 150), true);
      expect((await ctx.store.webhookLook(0, false)).queues.sort((a, b) => a.cliente_id - b.cliente_id)).toEqual([
        { cliente_id: c.id, next_at: 100 },
        { cliente_id: other.id, next_at: 150 },
      ]);
      expect((await claimableAt(ctx.store, c.id, 100, 10)).map((e) => e.id)).toEqual([e1]);
      expect((await claimableAt(ctx.store, c.id, 200, 10)).map((e) => e.id)).toEqual([e1, e2]);

      expect(await ctx.store.outboxDepth(120)).toEqual({ pending: 3, due: 2 });
      expect((await ctx.store.claimEntregas(c.id, 200, 1, { id: 'k1', until: 300 })).map((e) => e.id)).toEqual([e1]);
      await ctx.store.recordAttempt(e1, 'k1', { status: 500, duracion_ms: 12, error: 'HTTP 500' }, { estado: 'pendiente', proximo_intento_at: 5000 }, 200);
      expect((await claimableAt(ctx.store, c.id, 200, 10)).map((e) => e.id)).toEqual([e2]);
      // Metrics: e1 waits for its retry; e2 and o1 are due.
      expect(await ctx.store.outboxDepth(200)).toEqual({ pending: 3, due: 2 });
      expect(await ctx.store.outboxDepth(5000)).toEqual({ pending: 3, due: 3 });
      // The overview: c's pending e1 has failed once; the other client's delivery has not been tried.
      expect(await ctx.store.failingWebhooks(10)).toEqual([{ cliente_id: c.id, pendientes: 1, intentos: 1, desde: 100, ultimo_error: 'HTTP 500' }]);
      // e1's retry is the next due time after 200: by 4999 nothing more is due, at 5000 e1 is.
      expect((await claimableAt(ctx.store, c.id, 4999)).map((e) => e.id)).toEqual([e2]);
      expect((await claimableAt(ctx.store, c.id, 5000)).map((e) => e.id)).toEqual([e2, e1]);
      expect((await ctx.store.claimEntregas(c.id, 205, 10, { id: 'k1', until: 300 })).map((e) => e.id)).toEqual([e2]);
      await ctx.store.recordAttempt(e2, 'k1', { status: 200, duracion_ms: 8, error: null }, { estado: 'entregado' }, 210);
      expect((await ctx.store.claimEntregas(c.id, 5000, 10, { id: 'k2', until: 6000 })).map((e) => e.id)).toEqual([e1]);
      await ctx.store.recordAttempt(e1, 'k2', { status: 410, duracion_ms: 9, error: 'HTTP 410' }, { estado: 'fallido' }, 5000);
      expect(await claimableAt(ctx.store, c.id, 10_000, 10)).toEqual([]);
      expect(await ctx.store.outboxDepth(10_000)).toEqual({ pending: 1, due: 1 });

      const list = await ctx.store.listEntregas(c.id, 10);
      const f1 = list.find((e) => e.id === e1)!;
      expect(f1).toMatchObject({ estado: 'fallido', intentos: 2, ultimo_error: 'HTTP 410' });
      expect(f1.intentos_detalle.map((i) => [i.n, i.status])).toEqual([
        [1, 500],
        [2, 410],
      ]);
      // A delivered attempt has no row of its own: the event keeps its answer and time.
      expect(list.find((e) => e.id === e2)).toMatchObject({ estado: 'entregado', entregado_at: 210, intentos: 1 });
      expect(list.find((e) => e.id === e2)!.intentos_detalle).toEqual([{ n: 1, fecha: 210, status: 200, duracion_ms: 8, error: null }]);
      // Newest first.
      expect(list.map((e) => e.id)).toEqual([e2, e1]);
      // A page further on (the panel's pager), and the count, bounded.
      expect((await ctx.store.listEntregas(c.id, 1, 1)).map((e) => e.id)).toEqual([e1]);
      expect(await ctx.store.listEntregas(c.id, 10, 2)).toEqual([]);
      expect(await ctx.store.countEntregas(c.id, 100)).toBe(2);
      expect(await ctx.store.countEntregas(c.id, 1)).toBe(1);

      expect(await ctx.store.redeliver(other.id, e1, 6000)).toBe(false);
      expect(await ctx.store.redeliver(c.id, 'evt_nope', 6000)).toBe(false);
      expect(await ctx.store.redeliver(c.id, e1, 6000)).toBe(true);
      expect((await claimableAt(ctx.store, c.id, 6000, 10)).map((e) => [e.id, e.estado])).toEqual([[e1, 'pendiente']]);
      // An event that was never a delivery cannot be redelivered.
      const plain = await ctx.store.logTestEvent(ev(c.id, 6000), false);
      expect(await ctx.store.redeliver(c.id, plain, 6001)).toBe(false);
    });
  });
}

/** Claims: each due delivery is attempted once per due time, whoever claims it, on any number of store handles (nodes). */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: WebhooksStore contract, claims`, () => {
    const ctx = storeEachTest(adapter);
    /** Deliveries falling due at at, at + 1, ...: named e0, e1, ... by `ids` (their event ids are the store's). */
    let names = new Map<string, string>();
    const enqueue = async (clienteId: number, n: number, at: number) => {
      names = new Map();
      for (let i = 0; i < n; i++) {
        const id = await ctx.store.logTestEvent({ evento: 'message.status', cliente_id: clienteId, celular_id: null, data: { n: i }, fecha: at + i }, true);
        names.set(id, `e${i}`);
      }
    };
    const idOf = (name: string) => [...names].find(([, n]) => n === name)![0];
    const ids = (rows: Array<{ id: string }>) => rows.map((e) => names.get(e.id) ?? e.id);

    it('a claim takes due, unclaimed deliveries in order up to its limit; another claim skips them until they are recorded, given back or the claim runs out', async () => {
      const c = await newClienteOf(ctx.store);
      await enqueue(c.id, 4, 100);
      // Due by 102: e0..e2, oldest first, two at most.
      expect(ids(await ctx.store.claimEntregas(c.id, 102, 2, { id: 'a', until: 1000 }))).toEqual(['e0', 'e1']);
      expect(ids(await ctx.store.claimEntregas(c.id, 102, 5, { id: 'b', until: 1000 }))).toEqual(['e2']);
      expect(await ctx.store.claimEntregas(c.id, 102, 5, { id: 'c', until: 1000 })).toEqual([]);
      // A claim in force is when the delivery may next be taken; e3 falls due at 103 (nothing was claimable at 102, above).
      expect(ids(await ctx.store.claimEntregas(c.id, 103, 5, { id: 'c', until: 1000 }))).toEqual(['e3']);
      // All four are held until 1000: nothing may be taken before (at 1000 all four are, below).
      expect(await ctx.store.claimEntregas(c.id, 999, 5, { id: 'early', until: 2000 })).toEqual([]);
      // Only the holder records, and its record clears the claim: a retry is claimable at its time.
      expect(await ctx.store.recordAttempt(idOf('e0'), 'b', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 110)).toBe(false);
      expect(
        await ctx.store.recordAttempt(
          idOf('e0'),
          'a',
          { status: 500, duracion_ms: 1, error: 'HTTP 500' },
          { estado: 'pendiente', proximo_intento_at: 200 },
          110,
        ),
      ).toBe(true);
      expect(await ctx.store.recordAttempt(idOf('e0'), 'a', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 111)).toBe(false);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 5, { id: 'd', until: 1000 }))).toEqual(['e0']);
      // Given back unattempted (only by its holder): due again at once, its attempts untouched.
      expect(await ctx.store.releaseEntregas([idOf('e1'), idOf('e2')], 'b')).toBe(1);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 5, { id: 'e', until: 1000 }))).toEqual(['e2']);
      // A claim that ran out (its holder died): anyone takes the delivery, and the old holder's record is refused.
      expect(ids(await ctx.store.claimEntregas(c.id, 1000, 5, { id: 'f', until: 2000 }))).toEqual(['e1', 'e2', 'e3', 'e0']);
      expect(await ctx.store.recordAttempt(idOf('e1'), 'a', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 1001)).toBe(false);
      expect(await ctx.store.recordAttempt(idOf('e1'), 'f', { status: 200, duracion_ms: 1, error: null }, { estado: 'entregado' }, 1001)).toBe(true);
      const list = await ctx.store.listEntregas(c.id, 10);
      expect(list.find((e) => e.id === idOf('e0'))).toMatchObject({ estado: 'pendiente', intentos: 1 });
      expect(list.find((e) => e.id === idOf('e1'))).toMatchObject({ estado: 'entregado', intentos: 1 });
      expect(list.find((e) => e.id === idOf('e1'))!.intentos_detalle.map((i) => i.status)).toEqual([200]);
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

    it('records several attempts at once, each as it would alone: only under its own claim, a row only for a failure', async () => {
      const c = await newClienteOf(ctx.store);
      await enqueue(c.id, 3, 100);
      expect(ids(await ctx.store.claimEntregas(c.id, 200, 3, { id: 'a', until: 1000 }))).toEqual(['e0', 'e1', 'e2']);
      const ok = { status: 200, duracion_ms: 3, error: null };
      const recorded = await ctx.store.recordAttempts([
        { id: idOf('e0'), claimId: 'a', attempt: ok, outcome: { estado: 'entregado' }, now: 210 },
        {
          id: idOf('e1'),
          claimId: 'a',
          attempt: { status: 503, duracion_ms: 4, error: 'HTTP 503' },
          outcome: { estado: 'pendiente', proximo_intento_at: 900 },
          now: 211,
        },
        { id: idOf('e2'), claimId: 'not-mine', attempt: ok, outcome: { estado: 'entregado' }, now: 212 },
        { id: 'evt_nope', claimId: 'a', attempt: ok, outcome: { estado: 'entregado' }, now: 213 },
      ]);
      expect(recorded).toEqual([true, true, false, false]);
      expect(await ctx.store.recordAttempts([])).toEqual([]);
      const list = await ctx.store.listEntregas(c.id, 10);
      expect(list.find((e) => e.id === idOf('e0'))).toMatchObject({ estado: 'entregado', intentos: 1, entregado_at: 210 });
      expect(list.find((e) => e.id === idOf('e0'))!.intentos_detalle).toEqual([{ n: 1, fecha: 210, status: 200, duracion_ms: 3, error: null }]);
      expect(list.find((e) => e.id === idOf('e1'))).toMatchObject({ estado: 'pendiente', intentos: 1, proximo_intento_at: 900, ultimo_error: 'HTTP 503' });
      expect(list.find((e) => e.id === idOf('e1'))!.intentos_detalle).toEqual([{ n: 1, fecha: 211, status: 503, duracion_ms: 4, error: 'HTTP 503' }]);
      expect(list.find((e) => e.id === idOf('e2'))).toMatchObject({ estado: 'pendiente', intentos: 0 });
      // e2's claim is still a's: a's own record goes through.
      expect(await ctx.store.recordAttempts([{ id: idOf('e2'), claimId: 'a', attempt: ok, outcome: { estado: 'entregado' }, now: 220 }])).toEqual([true]);
    });

    it('records and claims in one call, each as it would alone; the claim never takes a delivery the same call records', async () => {
      const c = await newClienteOf(ctx.store);
      const other = await newClienteOf(ctx.store);
      await enqueue(c.id, 4, 100);
      expect(ids(await ctx.store.claimEntregas(c.id, 101, 2, { id: 'a', until: 150 }))).toEqual(['e0', 'e1']);
      const ok = { status: 200, duracion_ms: 3, error: null };
      const failed = { status: 500, duracion_ms: 4, error: 'HTTP 500' };
      // Past a's claim (until 150) e0 and e1 are claimable again, but this very call names them (e0's record is refused): e2 and e3 are taken.
      const both = await ctx.store.recordAndClaim(
        [
          { id: idOf('e1'), claimId: 'a', attempt: failed, outcome: { estado: 'pendiente', proximo_intento_at: 160 }, now: 151 },
          { id: idOf('e0'), claimId: 'not-mine', attempt: ok, outcome: { estado: 'entregado' }, now: 151 },
        ],
        { clienteId: c.id, now: 160, limit: 2, claim: { id: 'b', until: 1000 } },
      );
      expect(both.recorded).toEqual([true, false]);
      expect(ids(both.claimed)).toEqual(['e2', 'e3']);
      expect(both.claimed[0]).toMatchObject({ estado: 'pendiente', intentos: 0, cliente_id: c.id });
      // e1 was recorded (a retry due at 160), e0 not: the next claim takes both.
      expect(ids(await ctx.store.claimEntregas(c.id, 160, 5, { id: 'c', until: 1000 }))).toEqual(['e0', 'e1']);
      const list = await ctx.store.listEntregas(c.id, 10);
      expect(list.find((e) => e.id === idOf('e1'))).toMatchObject({ estado: 'pendiente', intentos: 1, ultimo_error: 'HTTP 500' });
      expect(list.find((e) => e.id === idOf('e1'))!.intentos_detalle).toEqual([{ n: 1, fecha: 151, status: 500, duracion_ms: 4, error: 'HTTP 500' }]);
      // Records of any client ride on one client's claim; nothing due for it: an empty claim, the records still made.
      const more = await ctx.store.recordAndClaim(
        [
          { id: idOf('e0'), claimId: 'c', attempt: ok, outcome: { estado: 'entregado' }, now: 170 },
          { id: idOf('e2'), claimId: 'b', attempt: ok, outcome: { estado: 'entregado' }, now: 171 },
        ],
        { clienteId: other.id, now: 170, limit: 5, claim: { id: 'd', until: 1000 } },
      );
      expect(more).toEqual({ recorded: [true, true], claimed: [] });
      const after = await ctx.store.listEntregas(c.id, 10);
      expect(after.find((e) => e.id === idOf('e2'))).toMatchObject({ estado: 'entregado', intentos: 1, entregado_at: 171 });
      // No records: a plain claim.
      expect(await ctx.store.recordAndClaim([], { clienteId: c.id, now: 2000, limit: 5, claim: { id: 'e', until: 3000 } })).toMatchObject({ recorded: [] });
    });

    it('firstOnly claims deliveries never attempted and leaves due retries', async () => {
      const c = await newClienteOf(ctx.store);
      await enqueue(c.id, 3, 100);
      await ctx.store.claimEntregas(c.id, 100, 1, { id: 'a', until: 1000 });
      await ctx.store.recordAttempt(idOf('e0'), 'a', { status: 500, duracion_ms: 1, error: 'HTTP 500' }, { estado: 'pendiente', proximo_intento_at: 101 }, 100);
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

/** Listeners (`webhook listen`): leases with a per-client limit, and cursors over the log. */
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

    it("a listener takes its client's events logged after it was added, each once across store handles, whatever the configuration; an expired one takes nothing", async () => {
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
      // Before the listener: not its to take.
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 1500, connected(1500));
      await ctx.store.addEscucha(escucha(c.id, 'esc_1', 3000), 5, 1000);
      await ctx.store.addEscucha(escucha(other.id, 'esc_other', 3000), 5, 1000);
      expect(await ctx.store.takeEscuchaEvents('esc_1', 10, 1600)).toEqual([]);
      // No configuration: logged, and the listener takes it once.
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2000, connected(2000));
      await ctx.settled();
      const [first] = await ctx.store.takeEscuchaEvents('esc_1', 10, 2100);
      expect(first).toMatchObject({ evento: 'session.status', cliente_id: c.id, fecha: 2000, data: { status: 'connected' } });
      expect(await ctx.store.takeEscuchaEvents('esc_1', 10, 2100)).toEqual([]);
      expect(await ctx.store.takeEscuchaEvents('esc_other', 10, 2100)).toEqual([]);
      expect((await ctx.store.webhookLook(0, false)).queues).toEqual([]);
      // With a configuration too: the listener's copy and the delivery are one event, one id.
      await ctx.store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 2200);
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2300, connected(2300));
      await ctx.settled();
      const [copy] = await ctx.store.takeEscuchaEvents('esc_1', 10, 2400);
      expect((await claimableAt(ctx.store, c.id, 2400, 10)).map((e) => e.id)).toEqual([copy!.id]);
      // Many events, several handles taking at once: each event taken once, in order within each take, none lost.
      const handles = [ctx.store, await ctx.node(), await ctx.node()];
      for (let i = 0; i < 60; i++) await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2500 + i, connected(2500 + i));
      await ctx.settled();
      const taken: number[][] = [];
      await Promise.all(
        Array.from({ length: 6 }, async (_, k) => {
          for (;;) {
            const got = await handles[k % 3]!.takeEscuchaEvents('esc_1', 7, 2600);
            if (got.length === 0) return;
            taken.push(got.map((e) => e.fecha));
          }
        }),
      );
      for (const batch of taken) expect(batch).toEqual([...batch].sort((x, y) => x - y));
      expect(taken.flat().sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, i) => 2500 + i));
      // Expired: nothing, though events wait.
      await ctx.store.updateCelular(cel.celular.id, { last_status: 'connected' }, 2900, connected(2900));
      expect(await ctx.store.takeEscuchaEvents('esc_1', 10, 3000)).toEqual([]);
      expect((await ctx.store.allLiveEscuchas(2900)).map((e) => e.id).sort()).toEqual(['esc_1', 'esc_other']);
      expect(await ctx.store.allLiveEscuchas(3000)).toEqual([]);
      // The dispatcher's look reads the same listeners beside the queues when asked (D-191), and none when not.
      const look = await ctx.store.webhookLook(2900, true);
      expect(look.escuchas).toEqual(await ctx.store.allLiveEscuchas(2900));
      expect(look.escuchas!.every((e) => Array.isArray(e.eventos) && typeof e.expira_at === 'number')).toBe(true);
      expect((await ctx.store.webhookLook(2900, false)).escuchas).toBeNull();
      expect((await ctx.store.webhookLook(3000, true)).escuchas).toEqual([]);
    });
  });
}
