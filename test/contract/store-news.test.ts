import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../src/core/ports/leases.js';
import type { Store } from '../../src/core/ports/store.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * A beat's news (LeasesStore.nodeBeat, D-197): a shared store says whether the queue's look and the webhooks' look
 * would read anything, and a node's safety looks skip a read it calls empty. So each flag must be exactly "that read's
 * answer is not empty", never less (a message or a delivery no look reads until a signal comes) and, here, never more.
 * A store served alone answers null: its looks are not round trips.
 */
const node: NodeInfo = { id: 'a', label: 'node a', staleMs: 60_000, marginMs: 10_000, engineUrl: null };

/** What the two looks read at `now`, as the news should tell it. */
async function looks(store: Store, now: number): Promise<{ queue: boolean; outbox: boolean; listeners: boolean }> {
  const q = await store.queueLook(now);
  const w = await store.webhookLook(now, true);
  return { queue: q.lines.length > 0 || q.expiry.expired || q.expiry.next !== null, outbox: w.queues.length > 0, listeners: (w.escuchas ?? []).length > 0 };
}

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: a beat's news of the store`, () => {
    const ctx = storeEachTest(adapter);

    if (adapter.name === 'sqlite') {
      it('a store served alone tells nothing (its looks read it in-process)', async () => {
        expect(await ctx.store.nodeBeat({ ...node, alone: true }, 1)).toBeNull();
      });
      return;
    }

    it('each flag is whether its look reads anything, through every kind of pending work coming and going', async () => {
      const { store } = ctx;
      const at = async (now: number, expected: { queue: boolean; outbox: boolean; listeners: boolean }) => {
        expect(await looks(store, now), 'the looks themselves').toEqual(expected);
        expect(await store.nodeBeat(node, now)).toEqual(expected);
      };
      const none = { queue: false, outbox: false, listeners: false };
      await at(10, none);

      const c = await newCliente(store);
      const added = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!added.ok) throw new Error('insert');
      const cel = added.celular;
      await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 100, motivo: 'r', actor: 'op' }, 1);
      const msg = messages(c.id, cel.id);
      const opts = { charge: true, maxPending: null };

      // A direct send without a validity is its request's own: no look reads it.
      const directo = msg('directo');
      expect(await store.acceptMensaje(directo, opts, 20)).toMatchObject({ ok: true });
      await at(20, none);
      // With a validity, the queue's look (its expiry part) reads it, before its end and after.
      const vigente = { ...msg('directo'), vigencia_hasta: 500 };
      expect(await store.acceptMensaje(vigente, opts, 30)).toMatchObject({ ok: true });
      await at(30, { ...none, queue: true });
      await at(600, { ...none, queue: true });
      await store.failMensaje(vigente.msg_id, 'expired', 'caducado', 600);
      await store.failMensaje(directo.msg_id, 'refused', 'rechazado', 600);
      await at(610, none);

      // A queued message, scheduled for later or due now.
      const queued = msg();
      expect(await store.acceptMensaje(queued, opts, 700)).toMatchObject({ ok: true });
      await at(700, { ...none, queue: true });

      // Its end logs an event; with a webhook that wants it, a delivery is pending.
      await store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['message.status'], activo: true }, 710);
      await store.failMensaje(queued.msg_id, 'refused', 'rechazado', 720);
      await ctx.settled();
      await at(720, { ...none, outbox: true });
      const due = await store.claimEntregas(c.id, 730, 10, { id: 'k1', until: 800 });
      expect(due.length).toBeGreaterThan(0);
      const delivered = { attempt: { status: 200, duracion_ms: 3, error: null }, outcome: { estado: 'entregado' as const }, now: 740, nodo: 'a' };
      await store.recordAttempts(due.map((e) => ({ id: e.id, claimId: 'k1', ...delivered })));
      await at(740, none);

      // A listener, while it lives.
      const escucha = {
        id: 'esc_a',
        cliente_id: c.id,
        url: 'http://127.0.0.1:9/esc',
        secret: 'secret-of-esc',
        eventos: ['all'],
        created_at: 750,
        expira_at: 900,
      };
      expect(await store.addEscucha(escucha, 2, 750)).toMatchObject({ id: 'esc_a' });
      await at(760, { ...none, listeners: true });
      await at(900, none);
    });
  });
}
