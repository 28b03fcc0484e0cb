import { describe, expect, it } from 'vitest';
import type { MensajeEstadoRow, MensajeRow, ReceiptEstado } from '../../src/core/ports/model.js';
import type { Store } from '../../src/core/ports/store.js';
import * as pgT from '../../src/store/postgres/transitions.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import * as liteT from '../../src/store/sqlite/transitions.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { ADAPTERS, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * Each transition's statement (PostgreSQL) or statements (SQLite) called
 * directly with a batch of one and a batch of 50 over 5 lines (D-138): the
 * rows, events, queue counters, counts and ledger each batch wrote are what
 * that many calls one after another would have written.
 */

/** The batch functions of a dialect, called as the store's turns call them. */
interface Batches {
  markSent(items: Array<{ msgId: string; gid: string; now: number }>): Promise<Array<MensajeEstadoRow | null>>;
  advance(items: Array<{ celularId: number; gid: string; estado: 'entregado' | 'leido'; now: number }>): Promise<Array<MensajeEstadoRow | null>>;
  park(items: Array<{ celularId: number; gid: string; estado: ReceiptEstado; now: number }>): Promise<boolean[]>;
  fail(items: Array<{ msgId: string; error: string; clase: 'no_enviado'; now: number }>): Promise<Array<MensajeRow | null>>;
}

const afterOf = (r: unknown): MensajeEstadoRow | null => (r && typeof r === 'object' && 'after' in r ? (r as { after: MensajeEstadoRow }).after : null);

function batchesOf(name: string, store: Store): Batches {
  if (name === 'postgres') {
    const db = (store as PgStore).db;
    return {
      markSent: (items) => pgT.markSent(db, items),
      advance: async (items) => (await pgT.advance(db, items)).map(afterOf),
      park: (items) => pgT.park(db, items),
      fail: (items) => pgT.failPending(db, items),
    };
  }
  const db = (store as SqliteStore).db;
  return {
    markSent: async (items) => liteT.markSent(db, items),
    advance: async (items) => liteT.receipts(db, items).map(afterOf),
    park: async (items) => liteT.receipts(db, items).map((r) => r === 'parked'),
    fail: async (items) => liteT.failMensajes(db, items),
  };
}

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: each transition over a batch of 1 and of 50`, () => {
    const ctx = storeEachTest(adapter);

    /** A client with 1,000 credits and `lines` lines; `accept(n)` queues n charged messages spread over them, in order. */
    async function setup(lines: number) {
      const c = await newCliente(ctx.store);
      const top = await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 1000, motivo: 'r', actor: 'op' }, 1);
      if (!top.ok) throw new Error('top-up');
      const ids: number[] = [];
      for (let k = 0; k < lines; k++) {
        const r = await ctx.store.insertCelular(celular(c.id, `52551234560${k}`), 1);
        if (!r.ok) throw new Error('insert');
        ids.push(r.celular.id);
      }
      const next = ids.map((id) => messages(c.id, id));
      let made = 0;
      const accept = async (n: number) => {
        const out: Array<{ msgId: string; celularId: number }> = [];
        for (let j = 0; j < n; j++, made++) {
          const k = made % ids.length;
          const m = next[k]!();
          const msgId = m.msg_id.replace('-8000-', `-80${String(k).padStart(2, '0')}-`);
          expect(await ctx.store.acceptMensaje({ ...m, msg_id: msgId }, { charge: true, maxPending: null }, 10)).toMatchObject({ ok: true });
          out.push({ msgId, celularId: ids[k]! });
        }
        return out;
      };
      return { clienteId: c.id, lines: ids, accept };
    }

    /** The client's message.status events since the last call, as [msg_id, estado_anterior, estado], in log order. */
    function log(clienteId: number) {
      let after: string | null = null;
      return async () => {
        await ctx.settled();
        const evs = await ctx.store.eventsAfter(clienteId, after, 10_000);
        if (evs.length > 0) after = evs.at(-1)!.id;
        return evs.filter((e) => e.evento === 'message.status').map((e) => [e.data.msg_id, e.data.estado_anterior, e.data.estado]);
      };
    }
    const total = async (clienteId: number, estado: MensajeRow['estado']) =>
      (await ctx.store.listMensajes({ cliente_id: clienteId, estado, page: 1, por_pagina: 1 })).total;
    /** The ledger's rows sum to the balance, and how many there are. */
    async function ledger(clienteId: number) {
      const { rows } = await ctx.store.listMovimientos({ cliente_id: clienteId, page: 1, por_pagina: 1000 });
      expect(rows.reduce((s, r) => s + r.monto, 0)).toBe((await ctx.store.getCliente(clienteId))!.saldo_global);
      return rows.length;
    }

    for (const n of [1, 50]) {
      it(`${n}: sends recorded, receipts advanced, receipts parked then applied by the record, failures refunded`, async () => {
        const b = batchesOf(adapter.name, ctx.store);
        const { clienteId, lines, accept } = await setup(n === 1 ? 1 : 5);
        const events = log(clienteId);
        const gid = (m: { msgId: string }) => `G-${m.msgId.slice(-16)}`;

        // Sends recorded: each row sent under its id, its event, its line's queue emptied, its counts moved.
        const sent = await accept(n);
        await events();
        const recorded = await b.markSent(sent.map((m, k) => ({ msgId: m.msgId, gid: gid(m), now: 100 + k })));
        recorded.forEach((r, k) => expect(r).toMatchObject({ msg_id: sent[k]!.msgId, estado: 'enviado', gateway_msg_id: gid(sent[k]!), enviado_at: 100 + k }));
        expect(await events()).toEqual(sent.map((m) => [m.msgId, 'pendiente', 'enviado']));
        expect(await ctx.store.queueSizes(lines)).toEqual(lines.map((id) => ({ celular_id: id, pendientes: 0 })));
        expect([await total(clienteId, 'pendiente'), await total(clienteId, 'enviado')]).toEqual([0, n]);
        expect(await ctx.store.getMensajeByGatewayId(gid(sent[n - 1]!))).toMatchObject({ msg_id: sent[n - 1]!.msgId });
        // Again: none is pending any more.
        expect(await b.markSent(sent.map((m) => ({ msgId: m.msgId, gid: gid(m), now: 200 })))).toEqual(sent.map(() => null));

        // Receipts advanced: odd places delivered, even places read (two steps from enviado).
        const estadoOf = (k: number) => (k % 2 === 0 ? 'leido' : 'entregado');
        const moved = await b.advance(sent.map((m, k) => ({ celularId: m.celularId, gid: gid(m), estado: estadoOf(k), now: 300 + k })));
        moved.forEach((r, k) =>
          expect(r).toMatchObject({ msg_id: sent[k]!.msgId, estado: estadoOf(k), entregado_at: 300 + k, leido_at: k % 2 === 0 ? 300 + k : null }),
        );
        expect(await events()).toEqual(sent.flatMap((m, k) => [[m.msgId, 'enviado', 'entregado'], ...(k % 2 === 0 ? [[m.msgId, 'entregado', 'leido']] : [])]));
        const leidos = sent.filter((_, k) => k % 2 === 0).length;
        expect([await total(clienteId, 'enviado'), await total(clienteId, 'entregado'), await total(clienteId, 'leido')]).toEqual([0, n - leidos, leidos]);

        // Receipts parked for ids no message has yet; the sends' record then applies them.
        const later = await accept(n);
        await events();
        const parked = await b.park(later.map((m) => ({ celularId: m.celularId, gid: gid(m), estado: 'entregado', now: 400 })));
        expect(parked).toEqual(later.map(() => true));
        expect(await events()).toEqual([]);
        const applied = await b.markSent(later.map((m, k) => ({ msgId: m.msgId, gid: gid(m), now: 500 + k })));
        applied.forEach((r, k) => expect(r).toMatchObject({ msg_id: later[k]!.msgId, estado: 'entregado', enviado_at: 500 + k, entregado_at: 500 + k }));
        // Each message's steps in order (PostgreSQL writes the batch's records first, then the parked receipts it applies).
        const steps = await events();
        expect(later.map((m) => steps.filter((e) => e[0] === m.msgId))).toEqual(
          later.map((m) => [
            [m.msgId, 'pendiente', 'enviado'],
            [m.msgId, 'enviado', 'entregado'],
          ]),
        );
        expect(steps).toHaveLength(2 * n);

        // Failures: each pending message ends in error, refunded once; the ledger still sums to the balance.
        const doomed = await accept(n);
        await events();
        const before = (await ctx.store.getCliente(clienteId))!.saldo_global;
        const rows = await ledger(clienteId);
        const failed = await b.fail(doomed.map((m) => ({ msgId: m.msgId, error: 'no', clase: 'no_enviado', now: 600 })));
        failed.forEach((r, k) => expect(r).toMatchObject({ msg_id: doomed[k]!.msgId, estado: 'error', error: 'no', error_clase: 'no_enviado', cobrado: 0 }));
        expect(await events()).toEqual(doomed.map((m) => [m.msgId, 'pendiente', 'error']));
        expect((await ctx.store.getCliente(clienteId))!.saldo_global).toBe(before + n);
        expect(await ledger(clienteId)).toBe(rows + n);
        expect(await ctx.store.queueSizes(lines)).toEqual(lines.map((id) => ({ celular_id: id, pendientes: 0 })));
        expect([await total(clienteId, 'pendiente'), await total(clienteId, 'error')]).toEqual([0, n]);
        // Again: nothing left to fail, nothing refunded twice.
        expect(await b.fail(doomed.map((m) => ({ msgId: m.msgId, error: 'no', clase: 'no_enviado', now: 700 })))).toEqual(doomed.map(() => null));
        expect(await ledger(clienteId)).toBe(rows + n);
      }, 60_000);
    }
  });
}
