import { describe, expect, it } from 'vitest';
import type { AcceptItem } from '../../src/core/sending/accept-turn.js';
import { slotClaim } from '../../src/core/sending/caps.js';
import type { AcceptOptions, AcceptResult, NewMensaje } from '../../src/core/ports/messages.js';
import type { Store } from '../../src/core/ports/store.js';
import { acceptBatch } from '../../src/store/postgres/accept.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { acceptAll } from '../../src/store/sqlite/accept.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * The acceptance statements themselves, with a batch of one and of many: on
 * PostgreSQL one transaction of READ and WRITE over arrays (postgres/accept.ts),
 * on SQLite the same prepared statements for each send in one IMMEDIATE
 * transaction (sqlite/accept.ts). Each send is decided in order against what
 * the ones before it left; refusals write nothing.
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: the acceptance statements over a batch`, () => {
    const ctx = storeEachTest(adapter);
    const batch = async (items: AcceptItem[]): Promise<AcceptResult[]> =>
      adapter.name === 'postgres' ? acceptBatch((ctx.store as PgStore).db, items) : acceptAll((ctx.store as SqliteStore).db, items);
    const idem = (clave: string) => ({ clave, huella: 'h', expira_at: 1_000_000, answer: () => ({ status: 200, body: '{}' }) });
    const verdict = (r: AcceptResult) => (r.ok ? (r.cargo ?? 'ok') : r.reason);

    async function line(store: Store, clienteId: number, numero: string, caps: Partial<ReturnType<typeof celular>> = {}) {
      const r = await store.insertCelular({ ...celular(clienteId, numero), ...caps }, 1000);
      if (!r.ok) throw new Error('insert');
      return r.celular;
    }
    const credit = async (cliente_id: number, celular_id: number | null, monto: number) => {
      const r = await ctx.store.changeBalance({ cliente_id, celular_id, monto, motivo: 'r', actor: 'op' }, 1);
      if (!r.ok) throw new Error('credit');
    };
    /** A line's sends with msg_ids of its own (the helper numbers every line's from 1). */
    const sendsOf = (clienteId: number, celularId: number, k: number) => {
      const next = messages(clienteId, celularId);
      return (modo: 'cola' | 'directo' = 'cola'): NewMensaje => {
        const m = next(modo);
        return { ...m, msg_id: m.msg_id.replace('-8000-', `-80${String(k).padStart(2, '0')}-`) };
      };
    };
    /** Each balance equals the sum of its ledger rows, and each row says the balance it left. */
    async function ledgerAddsUp(clienteId: number, lineIds: number[]) {
      const { rows } = await ctx.store.listMovimientos({ cliente_id: clienteId, page: 1, por_pagina: 500 });
      const oldestFirst = [...rows].sort((a, b) => a.id - b.id);
      for (const id of [null, ...lineIds]) {
        const mine = oldestFirst.filter((r) => r.celular_id === id);
        let sum = 0;
        for (const r of mine) expect(r.saldo_resultante).toBe((sum += r.monto));
        const balance = id === null ? (await ctx.store.getCliente(clienteId))!.saldo_global : (await ctx.store.getCelular(id))!.saldo_actual;
        expect(sum).toBe(balance);
      }
      return rows.length;
    }
    const statuses = async (clienteId: number) => {
      await ctx.settled();
      return (await ctx.store.eventsAfter(clienteId, null, 500)).filter((e) => e.evento === 'message.status').map((e) => String(e.data.msg_id));
    };

    it('a batch of one: the message, its charge, its ledger row, its event; a refused one writes nothing', async () => {
      const c = await newCliente(ctx.store);
      const l = await line(ctx.store, c.id, '525512345671');
      await credit(c.id, null, 1);
      const send = sendsOf(c.id, l.id, 0);
      const first = send();
      const [r] = await batch([{ m: first, opts: { charge: true, maxPending: null }, now: 10 }]);
      expect(r).toMatchObject({ ok: true, cargo: 'global', saldo_global: 0, mensaje: { msg_id: first.msg_id, estado: 'pendiente', cobrado: 1 } });
      expect(await ctx.store.getMensaje(first.msg_id)).toMatchObject({ estado: 'pendiente', cargo: 'global', created_at: 10 });
      expect(await ctx.store.getCelular(l.id)).toMatchObject({ pendientes: 1 });
      expect(await ledgerAddsUp(c.id, [l.id])).toBe(2);
      const [refused] = await batch([{ m: send(), opts: { charge: true, maxPending: null, idem: idem('k') }, now: 11 }]);
      expect(refused).toEqual({ ok: false, reason: 'saldo' });
      expect((await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 10 })).total).toBe(1);
      expect(await ctx.store.getCelular(l.id)).toMatchObject({ pendientes: 1 });
      expect(await ctx.store.idemGet(c.id, 'k', 20)).toBeNull();
      expect(await ledgerAddsUp(c.id, [l.id])).toBe(2);
      expect(await statuses(c.id)).toEqual([first.msg_id]);
    });

    it('a batch of 50 over two clients and four lines: each send decided in order (saldo, cola_llena, idempotencia, cap), all written at once', async () => {
      const a = await newCliente(ctx.store);
      const b = await newCliente(ctx.store);
      const a1 = await line(ctx.store, a.id, '525512345671');
      const a2 = await line(ctx.store, a.id, '525512345672');
      const b1 = await line(ctx.store, b.id, '525512345673', { max_envios_por_minuto: 12 });
      const b2 = await line(ctx.store, b.id, '525512345674');
      await credit(a.id, a1.id, 3);
      await credit(a.id, null, 10);
      await credit(b.id, null, 100);
      const [toA1, toA2, toB1, toB2] = [a1, a2, b1, b2].map((l, k) => sendsOf(l.cliente_id, l.id, k));
      const bound = toB2!();
      const keyed = (clave: string): AcceptOptions => ({ charge: false, maxPending: null, idem: idem(clave) });
      expect((await batch([{ m: bound, opts: keyed('k0'), now: 5 }]))[0]).toMatchObject({ ok: true });

      // Each line's sends in its order, the lines interleaved.
      const now = 100;
      const direct = (): AcceptOptions => ({ charge: true, maxPending: null, slot: slotClaim(b1, now, 30_000) });
      const perLine: Array<Array<[NewMensaje, AcceptOptions, string]>> = [
        // a1: 3 on the line's balance, 10 on the client's, then none left.
        Array.from({ length: 20 }, (_, i) => [toA1!(), { charge: true, maxPending: null }, i < 3 ? 'celular' : i < 13 ? 'global' : 'saldo']),
        // a2: a queue of 5 at most.
        Array.from({ length: 10 }, (_, i) => [toA2!(), { charge: false, maxPending: 5 }, i < 5 ? 'ok' : 'cola_llena']),
        // b1: direct sends, 12 a minute.
        Array.from({ length: 15 }, (_, i) => [toB1!('directo'), direct(), i < 12 ? 'global' : 'cap']),
        // b2: keys, one bound before the batch, one twice in it.
        [
          [toB2!(), keyed('k1'), 'ok'],
          [toB2!(), keyed('k2'), 'ok'],
          [toB2!(), keyed('k1'), 'idempotencia'],
          [toB2!(), keyed('k0'), 'idempotencia'],
          [toB2!(), keyed('k3'), 'ok'],
        ],
      ];
      const all: Array<[NewMensaje, AcceptOptions, string]> = [];
      for (let i = 0; all.length < 50; i++) for (const sends of perLine) if (sends[i]) all.push(sends[i]!);
      const results = await batch(all.map(([m, opts]) => ({ m, opts, now })));
      expect(results.map(verdict)).toEqual(all.map(([, , want]) => want));
      const accepted = results.flatMap((r) => (r.ok ? [r.mensaje.msg_id] : []));
      expect(accepted).toHaveLength(33);

      // Rows: every accepted message, pending, with its slot for a direct one; nothing of a refused one.
      expect((await ctx.store.listMensajes({ cliente_id: a.id, page: 1, por_pagina: 1 })).total).toBe(18);
      expect((await ctx.store.listMensajes({ cliente_id: b.id, page: 1, por_pagina: 1 })).total).toBe(12 + 3 + 1);
      for (const [i, r] of results.entries()) {
        const row = await ctx.store.getMensaje(all[i]![0].msg_id);
        if (r.ok) expect(row).toMatchObject({ estado: 'pendiente', cupo_at: all[i]![1].slot ? now + 30_000 : null });
        else expect(row).toBeNull();
      }
      // Balances and queues as the verdicts left them; each answer says what its charge left.
      expect(await ctx.store.getCliente(a.id)).toMatchObject({ saldo_global: 0 });
      expect(await ctx.store.getCliente(b.id)).toMatchObject({ saldo_global: 88 });
      expect(await ctx.store.getCelular(a1.id)).toMatchObject({ saldo_actual: 0, pendientes: 13 });
      expect(await ctx.store.getCelular(a2.id)).toMatchObject({ pendientes: 5 });
      expect(await ctx.store.getCelular(b1.id)).toMatchObject({ pendientes: 0 });
      expect(await ctx.store.getCelular(b2.id)).toMatchObject({ pendientes: 4 });
      const leftB = results.flatMap((r, i) => (r.ok && all[i]![0].celular_id === b1.id ? [r.saldo_global] : []));
      expect(leftB).toEqual(Array.from({ length: 12 }, (_, i) => 99 - i));
      // The ledger: 13 charges of a, 12 of b, each row chained to its balance.
      expect(await ledgerAddsUp(a.id, [a1.id, a2.id])).toBe(2 + 13);
      expect(await ledgerAddsUp(b.id, [b1.id, b2.id])).toBe(1 + 12);
      // Keys: each bound to its first send.
      const firstOf = (clave: string) => all.find(([, o]) => o.idem?.clave === clave)![0].msg_id;
      for (const k of ['k1', 'k2', 'k3']) expect(await ctx.store.idemGet(b.id, k, 200)).toMatchObject({ msg_id: firstOf(k) });
      expect(await ctx.store.idemGet(b.id, 'k0', 200)).toMatchObject({ msg_id: bound.msg_id });
      // One message.status per accepted message, in the batch's order.
      expect(await statuses(a.id)).toEqual(accepted.filter((id) => all.find(([m]) => m.msg_id === id)![0].cliente_id === a.id));
      expect(await statuses(b.id)).toEqual([bound.msg_id, ...accepted.filter((id) => all.find(([m]) => m.msg_id === id)![0].cliente_id === b.id)]);

      // The caps count what the batch took: the line's next direct send is refused, a queued one to b2 is not.
      expect(verdict((await batch([{ m: toB1!('directo'), opts: direct(), now: now + 1 }]))[0]!)).toBe('cap');
      expect(verdict((await batch([{ m: toB2!(), opts: { charge: true, maxPending: null }, now: now + 1 }]))[0]!)).toBe('global');
    });

    it('the accepted row is the stored row, every column (queued, direct with a slot, media, a retry)', async () => {
      const c = await newCliente(ctx.store);
      const l = await line(ctx.store, c.id, '525512345671', { max_envios_por_minuto: 5 });
      await credit(c.id, l.id, 10);
      const send = sendsOf(c.id, l.id, 0);
      const queued = send();
      const direct = { ...send('directo'), media: { url: 'https://x.mx/a.jpg', filename: 'a.jpg' }, tipo: 'imagen' as const, texto: null };
      const retry = { ...send(), reintento_de: queued.msg_id, expira_at: 9_000 };
      const rs = await batch([
        { m: queued, opts: { charge: false, maxPending: null }, now: 50 },
        { m: direct, opts: { charge: true, maxPending: null, slot: slotClaim(l, 51, 30_000) }, now: 51 },
        { m: retry, opts: { charge: true, maxPending: 10 }, now: 52 },
      ]);
      for (const r of rs) {
        if (!r.ok) throw new Error(r.reason);
        const stored = await ctx.store.getMensaje(r.mensaje.msg_id);
        // Both answer the row they wrote as store/accepted-row.ts builds it: on SQLite exactly what SELECT * reads back; PostgreSQL's getMensaje reads fewer columns (COLS).
        if (adapter.name === 'sqlite') expect(Object.entries(r.mensaje)).toEqual(Object.entries(stored!));
        else expect(r.mensaje).toMatchObject(stored!);
      }
      expect(rs.map((r) => r.ok && [r.mensaje.cobrado, r.mensaje.cargo, r.mensaje.cupo_at !== null])).toEqual([
        [0, null, false],
        [1, 'celular', true],
        [1, 'celular', false],
      ]);
    });

    it('two nodes taking slots of one capped line at once, in turns of many and of one: exactly the cap, each with a key of its own', async () => {
      const c = await newCliente(ctx.store);
      const l = await line(ctx.store, c.id, '525512345671', { max_envios_por_minuto: 12 });
      const other = await ctx.node();
      const results = await Promise.all(
        [ctx.store, other].flatMap((node, n) => {
          const send = sendsOf(c.id, l.id, n);
          return Array.from({ length: 15 }, (_, i) =>
            node.acceptMensaje(send('directo'), { charge: false, maxPending: null, slot: slotClaim(l, 100, 30_000), idem: idem(`k${n}.${i}`) }, 100),
          );
        }),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(12);
      expect(results.filter((r) => !r.ok).map(verdict)).toEqual(Array(18).fill('cap'));
      expect((await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1 })).total).toBe(12);
    });
  });
}
