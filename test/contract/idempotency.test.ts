import { describe, expect, it } from 'vitest';
import { IDEM_PURGE_BATCH } from '../../src/core/sending/idempotency.js';
import type { AcceptedMensaje, IdemBinding } from '../../src/core/ports/messages.js';
import type { Store } from '../../src/core/ports/store.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * Idempotency-Keys in the MessagesStore port (core/sending/idempotency.ts holds the
 * rules): bound with the acceptance, refused as `idempotencia` before any
 * other refusal and with nothing written, per client, expiring, answered,
 * released, durable, and bound once however many acceptances race for a key.
 */

const DAY = 86_400_000;

function binding(clave: string, expira_at: number, huella = 'h1'): IdemBinding {
  return {
    clave,
    huella,
    expira_at,
    answer: (acc: AcceptedMensaje) => ({ status: 200, body: JSON.stringify({ msg_id: acc.mensaje.msg_id, saldo: acc.saldo_celular }) }),
  };
}

async function lineOf(store: Store, numero = '525512345678') {
  const c = await newCliente(store);
  await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 10, motivo: 'r', actor: 'op' }, 1);
  const cel = await store.insertCelular(celular(c.id, numero), 1000);
  if (!cel.ok) throw new Error('insert');
  return { cliente: c, celular: cel.celular, msg: messages(c.id, cel.celular.id) };
}

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: Idempotency-Keys (MessagesStore contract)`, () => {
    const ctx = storeEachTest(adapter);
    const opts = { charge: true, maxPending: null };

    it('binds with the acceptance; a bound key is refused before any other refusal, with nothing written', async () => {
      const { cliente, msg } = await lineOf(ctx.store);
      const t = 10 * DAY;
      const a = msg();
      const ok = await ctx.store.acceptMensaje(a, { ...opts, idem: binding('k1', t + DAY) }, t);
      expect(ok).toMatchObject({ ok: true, cargo: 'global' });
      expect(await ctx.store.idemGet(cliente.id, 'k1', t)).toMatchObject({
        cliente_id: cliente.id,
        clave: 'k1',
        huella: 'h1',
        msg_id: a.msg_id,
        status: 200,
        body: JSON.stringify({ msg_id: a.msg_id, saldo: 0 }),
        created_at: t,
        expira_at: t + DAY,
      });
      // Empty the balance: the key still answers first.
      await ctx.store.changeBalance({ cliente_id: cliente.id, celular_id: null, monto: -9, motivo: 'r', actor: 'op' }, t);
      const b = msg();
      expect(await ctx.store.acceptMensaje(b, { ...opts, idem: binding('k1', t + 2 * DAY, 'h2') }, t + 1)).toEqual({ ok: false, reason: 'idempotencia' });
      expect(await ctx.store.getMensaje(b.msg_id)).toBeNull();
      expect((await ctx.store.idemGet(cliente.id, 'k1', t + 1))!.msg_id).toBe(a.msg_id);
      expect((await ctx.store.getCliente(cliente.id))!.saldo_global).toBe(0);
      // Without a key, the same state refuses for the balance.
      expect(await ctx.store.acceptMensaje(msg(), opts, t + 2)).toEqual({ ok: false, reason: 'saldo' });
      // A refused acceptance binds nothing.
      expect(await ctx.store.acceptMensaje(msg(), { ...opts, idem: binding('k2', t + DAY) }, t + 3)).toEqual({ ok: false, reason: 'saldo' });
      expect(await ctx.store.idemGet(cliente.id, 'k2', t + 3)).toBeNull();
    });

    it('keys are per client', async () => {
      const x = await lineOf(ctx.store, '525512345678');
      const y = await lineOf(ctx.store, '525512345679');
      expect(await ctx.store.acceptMensaje(x.msg(), { ...opts, idem: binding('k', 2 * DAY) }, DAY)).toMatchObject({ ok: true });
      const other = { ...y.msg(), msg_id: '00000000-0000-4000-9000-000000000001' };
      expect(await ctx.store.acceptMensaje(other, { ...opts, idem: binding('k', 2 * DAY) }, DAY)).toMatchObject({ ok: true });
      expect((await ctx.store.idemGet(y.cliente.id, 'k', DAY))!.msg_id).toBe(other.msg_id);
    });

    it("a direct send's answer is kept once final, only for its own message; a release frees the key for a new binding", async () => {
      const { cliente, msg } = await lineOf(ctx.store);
      const t = 5 * DAY;
      const a = msg('directo');
      const inFlight: IdemBinding = { ...binding('d', t + DAY), answer: () => ({ status: null, body: '{"parte":1}' }) };
      await ctx.store.acceptMensaje(a, { ...opts, idem: inFlight }, t);
      expect(await ctx.store.idemGet(cliente.id, 'd', t)).toMatchObject({ status: null, body: '{"parte":1}' });
      await ctx.store.idemFinish(cliente.id, 'd', 'not-this-message', { status: 500, body: '{}' });
      expect(await ctx.store.idemGet(cliente.id, 'd', t)).toMatchObject({ status: null });
      await ctx.store.idemFinish(cliente.id, 'd', a.msg_id, { status: 422, body: '{"ok":false}' });
      expect(await ctx.store.idemGet(cliente.id, 'd', t)).toMatchObject({ status: 422, body: '{"ok":false}' });
      await ctx.store.idemRelease(cliente.id, 'd', 'not-this-message');
      expect(await ctx.store.idemGet(cliente.id, 'd', t)).not.toBeNull();
      await ctx.store.idemRelease(cliente.id, 'd', a.msg_id);
      expect(await ctx.store.idemGet(cliente.id, 'd', t)).toBeNull();
      const b = msg('directo');
      expect(await ctx.store.acceptMensaje(b, { ...opts, idem: binding('d', t + DAY) }, t + 1)).toMatchObject({ ok: true });
      expect((await ctx.store.idemGet(cliente.id, 'd', t + 1))!.msg_id).toBe(b.msg_id);
    });

    it('expires: unseen from its expiry on, bound anew over the old row, and expired keys are removed a few per binding', async () => {
      const { cliente, msg } = await lineOf(ctx.store);
      const t = 20 * DAY;
      const first = msg();
      await ctx.store.acceptMensaje(first, { ...opts, idem: binding('e', t + DAY) }, t);
      for (let i = 0; i < IDEM_PURGE_BATCH + 2; i++) await ctx.store.acceptMensaje(msg(), { ...opts, idem: binding(`old-${i}`, t + DAY) }, t);
      expect(await ctx.store.idemGet(cliente.id, 'e', t + DAY - 1)).not.toBeNull();
      expect(await ctx.store.idemGet(cliente.id, 'e', t + DAY)).toBeNull();
      const again = msg();
      expect(await ctx.store.acceptMensaje(again, { ...opts, idem: binding('e', t + 2 * DAY, 'h9') }, t + DAY)).toMatchObject({ ok: true });
      expect(await ctx.store.idemGet(cliente.id, 'e', t + DAY)).toMatchObject({ msg_id: again.msg_id, huella: 'h9', created_at: t + DAY });
      // That binding removed up to a batch of the other expired keys; the next removes the rest.
      const left = async () => {
        let n = 0;
        for (let i = 0; i < IDEM_PURGE_BATCH + 2; i++) if (await ctx.store.idemGet(cliente.id, `old-${i}`, 0)) n += 1;
        return n;
      };
      expect(await left()).toBe(2);
      await ctx.store.acceptMensaje(msg(), { ...opts, idem: binding('f', t + 2 * DAY) }, t + DAY);
      expect(await left()).toBe(0);
    });

    it('durable: a binding is there after the store is opened again', async () => {
      const { cliente, msg } = await lineOf(ctx.store);
      const a = msg();
      await ctx.store.acceptMensaje(a, { ...opts, idem: binding('r', 3 * DAY) }, DAY);
      const store = await ctx.reopen();
      expect(await store.idemGet(cliente.id, 'r', DAY)).toMatchObject({ msg_id: a.msg_id, status: 200 });
    });

    it('acceptances racing for one key: exactly one is accepted and charged', async () => {
      const { cliente, msg } = await lineOf(ctx.store);
      const tries = Array.from({ length: 8 }, () => msg());
      const results = await Promise.all(tries.map((m) => ctx.store.acceptMensaje(m, { ...opts, idem: binding('race', 2 * DAY) }, DAY)));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok)).toEqual(Array(7).fill({ ok: false, reason: 'idempotencia' }));
      const winner = tries[results.findIndex((r) => r.ok)]!;
      expect((await ctx.store.idemGet(cliente.id, 'race', DAY))!.msg_id).toBe(winner.msg_id);
      expect((await ctx.store.getCliente(cliente.id))!.saldo_global).toBe(9);
      for (const m of tries) if (m !== winner) expect(await ctx.store.getMensaje(m.msg_id)).toBeNull();
    });

    it('acceptances racing for one key on two nodes while the winner spends the last credit: the others are its repeats, not refused for balance', async () => {
      const { cliente, msg } = await lineOf(ctx.store);
      await ctx.store.changeBalance({ cliente_id: cliente.id, celular_id: null, monto: -9, motivo: 'r', actor: 'op' }, 1);
      const other = await ctx.node();
      const tries = Array.from({ length: 8 }, () => msg());
      const results = await Promise.all(tries.map((m, i) => (i % 2 ? other : ctx.store).acceptMensaje(m, { ...opts, idem: binding('last', 2 * DAY) }, DAY)));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok)).toEqual(Array(7).fill({ ok: false, reason: 'idempotencia' }));
      expect((await ctx.store.getCliente(cliente.id))!.saldo_global).toBe(0);
    });
  });
}
