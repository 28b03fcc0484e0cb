import { describe, expect, it } from 'vitest';
import type { AcceptedMensaje, AcceptOptions, AcceptResult, NewMensaje } from '../../src/core/ports/messages.js';
import { ADAPTERS, celular, messages, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/**
 * Sends accepted together: concurrent acceptances go through the store's
 * group commit (a SQLite transaction of several, a PostgreSQL turn of
 * several in two statements); each is decided as if it were alone, in the
 * order it arrived, and one that cannot be written fails alone.
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: acceptances in turns`, () => {
    const ctx = storeEachTest(adapter);
    const newCliente = () => newClienteOf(ctx.store, null);
    const idem = (clave: string) => ({ clave, huella: 'h', expira_at: 1_000_000, answer: () => ({ status: 200, body: '{}' }) });

    async function lines(clienteId: number, numeros: string[]) {
      return Promise.all(
        numeros.map(async (n) => {
          const r = await ctx.store.insertCelular(celular(clienteId, n), 1000);
          if (!r.ok) throw new Error('insert');
          return r.celular.id;
        }),
      );
    }
    const credit = async (cliente_id: number, celular_id: number | null, monto: number) => {
      const r = await ctx.store.changeBalance({ cliente_id, celular_id, monto, motivo: 'r', actor: 'op' }, 1);
      if (!r.ok) throw new Error('credit');
      return r.movimiento_id;
    };
    const burst = (sends: Array<[NewMensaje, AcceptOptions]>) =>
      Promise.allSettled(sends.map(([m, o], i) => ctx.store.acceptMensaje(m, o, 10 + i))).then((all) =>
        all.map((r) => (r.status === 'fulfilled' ? r.value : ('threw' as const))),
      );
    const isOk = (r: AcceptResult | 'threw' | undefined): r is AcceptedMensaje => r !== undefined && r !== 'threw' && r.ok;
    const okIds = (results: Array<AcceptResult | 'threw'>) => results.filter(isOk).map((r) => r.mensaje.msg_id);

    it('a burst of one client is decided in arrival order against its balances and queues: exact charges, a ledger that adds up, each line in order', async () => {
      const c = await newCliente();
      const ids = await lines(c.id, ['525512345671', '525512345672', '525512345673']);
      await credit(c.id, ids[0]!, 5);
      const first = await credit(c.id, null, 30);
      // The helper numbers every line's ids from 1: each line gets ids of its own.
      const sends = ids.map((id, k) => {
        const next = messages(c.id, id);
        return () => {
          const m = next();
          return { ...m, msg_id: m.msg_id.replace('-8000-', `-800${k}-`) };
        };
      });
      const opts = { charge: true, maxPending: 15 };
      const all: Array<[NewMensaje, AcceptOptions]> = [];
      for (let i = 0; i < 20; i++) for (const send of sends) all.push([send(), opts]);
      const results = await burst(all);
      const accepted = results.filter(isOk);
      // 35 credits (5 on the first line, 30 global) and 15 places per line's queue.
      expect(accepted).toHaveLength(35);
      expect(results.filter((r) => r !== 'threw' && !r.ok && r.reason === 'saldo').length).toBeGreaterThan(0);
      expect(results).not.toContain('threw');
      // Whatever came first on a line was taken first: a refusal is never followed by an acceptance on the same line for the same reason.
      for (const id of ids) {
        const mine = results.filter((_, i) => all[i]![0].celular_id === id);
        const firstRefused = mine.findIndex((r) => r !== 'threw' && !r.ok && r.reason === 'cola_llena');
        if (firstRefused >= 0) expect(mine.slice(firstRefused).every((r) => r !== 'threw' && !r.ok)).toBe(true);
      }
      // The line's own balance paid first, then the global one; every answer says the balances it left.
      const line1 = accepted.filter((r) => r.mensaje.celular_id === ids[0]);
      expect(line1.map((r) => r.cargo).slice(0, 6)).toEqual([...Array(5).fill('celular'), 'global']);
      expect(await ctx.store.getCliente(c.id)).toMatchObject({ saldo_global: 0 });
      expect(await ctx.store.getCelular(ids[0]!)).toMatchObject({ saldo_actual: 0 });
      // Each line's queue counts exactly its accepted sends: one more is a full queue at that length, and only short of balance past it.
      for (const [k, id] of ids.entries()) {
        const n = accepted.filter((r) => r.mensaje.celular_id === id).length;
        expect(await ctx.store.acceptMensaje(sends[k]!(), { charge: true, maxPending: n }, 100)).toEqual({ ok: false, reason: 'cola_llena' });
        expect(await ctx.store.acceptMensaje(sends[k]!(), { charge: true, maxPending: n + 1 }, 100)).toEqual({ ok: false, reason: 'saldo' });
      }
      // The ledger: 35 charges between the last credit and the next, nothing else.
      expect(await credit(c.id, null, 1)).toBe(first + 36);
      // Each line's head is its first accepted send; one message.status per accepted send.
      const heads = await ctx.store.queueHeads();
      for (const id of ids) {
        const firstOk = results.find((r, i) => all[i]![0].celular_id === id && isOk(r));
        expect(heads.find((h) => h.celular_id === id)?.msg_id).toBe(isOk(firstOk) ? firstOk.mensaje.msg_id : undefined);
      }
      await ctx.settled();
      const statuses = (await ctx.store.eventsAfter(c.id, null, 100)).filter((e) => e.evento === 'message.status');
      expect(statuses.map((e) => e.data.msg_id).sort()).toEqual(okIds(results).sort());
    });

    it('an Idempotency-Key sent twice in a burst binds once; one bound before answers as a repeat', async () => {
      const c = await newCliente();
      const [id] = await lines(c.id, ['525512345671']);
      const send = messages(c.id, id!);
      const opts = (clave: string) => ({ charge: false, maxPending: null, idem: idem(clave) });
      const before = send();
      expect(await ctx.store.acceptMensaje(before, opts('k0'), 5)).toMatchObject({ ok: true });
      const results = await burst([
        [send(), opts('k1')],
        [send(), opts('k2')],
        [send(), opts('k1')],
        [send(), opts('k0')],
        [send(), { charge: false, maxPending: null }],
      ]);
      expect(results.map((r) => (r === 'threw' ? r : r.ok ? 'ok' : r.reason))).toEqual(['ok', 'ok', 'idempotencia', 'idempotencia', 'ok']);
      const k1 = isOk(results[0]) ? results[0].mensaje.msg_id : '';
      expect(await ctx.store.idemGet(c.id, 'k1', 20)).toMatchObject({ msg_id: k1, status: 200 });
      expect(await ctx.store.idemGet(c.id, 'k0', 20)).toMatchObject({ msg_id: before.msg_id });
      expect((await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 10 })).total).toBe(4);
    });

    it('a send that cannot be written fails alone; a line of another client is refused and changes nothing', async () => {
      const c = await newCliente();
      const other = await newCliente();
      const [mine] = await lines(c.id, ['525512345671']);
      const [theirs] = await lines(other.id, ['525512345672']);
      await credit(c.id, null, 10);
      const send = messages(c.id, mine!);
      const opts = { charge: true, maxPending: null };
      const twice = send();
      const results = await burst([
        [send(), opts],
        [twice, opts],
        [{ ...send(), celular_id: theirs! }, opts],
        [{ ...twice }, opts],
        [send(), opts],
      ]);
      expect(results[0]).toMatchObject({ ok: true });
      expect(results[2]).toEqual({ ok: false, reason: 'celular' });
      expect(results[4]).toMatchObject({ ok: true });
      // The same msg_id twice: one is written, the other fails (the store refuses a second row of that id).
      expect([results[1], results[3]].filter(isOk)).toHaveLength(1);
      expect([results[1], results[3]]).toContain('threw');
      expect(await ctx.store.getCliente(c.id)).toMatchObject({ saldo_global: 7 });
      expect(await ctx.store.getCelular(theirs!)).toMatchObject({ pendientes: 0 });
      expect((await ctx.store.listMensajes({ cliente_id: other.id, page: 1, por_pagina: 10 })).total).toBe(0);
    });
    it('two nodes sending the same keys at once: each key binds one message, the rest are repeats', async () => {
      const c = await newCliente();
      const [id] = await lines(c.id, ['525512345671']);
      const other = await ctx.node();
      const next = messages(c.id, id!);
      const opts = (clave: string) => ({ charge: false, maxPending: null, idem: idem(clave) });
      const claves = Array.from({ length: 20 }, (_, i) => `k${i}`);
      const results = await Promise.all(
        [ctx.store, other].flatMap((node, n) =>
          claves.map((k) => {
            const m = next();
            return node.acceptMensaje({ ...m, msg_id: m.msg_id.replace('-8000-', `-800${n}-`) }, opts(k), 10);
          }),
        ),
      );
      const won = results.filter(isOk);
      expect(won).toHaveLength(20);
      expect(results.filter((r) => !r.ok && r.reason === 'idempotencia')).toHaveLength(20);
      for (const k of claves) {
        const bound = await ctx.store.idemGet(c.id, k, 10);
        expect(won.map((w) => w.mensaje.msg_id)).toContain(bound?.msg_id);
      }
      expect((await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 10 })).total).toBe(20);
    });
    it('turns racing the records of sends on the same lines all complete (the counts rows are taken in one order)', async () => {
      const c = await newCliente();
      const ids = await lines(c.id, ['525512345671', '525512345672', '525512345673']);
      const sends = ids.map((id, k) => {
        const next = messages(c.id, id);
        return (modo: 'cola' | 'directo' = 'cola') => {
          const m = next(modo);
          return { ...m, msg_id: m.msg_id.replace('-8000-', `-800${k}-`) };
        };
      });
      const opts = { charge: false, maxPending: null };
      const direct = sends.flatMap((send) => Array.from({ length: 10 }, () => send('directo')));
      for (const m of direct) expect(await ctx.store.acceptMensaje(m, opts, 10)).toMatchObject({ ok: true });
      const queued = sends.flatMap((send) => Array.from({ length: 20 }, () => send()));
      const [accepted, recorded] = await Promise.all([
        Promise.all(queued.map((m, i) => ctx.store.acceptMensaje(m, opts, 20 + i))),
        Promise.all(direct.map((m, i) => ctx.store.markSent(m.msg_id, `G${i}`, 30 + i))),
      ]);
      expect(accepted.filter((r) => r.ok)).toHaveLength(60);
      expect(recorded.filter((r) => r?.estado === 'enviado')).toHaveLength(30);
      expect((await ctx.store.listMensajes({ cliente_id: c.id, estado: 'pendiente', page: 1, por_pagina: 1 })).total).toBe(60);
    });
  });
}
