import { describe, expect, it } from 'vitest';
import type { AcceptedMensaje, AcceptOptions, AcceptResult, NewMensaje } from '../../src/core/ports/messages.js';
import type { Store } from '../../src/core/ports/store.js';
import { PEEK, UNLOCKED_MAX } from '../../src/store/postgres/accept.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { ADAPTERS, celular, messages, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/**
 * Sends accepted together: concurrent acceptances go through the store's
 * group commit (a SQLite transaction of several, a PostgreSQL turn of
 * several in two statements); each is decided as if it were alone, in the
 * order it arrived, and one that cannot be written fails alone. On
 * PostgreSQL a turn without keys is first tried unlocked (D-83): what a
 * concurrent change between its read and its write does to it is below.
 */

/**
 * Runs `between` once, after the PostgreSQL store's next unlocked read of a
 * turn has returned and before the turn sees it: a change made by someone
 * else between the turn's read and its guarded write.
 */
function betweenReadAndWrite(store: PgStore, between: () => Promise<unknown>): void {
  let armed = true;
  const wrapped = new WeakSet<object>();
  store.db.pool.on('acquire', (client) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    Object.assign(client, {
      query: (text: unknown, values: unknown, cb: unknown) => {
        if (!armed || text !== PEEK || typeof cb !== 'function') return query(text, values, cb);
        armed = false;
        const done = cb as (err: unknown, res: unknown) => void;
        return query(
          text,
          values,
          (err: unknown, res: unknown) =>
            void between().then(
              () => done(err, res),
              (e: unknown) => done(e, undefined),
            ),
        );
      },
    });
  });
}
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

    /** On PostgreSQL, each balance of the client equals the sum of its ledger rows, and each ledger row carries the balance it left. */
    async function ledgerAddsUp(clienteId: number, lineIds: number[]) {
      if (adapter.name !== 'postgres') return;
      const db = (ctx.store as PgStore).db;
      const sums = await db.q<{ celular_id: number | null; total: number; chained: boolean }>(
        `SELECT celular_id, SUM(monto)::bigint AS total,
           bool_and(saldo_resultante = s) AS chained
         FROM (SELECT celular_id, monto, saldo_resultante, SUM(monto) OVER (PARTITION BY celular_id ORDER BY id) AS s
               FROM movimientos_saldo WHERE cliente_id = $1) m GROUP BY celular_id`,
        [clienteId],
      );
      for (const s of sums) expect(s.chained).toBe(true);
      const total = (id: number | null) => sums.find((s) => s.celular_id === id)?.total ?? 0;
      expect(total(null)).toBe((await ctx.store.getCliente(clienteId))!.saldo_global);
      for (const id of lineIds) expect(total(id)).toBe((await ctx.store.getCelular(id))!.saldo_actual);
    }

    it('two nodes accepting on the same lines at once: balances and queue limits exact, balances equal their ledgers', async () => {
      const c = await newCliente();
      const ids = await lines(c.id, ['525512345671', '525512345672']);
      await credit(c.id, ids[0]!, 5);
      await credit(c.id, null, 20);
      const other = await ctx.node();
      const sends = ids.map((id, k) => {
        const next = messages(c.id, id);
        return (n: number) => {
          const m = next();
          return { ...m, msg_id: m.msg_id.replace('-8000-', `-80${n}${k}-`) };
        };
      });
      const opts = { charge: true, maxPending: 15 };
      // In rounds: each node's turns stay small (one send on each line), so on PostgreSQL they are tried unlocked, racing the other node's.
      const results: AcceptResult[] = [];
      for (let i = 0; i < 20; i++) {
        results.push(...(await Promise.all([ctx.store, other].flatMap((node: Store, n) => sends.map((send) => node.acceptMensaje(send(n), opts, 10 + i))))));
      }
      const accepted = results.filter(isOk);
      // 25 credits, 30 places in the queues: every credit is spent whatever the order, and no queue holds more than 15.
      expect(accepted).toHaveLength(25);
      expect(results.filter((r) => !r.ok && r.reason !== 'saldo' && r.reason !== 'cola_llena')).toEqual([]);
      expect(await ctx.store.getCliente(c.id)).toMatchObject({ saldo_global: 0 });
      for (const id of ids) {
        const n = accepted.filter((r) => r.mensaje.celular_id === id).length;
        expect(n).toBeLessThanOrEqual(15);
        expect(await ctx.store.getCelular(id)).toMatchObject({ pendientes: n, ...(id === ids[0] ? { saldo_actual: 0 } : {}) });
      }
      // Each answer's balances are those its charge left: all different, counting down to 0.
      const left = accepted.filter((r) => r.cargo === 'global').map((r) => r.saldo_global);
      expect(left.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect((await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1 })).total).toBe(25);
      await ledgerAddsUp(c.id, ids);
      if (adapter.name === 'postgres') expect((ctx.store as PgStore).acceptPaths.unlocked).toBeGreaterThan(0);
    });

    if (adapter.name === 'postgres') {
      it('a small turn without keys is unlocked (two round trips, no transaction); one with a refusal, a key or many sends is taken under the locks', async () => {
        const c = await newCliente();
        const [id] = await lines(c.id, ['525512345671']);
        await credit(c.id, null, 3);
        const send = messages(c.id, id!);
        const paths = (ctx.store as PgStore).acceptPaths;
        for (let i = 0; i < 3; i++)
          expect(await ctx.store.acceptMensaje(send(), { charge: true, maxPending: null }, 10 + i)).toMatchObject({ ok: true, saldo_global: 2 - i });
        expect(paths).toEqual({ unlocked: 3, refused: 0, missed: 0 });
        expect(await ctx.store.acceptMensaje(send(), { charge: true, maxPending: null }, 20)).toEqual({ ok: false, reason: 'saldo' });
        expect(paths).toEqual({ unlocked: 3, refused: 1, missed: 0 });
        // With a key: the locked path, not counted.
        expect(await ctx.store.acceptMensaje(send(), { charge: false, maxPending: null, idem: idem('k') }, 21)).toMatchObject({ ok: true });
        expect(paths).toEqual({ unlocked: 3, refused: 1, missed: 0 });
        // A burst: the first send is a turn alone (unlocked), the others one turn, larger than UNLOCKED_MAX (locked); then turns of its size.
        const free = { charge: false, maxPending: null };
        const burst = await Promise.all(Array.from({ length: UNLOCKED_MAX + 2 }, (_, i) => ctx.store.acceptMensaje(send(), free, 30 + i)));
        expect(burst.every((r) => r.ok)).toBe(true);
        expect(paths).toEqual({ unlocked: 4, refused: 1, missed: 0 });
        await Promise.all(Array.from({ length: UNLOCKED_MAX + 1 }, (_, i) => ctx.store.acceptMensaje(send(), free, 40 + i)));
        expect(paths).toEqual({ unlocked: 6, refused: 1, missed: 0 });
        await ledgerAddsUp(c.id, [id!]);
      });

      it('a change by another node between the unlocked read and the write: the guard misses, nothing is written, the locked path answers exactly', async () => {
        const c = await newCliente();
        const [id] = await lines(c.id, ['525512345671']);
        await credit(c.id, null, 1);
        const store = ctx.store as PgStore;
        const other = await ctx.node();
        const mine = messages(c.id, id!);
        const theirs = (() => {
          const next = messages(c.id, id!);
          return () => {
            const m = next();
            return { ...m, msg_id: m.msg_id.replace('-8000-', '-8001-') };
          };
        })();
        const charged = { charge: true, maxPending: null };

        // A top-up: read 1, written over 6: the send pays from 6.
        betweenReadAndWrite(store, () => other.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 2));
        const first = mine();
        expect(await store.acceptMensaje(first, charged, 10)).toMatchObject({ ok: true, cargo: 'global', saldo_global: 5 });
        expect(store.acceptPaths).toEqual({ unlocked: 0, refused: 0, missed: 1 });

        // Another node spends the balance read: refused for it, not charged below zero.
        betweenReadAndWrite(store, () => Promise.all(Array.from({ length: 5 }, (_, i) => other.acceptMensaje(theirs(), charged, 11 + i))));
        expect(await store.acceptMensaje(mine(), charged, 20)).toEqual({ ok: false, reason: 'saldo' });
        expect(store.acceptPaths).toEqual({ unlocked: 0, refused: 0, missed: 2 });
        expect(await store.getCliente(c.id)).toMatchObject({ saldo_global: 0 });

        // Another node fills the queue read with one place left.
        betweenReadAndWrite(store, () => other.acceptMensaje(theirs(), { charge: false, maxPending: null }, 21));
        expect(await store.acceptMensaje(mine(), { charge: false, maxPending: 7 }, 22)).toEqual({ ok: false, reason: 'cola_llena' });
        expect(store.acceptPaths).toEqual({ unlocked: 0, refused: 0, missed: 3 });
        expect(await store.getCelular(id!)).toMatchObject({ pendientes: 7 });

        // A send recorded meanwhile frees a place: the refusal read unlocked is not the answer, the locked read's acceptance is.
        betweenReadAndWrite(store, () => other.markSent(first.msg_id, 'G1', 23));
        expect(await store.acceptMensaje(mine(), { charge: false, maxPending: 7 }, 24)).toMatchObject({ ok: true });
        expect(store.acceptPaths).toEqual({ unlocked: 0, refused: 1, missed: 3 });
        expect(await store.getCelular(id!)).toMatchObject({ pendientes: 7 });

        // Nothing of a missed write was kept: 1 + 5 accepted on the other node, 1 + 1 here, one message.status each.
        expect((await store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1 })).total).toBe(8);
        await ctx.settled();
        expect((await store.eventsAfter(c.id, null, 100)).filter((e) => e.evento === 'message.status' && e.data.estado === 'pendiente')).toHaveLength(8);
        await ledgerAddsUp(c.id, [id!]);
      });
    }
  });
}
