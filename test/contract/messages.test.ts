import { describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import type { HistoryFilter } from '../../src/core/ports/messages.js';
import { ADAPTERS, celular, messages, newCliente as newClienteOf, storeEachTest } from './adapters.js';

/** Acceptance with its charge, send slots, history totals. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: MessagesStore contract`, () => {
    const ctx = storeEachTest(adapter);
    const newCliente = (max: number | null = null) => newClienteOf(ctx.store, max);

    it('accepts messages atomically: a refusal changes nothing, the queue depth follows every estado change', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      const msg = messages(c.id, cel.celular.id);
      const opts = { charge: true, maxPending: 2 };
      expect(await ctx.store.acceptMensaje(msg(), opts, 1)).toEqual({ ok: false, reason: 'saldo' });
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      const a = msg();
      expect(await ctx.store.acceptMensaje(a, opts, 2)).toMatchObject({ ok: true, cargo: 'global', saldo_global: 4 });
      expect(await ctx.store.acceptMensaje(msg(), opts, 3)).toMatchObject({ ok: true });
      expect(await ctx.store.acceptMensaje(msg(), opts, 4)).toEqual({ ok: false, reason: 'cola_llena' });
      expect(await ctx.store.acceptMensaje(msg('directo'), opts, 4)).toMatchObject({ ok: true });
      expect((await ctx.store.getCliente(c.id))?.saldo_global).toBe(2);
      expect(await ctx.store.markSent(a.msg_id, 'G1', 5)).toMatchObject({ estado: 'enviado', gateway_msg_id: 'G1' });
      expect(await ctx.store.markSent(a.msg_id, 'G2', 6)).toBeNull();
      const b = msg();
      expect(await ctx.store.acceptMensaje(b, opts, 7)).toMatchObject({ ok: true, saldo_global: 1 });
      // A send recorded meanwhile is not failed by a send-side failure (another node's recovery): it stays sent and charged.
      expect(await ctx.store.failMensaje(a.msg_id, 'x', 'rechazado', 8)).toBeNull();
      expect(await ctx.store.getMensaje(a.msg_id)).toMatchObject({ estado: 'enviado', cobrado: 1 });
      expect((await ctx.store.getCliente(c.id))?.saldo_global).toBe(1);
      const failed = await ctx.store.failMensaje(b.msg_id, 'x', 'no_enviado', 8);
      expect(failed).toMatchObject({ estado: 'error', error: 'x', error_clase: 'no_enviado' });
      expect(failed).toMatchObject({ estado: 'error', cobrado: 0 });
      expect(await ctx.store.failMensaje(b.msg_id, 'x', 'rechazado', 9)).toBeNull();
      expect((await ctx.store.getCliente(c.id))?.saldo_global).toBe(2);
    });

    it('counts the messages of every client created since a time, by estado (the overview)', async () => {
      expect(await ctx.store.recentByEstado(0)).toEqual([]);
      const opts = { charge: false, maxPending: 100 };
      const ids: string[] = [];
      for (const [k, numero] of ['525512345671', '525512345672'].entries()) {
        const c = await newCliente();
        const cel = await ctx.store.insertCelular(celular(c.id, numero), 1000);
        if (!cel.ok) throw new Error('insert');
        const msg = messages(c.id, cel.celular.id);
        for (const at of [1000, 5000, 6000]) {
          // Each client's own ids: the helper numbers from 1 for every line.
          const m = { ...msg(), msg_id: `00000000-0000-4000-800${k}-${String(at).padStart(12, '0')}` };
          ids.push(m.msg_id);
          expect(await ctx.store.acceptMensaje(m, opts, at)).toMatchObject({ ok: true });
        }
      }
      await ctx.store.markSent(ids[5]!, 'G1', 6001);
      expect(await ctx.store.recentByEstado(5000)).toEqual([
        { estado: 'enviado', n: 1 },
        { estado: 'pendiente', n: 3 },
      ]);
      expect(await ctx.store.recentByEstado(6001)).toEqual([]);
    });

    it("the line's balance pays first, then the client's; a refused send (cap, full queue, no balance) writes nothing and leaves its key free", async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular({ ...celular(c.id, '525512345678'), max_envios_por_minuto: 1 }, 1000);
      if (!cel.ok) throw new Error('insert');
      const id = cel.celular.id;
      const msg = messages(c.id, id);
      const credit = async (celularId: number | null) => {
        const r = await ctx.store.changeBalance({ cliente_id: c.id, celular_id: celularId, monto: 1, motivo: 'r', actor: 'op' }, 1);
        if (!r.ok) throw new Error('credit');
        return r.movimiento_id;
      };
      await credit(id);
      const first = await credit(null);
      const t = 100_000;
      const slot = slotClaim(cel.celular, t, 60_000);
      const idem = (clave: string) => ({ clave, huella: 'h', expira_at: t + 1000, answer: () => ({ status: 200, body: '{}' }) });
      expect(await ctx.store.acceptMensaje(msg(), { charge: true, maxPending: 2, idem: idem('k1') }, t)).toMatchObject({
        ok: true,
        cargo: 'celular',
        saldo_celular: 0,
        saldo_global: 1,
      });
      expect(await ctx.store.acceptMensaje(msg(), { charge: true, maxPending: 2 }, t)).toMatchObject({
        ok: true,
        cargo: 'global',
        saldo_celular: 0,
        saldo_global: 0,
      });
      expect(await ctx.store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot }, t)).toMatchObject({ ok: true, cargo: null });

      expect(await ctx.store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot, idem: idem('k2') }, t)).toMatchObject({
        ok: false,
        reason: 'cap',
      });
      expect(await ctx.store.acceptMensaje(msg(), { charge: false, maxPending: 2, idem: idem('k3') }, t)).toEqual({ ok: false, reason: 'cola_llena' });
      expect(await ctx.store.acceptMensaje(msg(), { charge: true, maxPending: null, idem: idem('k4') }, t)).toEqual({ ok: false, reason: 'saldo' });
      // A bound key is answered as a repeat before any refusal.
      expect(await ctx.store.acceptMensaje(msg(), { charge: true, maxPending: null, idem: idem('k1') }, t)).toEqual({ ok: false, reason: 'idempotencia' });

      // Two charges' ledger rows between the credits, nothing else (not even an id a rolled-back row took).
      expect(await credit(null)).toBe(first + 3);
      for (const k of ['k2', 'k3', 'k4']) expect(await ctx.store.idemGet(c.id, k, t)).toBeNull();
      expect(await ctx.store.idemGet(c.id, 'k1', t)).toMatchObject({ status: 200, body: '{}' });
      const history = await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 10 });
      expect(history.total).toBe(3);
      expect(history.rows.map((r) => `${r.cargo}:${r.cobrado}`).sort()).toEqual(['celular:1', 'global:1', 'null:0']);
      await ctx.settled();
      const statuses = (await ctx.store.eventsAfter(c.id, null, 100)).filter((e) => e.evento === 'message.status');
      expect(statuses.map((e) => e.data.msg_id).sort()).toEqual(history.rows.map((r) => r.msg_id).sort());
      expect(await ctx.store.getCelular(id)).toMatchObject({ saldo_actual: 0 });
      expect(await ctx.store.getCliente(c.id)).toMatchObject({ saldo_global: 1 });
    });

    it('send slots: a direct acceptance and a queued claim take slots of the same caps; in flight they count, a failure gives one back', async () => {
      const c = await newCliente();
      const cel = await ctx.store.insertCelular({ ...celular(c.id, '525512345678'), max_envios_por_minuto: 2 }, 1000);
      if (!cel.ok) throw new Error('insert');
      const msg = messages(c.id, cel.celular.id);
      const t = 100_000;
      const slot = (now: number) => slotClaim(cel.celular, now, 60_000);
      const q1 = msg('cola');
      const q2 = msg('cola');
      await ctx.store.acceptMensaje(q1, { charge: false, maxPending: null }, t);
      await ctx.store.acceptMensaje(q2, { charge: false, maxPending: null }, t);
      // One direct send in flight, one queued claim: the minute is full, whatever the mode of the third.
      const d1 = msg('directo');
      expect(await ctx.store.acceptMensaje(d1, { charge: false, maxPending: null, slot: slot(t) }, t)).toMatchObject({ ok: true });
      expect(await ctx.store.claimQueued(q1.msg_id, slot(t), t)).toEqual({ ok: true });
      expect(await ctx.store.claimQueued(q1.msg_id, slot(t), t)).toEqual({ ok: false, reason: 'taken' });
      // Both in flight: no send made yet, so "ask again shortly" rather than a minute.
      expect(await ctx.store.claimQueued(q2.msg_id, slot(t), t)).toEqual({ ok: false, reason: 'cap', retryAfterMs: 1000, which: 'per minute', cap: 2 });
      expect(await ctx.store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot: slot(t) }, t)).toMatchObject({ ok: false, reason: 'cap' });
      // The direct send is made at t+10: it counts from then; the queued one fails for good and frees its slot.
      await ctx.store.markSent(d1.msg_id, 'G1', t + 10);
      await ctx.store.failMensaje(q1.msg_id, 'refused', 'rechazado', t + 20);
      expect(await ctx.store.claimQueued(q2.msg_id, slot(t + 30), t + 30)).toEqual({ ok: true });
      expect(await ctx.store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot: slot(t + 40) }, t + 40)).toMatchObject({
        ok: false,
        reason: 'cap',
        retryAfterMs: 60_000 - 30,
      });
      // A claim given back for a retry frees its slot too.
      await ctx.store.retryLater(q2.msg_id, t + 5000, 'down');
      expect(await ctx.store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot: slot(t + 50) }, t + 50)).toMatchObject({ ok: true });
    });

    it('history read by keyset (after a msg_id, no total) walks the same rows in the same order as the pages, ties in time included', async () => {
      const c = await newCliente();
      const l = await ctx.store.insertCelular(celular(c.id, '525512340000'), 1000);
      if (!l?.ok) throw new Error('insert');
      const next = messages(c.id, l.celular.id);
      // Eleven messages, several accepted in the same millisecond: the order's tie is broken by arrival.
      for (let i = 0; i < 11; i++) {
        const m = { ...next(i % 2 ? 'directo' : 'cola'), msg_id: `00000000-0000-4000-8000-${String(300 + i).padStart(12, '0')}` };
        await ctx.store.acceptMensaje(m, { charge: false, maxPending: null }, 5000 + Math.floor(i / 3) * 1000);
      }
      for (const f of [{}, { estado: 'pendiente' as const }, { celular_id: l.celular.id }, { desde: 6000 }]) {
        const all = (await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 100, ...f })).rows.map((m) => m.msg_id);
        const walked: string[] = [];
        let despues: string | undefined;
        for (;;) {
          const r = await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 4, sinTotal: true, ...f, ...(despues ? { despues } : {}) });
          expect(r.total).toBe(-1);
          walked.push(...r.rows.map((m) => m.msg_id));
          if (r.rows.length < 4) break;
          despues = r.rows[r.rows.length - 1]!.msg_id;
        }
        expect(walked, JSON.stringify(f)).toEqual(all);
        expect(all.length).toBeGreaterThan(0);
      }
    });

    it('history totals read from the kept counts equal the totals counted over the rows, through every state change and a delete', async () => {
      const c = await newCliente();
      const [a, b] = await Promise.all(['525512345678', '525512345679'].map((n) => ctx.store.insertCelular(celular(c.id, n), 1000)));
      if (!a?.ok || !b?.ok) throw new Error('insert');
      const ofA = messages(c.id, a.celular.id);
      const ofB = messages(c.id, b.celular.id);
      const ids: string[] = [];
      // Accepted 400 s apart, so they fall in six quarter hours and never on a quarter's first or last millisecond.
      for (let i = 0; i < 12; i++) {
        const m = { ...(i % 3 === 0 ? ofB() : ofA(i % 2 ? 'directo' : 'cola')), msg_id: `00000000-0000-4000-8000-${String(100 + i).padStart(12, '0')}` };
        await ctx.store.acceptMensaje(m, { charge: false, maxPending: null }, 1000 + i * 400_000);
        ids.push(m.msg_id);
      }
      const later = 10_000_000;
      for (const [i, id] of ids.entries()) {
        if (i % 4 === 3) await ctx.store.failMensaje(id, 'refused', 'rechazado', later);
        else if (i % 4 !== 0) await ctx.store.markSent(id, `G${i}`, later);
      }
      await ctx.store.receipt(a.celular.id, 'G1', 'entregado', later);
      await ctx.store.receipt(a.celular.id, 'G2', 'leido', later);
      await ctx.store.receipt(a.celular.id, 'G5', 'entregado', later);
      await ctx.store.receipt(a.celular.id, 'G10', 'error', later, 'lost');

      const estados = [undefined, 'pendiente', 'enviado', 'entregado', 'leido', 'error'] as const;
      const total = async (f: Omit<HistoryFilter, 'cliente_id' | 'page' | 'por_pagina'>) =>
        (await ctx.store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1, ...f })).total;
      const agree = async (messages: number) => {
        const filters = [
          {},
          { estado: 'enviado' as const },
          { estado: 'error' as const },
          { celular_id: a.celular.id },
          { celular_id: b.celular.id, estado: 'pendiente' as const },
        ];
        for (const f of filters) {
          // A date filter off a quarter-hour boundary that takes every row makes the store count the rows themselves.
          expect(await total(f), JSON.stringify(f)).toBe(await total({ desde: 1, ...f }));
          // And the same pages: one a kept count bounds (PostgreSQL stops reading at the last match) holds every match, past the last one none.
          for (const page of [1, 2, 3, 4]) {
            const ids = async (x: object) => (await ctx.store.listMensajes({ cliente_id: c.id, page, por_pagina: 2, ...f, ...x })).rows.map((m) => m.msg_id);
            expect(await ids({}), `${JSON.stringify(f)} page ${page}`).toEqual(await ids({ desde: 1 }));
          }
        }
        // Whole quarter hours, with or without an estado: the per-quarter counts, which must agree with a count over the same rows.
        for (const [desde, hasta] of [
          [0, 900_000],
          [0, undefined],
          [900_000, 2_700_000],
          [1_800_000, undefined],
        ] as const) {
          for (const estado of estados) {
            const f = { desde, ...(hasta ? { hasta } : {}), ...(estado ? { estado } : {}) };
            expect(await total(f), JSON.stringify(f)).toBe(await total({ ...f, desde: desde + 1, ...(hasta ? { hasta: hasta - 1 } : {}) }));
          }
        }
        let byEstado = 0;
        for (const estado of estados.slice(1)) byEstado += await total({ desde: 0, ...(estado ? { estado } : {}) });
        expect(byEstado).toBe(messages);
        expect(await total({})).toBe(messages);
      };
      await agree(12);
      expect(await total({ desde: 900_000, hasta: 2_700_000, estado: 'entregado' })).toBe(1);

      // Nothing in the product deletes a message (no retention for the history), but the counts' delete trigger must hold too.
      await ctx.exec(`DELETE FROM mensajes WHERE msg_id IN ('${ids[5]}', '${ids[7]}')`);
      await agree(10);
      expect(await total({ desde: 900_000, hasta: 2_700_000, estado: 'entregado' })).toBe(0);
    });
  });
}

/** The queue's side of the messages port: heads per line, claims, retries, releases, stranded direct sends, files. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: MessagesStore contract, the queue`, () => {
    const ctx = storeEachTest(adapter);

    async function twoLines() {
      const c = await newClienteOf(ctx.store);
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 100, motivo: 'recarga', actor: 'op' }, 1000);
      const [a, b] = await Promise.all(['525512345678', '525512345679'].map((n) => ctx.store.insertCelular(celular(c.id, n), 1000)));
      if (!a!.ok || !b!.ok) throw new Error('insert');
      return { c, a: a!.celular, b: b!.celular, ofA: messages(c.id, a!.celular.id), ofB: messages(c.id, b!.celular.id) };
    }
    const accept = (m: ReturnType<ReturnType<typeof messages>>, now: number, cel?: Parameters<typeof slotClaim>[0]) =>
      ctx.store.acceptMensaje(m, { charge: true, maxPending: null, ...(cel ? { slot: slotClaim(cel, now, 60_000) } : {}) }, now);

    it('one head per line, oldest first; a claimed head is taken until released; a retry gives it back, due later', async () => {
      const { a, b, ofA, ofB } = await twoLines();
      const a1 = ofA();
      const a2 = ofA();
      const b1 = { ...ofB(), msg_id: '00000000-0000-4000-8000-0000000000b1' };
      for (const m of [a1, a2, b1]) expect((await accept(m, 2000)).ok).toBe(true);
      expect((await ctx.store.queueHeads()).map((m) => m.msg_id).sort()).toEqual([a1.msg_id, b1.msg_id].sort());

      expect(await ctx.store.claimQueued(a1.msg_id, slotClaim(a, 3000, 60_000), 3000)).toEqual({ ok: true });
      expect(await ctx.store.claimQueued(a1.msg_id, slotClaim(a, 3001, 60_000), 3001)).toEqual({ ok: false, reason: 'taken' });
      // Once its claim has run out, another worker may take it.
      expect(await ctx.store.claimQueued(a1.msg_id, slotClaim(a, 63_001, 60_000), 63_001)).toEqual({ ok: true });

      await ctx.store.retryLater(a1.msg_id, 90_000, 'gateway down');
      const back = (await ctx.store.getMensaje(a1.msg_id))!;
      expect(back).toMatchObject({ estado: 'pendiente', intentos: 1, proximo_intento_at: 90_000, error: 'gateway down', lease_until: null });
      // Not before its backoff, even for a worker whose read of the queue head is older than the retry.
      expect(await ctx.store.claimQueued(a1.msg_id, slotClaim(a, 64_000, 60_000), 64_000)).toEqual({ ok: false, reason: 'taken' });
      expect(await ctx.store.claimQueued(b1.msg_id, slotClaim(b, 4000, 60_000), 4000)).toEqual({ ok: true });
      expect(await ctx.store.releaseLeases()).toBe(1);
      expect(await ctx.store.claimQueued(b1.msg_id, slotClaim(b, 4001, 60_000), 4001)).toEqual({ ok: true });
      expect(await ctx.store.markSent(b1.msg_id, 'G-b1', 4002)).toMatchObject({ estado: 'enviado', gateway_msg_id: 'G-b1' });
      expect(await ctx.store.markSent(b1.msg_id, 'G-b1', 4003)).toBeNull();
      expect((await ctx.store.queueHeads()).map((m) => m.msg_id)).toEqual([a1.msg_id]);
    });

    it('queue depth (metrics): pending queued messages and when the oldest was accepted; direct and ended ones do not count', async () => {
      const { a, ofA, ofB } = await twoLines();
      expect(await ctx.store.queueDepth()).toEqual({ pending: 0, oldest_at: null });
      const d1 = ofA('directo');
      const b1 = { ...ofB(), msg_id: '00000000-0000-4000-8000-0000000000b1' };
      const a1 = ofA();
      const a2 = ofA();
      expect((await accept(d1, 1000, a)).ok).toBe(true);
      for (const [m, t] of [
        [b1, 1500],
        [a1, 2000],
        [a2, 2500],
      ] as const)
        expect((await accept(m, t)).ok).toBe(true);
      expect(await ctx.store.queueDepth()).toEqual({ pending: 3, oldest_at: 1500 });
      // Claimed is still pending; sent is not.
      expect(await ctx.store.claimQueued(b1.msg_id, slotClaim(a, 3000, 60_000), 3000)).toEqual({ ok: true });
      expect(await ctx.store.queueDepth()).toEqual({ pending: 3, oldest_at: 1500 });
      await ctx.store.markSent(b1.msg_id, 'G-b1', 3001);
      expect(await ctx.store.queueDepth()).toEqual({ pending: 2, oldest_at: 2000 });
      await ctx.store.failMensaje(a1.msg_id, 'x', 'rechazado', 3002);
      expect(await ctx.store.queueDepth()).toEqual({ pending: 1, oldest_at: 2500 });
      await ctx.store.failMensaje(a2.msg_id, 'x', 'rechazado', 3003);
      expect(await ctx.store.queueDepth()).toEqual({ pending: 0, oldest_at: null });
    });

    it('stranded direct sends: pending direct messages whose slot ended, oldest first; a queued one never is', async () => {
      const { a, ofA } = await twoLines();
      const d1 = ofA('directo');
      const d2 = ofA('directo');
      const q1 = ofA();
      expect((await accept(d1, 2000, a)).ok).toBe(true);
      expect((await accept(d2, 3000, a)).ok).toBe(true);
      expect((await accept(q1, 3000)).ok).toBe(true);
      expect(await ctx.store.strandedDirect(62_000, 10)).toEqual([]);
      expect((await ctx.store.strandedDirect(62_001, 10)).map((m) => m.msg_id)).toEqual([d1.msg_id]);
      expect((await ctx.store.strandedDirect(Number.MAX_SAFE_INTEGER, 10)).map((m) => m.msg_id)).toEqual([d1.msg_id, d2.msg_id]);
      expect((await ctx.store.strandedDirect(Number.MAX_SAFE_INTEGER, 1)).map((m) => m.msg_id)).toEqual([d1.msg_id]);
      await ctx.store.markSent(d1.msg_id, 'G-d1', 4000);
      await ctx.store.failMensaje(d2.msg_id, 'refused', 'rechazado', 4000);
      expect(await ctx.store.strandedDirect(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
    });

    it('temp files are listed while their message is pending only; a failed send of a deleted line is refunded to the client', async () => {
      const { c, a, ofA } = await twoLines();
      await ctx.store.changeBalance({ cliente_id: c.id, celular_id: a.id, monto: 1, motivo: 'recarga', actor: 'op' }, 1500);
      const withFile = { ...ofA(), payload: { file: '/tmp/x.png', mime: 'image/png' }, tipo: 'imagen' as const };
      const r = await accept(withFile, 2000);
      expect(r).toMatchObject({ ok: true, cargo: 'celular' });
      expect(await ctx.store.pendingFiles()).toEqual(['/tmp/x.png']);
      const saldo = (await ctx.store.getCliente(c.id))!.saldo_global;
      expect(
        await ctx.store.deleteCelular(a.id, { actor: 'op', accion: 'borrar', objeto_tipo: 'celular', objeto_id: a.id, cliente_id: c.id, detalle: {} }, 2500),
      ).toBe(true);
      expect(await ctx.store.failMensaje(withFile.msg_id, 'line deleted', 'rechazado', 3000)).toMatchObject({ estado: 'error', cobrado: 0 });
      expect((await ctx.store.getCliente(c.id))!.saldo_global).toBe(saldo + 1);
      expect(await ctx.store.pendingFiles()).toEqual([]);
    });
  });
}
