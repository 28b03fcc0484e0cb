import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { MensajeEstadoRow } from '../../src/core/ports/model.js';
import { LOCK } from '../../src/store/postgres/db.js';
import { RECEIPT_ADVANCE, RECEIPT_ADVANCE_ONE } from '../../src/store/postgres/transitions.js';
import { until } from '../helpers/poll.js';
import { ADAPTERS, PG_URL, celular, messages, newCliente, storeEachTest } from './adapters.js';

/**
 * Sends recorded together: concurrent markSent calls go through the store's
 * group commit (on PostgreSQL a turn of several in one statement, D-79);
 * each is recorded as if it were alone, in the order it arrived: its row,
 * its gateway id, its event once, its line's counter, its counts, and the
 * receipts parked for it applied exactly once, also with receipts arriving
 * meanwhile.
 */
/** Every statement's text sent on PostgreSQL connections made from now on, until `restore`. */
function countStatements(): { texts: string[]; restore: () => void } {
  const texts: string[] = [];
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const plain = proto.query;
  proto.query = function (this: pg.Client, ...args: unknown[]) {
    const a0 = args[0] as string | { text?: unknown } | undefined;
    const text = typeof a0 === 'string' ? a0 : a0?.text;
    if (typeof text === 'string') texts.push(text);
    return plain.apply(this, args);
  };
  return { texts, restore: () => (proto.query = plain) };
}

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: sends recorded in turns`, () => {
    const ctx = storeEachTest(adapter);

    /** A client with `saldo` global credit and `n` lines, each with `per` queued messages accepted (charged); their ids per line. */
    async function setup(n: number, per: number, saldo = 0) {
      const c = await newCliente(ctx.store);
      if (saldo > 0) {
        const top = await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: saldo, motivo: 'r', actor: 'op' }, 1);
        if (!top.ok) throw new Error('top-up');
      }
      const lines: Array<{ id: number; msgs: string[] }> = [];
      for (let k = 0; k < n; k++) {
        const r = await ctx.store.insertCelular(celular(c.id, `52551234567${k}`), 1);
        if (!r.ok) throw new Error('insert');
        const next = messages(c.id, r.celular.id);
        const msgs: string[] = [];
        for (let j = 0; j < per; j++) {
          const m = next();
          const msg_id = m.msg_id.replace('-8000-', `-80${String(k).padStart(2, '0')}-`);
          const a = await ctx.store.acceptMensaje({ ...m, msg_id }, { charge: saldo > 0, maxPending: null }, 10);
          expect(a).toMatchObject({ ok: true });
          msgs.push(msg_id);
        }
        lines.push({ id: r.celular.id, msgs });
      }
      return { clienteId: c.id, lines };
    }

    const gidOf = (msgId: string) => `G-${msgId.slice(-16)}`;
    /** The client's message.status events after the acceptances', as [msg_id, estado] in log order. */
    async function statuses(clienteId: number): Promise<Array<[string, string]>> {
      await ctx.settled();
      const evs = await ctx.store.eventsAfter(clienteId, null, 10_000);
      return evs
        .filter((e) => e.evento === 'message.status' && e.data.estado !== 'pendiente')
        .map((e) => [String(e.data.msg_id), String(e.data.estado)] as [string, string]);
    }
    /** The line's queue holds exactly `n`: a full queue at that length, room at one more. */
    async function expectQueued(clienteId: number, lineId: number, n: number) {
      const probe = { ...messages(clienteId, lineId)(), msg_id: `00000000-0000-4000-9999-${String(lineId).padStart(12, '0')}` };
      expect(await ctx.store.acceptMensaje(probe, { charge: false, maxPending: n }, 50)).toEqual({ ok: false, reason: 'cola_llena' });
    }
    const total = async (clienteId: number, f: object) => (await ctx.store.listMensajes({ cliente_id: clienteId, page: 1, por_pagina: 1, ...f })).total;

    it('a burst over several lines records each message once, in arrival order: its row, event, queue counter and counts exact; repeats and unknown ids are null', async () => {
      const { clienteId, lines } = await setup(3, 8);
      // Interleaved over the lines; the last two of each line stay queued.
      const calls: string[] = [];
      for (let j = 0; j < 6; j++) for (const l of lines) calls.push(l.msgs[j]!);
      const twice = lines[1]!.msgs[2]!;
      const unknown = '00000000-0000-4000-8abc-000000000001';
      const all = [...calls.slice(0, 10), twice, unknown, ...calls.slice(10)];
      const results = await Promise.all(all.map((id, k) => ctx.store.markSent(id, id === twice && k === 10 ? 'G-other' : gidOf(id), 20 + k)));

      // Each first call recorded its message; the repeat found it sent already, and an unknown id changed nothing.
      results.forEach((r, k) => {
        if (all[k] === unknown || k === 10) expect(r, `${k}`).toBeNull();
        else
          expect(r, `${k}`).toMatchObject({ msg_id: all[k], estado: 'enviado', gateway_msg_id: gidOf(all[k]!), enviado_at: 20 + k, intentos: 1, error: null });
      });
      for (const id of calls) expect(await ctx.store.getMensajeByGatewayId(gidOf(id))).toMatchObject({ msg_id: id, estado: 'enviado' });
      expect(await ctx.store.getMensajeByGatewayId('G-other')).toBeNull();
      // One event per message recorded, in the order the calls arrived.
      expect(await statuses(clienteId)).toEqual(calls.map((id) => [id, 'enviado']));
      // Each line's queue lost exactly the six sent; the head is the first still queued.
      for (const l of lines) await expectQueued(clienteId, l.id, 2);
      const heads = await ctx.store.queueHeads();
      for (const l of lines) expect(heads.find((h) => h.celular_id === l.id)?.msg_id).toBe(l.msgs[6]);
      // The counts: by line (conteos per line) and by whole quarters (per client and quarter).
      for (const f of [{}, { desde: 0, hasta: 900_000 }]) {
        expect(await total(clienteId, { ...f, estado: 'enviado' })).toBe(18);
        expect(await total(clienteId, { ...f, estado: 'pendiente' })).toBe(6);
        for (const l of lines) expect(await total(clienteId, { ...f, celular_id: l.id, estado: 'enviado' })).toBe(6);
      }
    });

    it('receipts parked before a burst are applied once each, in order, to their own message: steps journaled, a failure refunded once', async () => {
      const { clienteId, lines } = await setup(2, 5, 10);
      const [a, b] = lines as [{ id: number; msgs: string[] }, { id: number; msgs: string[] }];
      // Parked: a read then a delivery on a's 2nd, a delivery on b's 3rd, a failure on b's 4th; one for a's 5th reported by line b.
      expect(await ctx.store.receipt(a.id, gidOf(a.msgs[1]!), 'leido', 11)).toBe('parked');
      expect(await ctx.store.receipt(a.id, gidOf(a.msgs[1]!), 'entregado', 12)).toBe('parked');
      expect(await ctx.store.receipt(b.id, gidOf(b.msgs[2]!), 'entregado', 13)).toBe('parked');
      expect(await ctx.store.receipt(b.id, gidOf(b.msgs[3]!), 'error', 14, 'rechazado por la red')).toBe('parked');
      expect(await ctx.store.receipt(b.id, gidOf(a.msgs[4]!), 'leido', 15)).toBe('parked');
      const saldo = (await ctx.store.getCliente(clienteId))!.saldo_global;
      expect(saldo).toBe(0);

      const calls = [0, 1, 2, 3, 4].flatMap((j) => [a.msgs[j]!, b.msgs[j]!]);
      const results = await Promise.all(calls.map((id, k) => ctx.store.markSent(id, gidOf(id), 30 + k)));
      const state = (r: MensajeEstadoRow | null) => r?.estado;
      expect(results.map(state)).toEqual(['enviado', 'enviado', 'leido', 'enviado', 'enviado', 'entregado', 'enviado', 'error', 'enviado', 'enviado']);
      expect(results[7]).toMatchObject({ error: 'rechazado por la red', error_clase: 'fallido', cobrado: 0 });

      // Each message's steps once and in order; every enviado event in arrival order.
      const evs = await statuses(clienteId);
      expect(evs.filter(([, e]) => e === 'enviado').map(([id]) => id)).toEqual(calls);
      const of = (id: string) => evs.filter(([m]) => m === id).map(([, e]) => e);
      expect(of(a.msgs[1]!)).toEqual(['enviado', 'entregado', 'leido']);
      expect(of(b.msgs[2]!)).toEqual(['enviado', 'entregado']);
      expect(of(b.msgs[3]!)).toEqual(['enviado', 'error']);
      expect(of(a.msgs[4]!)).toEqual(['enviado']);
      // The failure's refund, once: one credit back of the ten paid.
      expect((await ctx.store.getCliente(clienteId))!.saldo_global).toBe(1);
      // Nothing is left parked for these ids: the same receipts now find their messages and change nothing.
      expect(await ctx.store.receipt(a.id, gidOf(a.msgs[1]!), 'leido', 60)).toBeNull();
      expect(await ctx.store.receipt(b.id, gidOf(b.msgs[3]!), 'error', 61, 'again')).toBeNull();
      expect((await ctx.store.getCliente(clienteId))!.saldo_global).toBe(1);
      for (const l of lines) await expectQueued(clienteId, l.id, 0);
      expect(await total(clienteId, { desde: 0, hasta: 900_000, estado: 'error' })).toBe(1);
      expect(await total(clienteId, { desde: 0, hasta: 900_000, estado: 'enviado' })).toBe(7);
    });

    it('receipts racing a burst of sends are applied exactly once each, whichever comes first', async () => {
      const { clienteId, lines } = await setup(3, 6);
      const ids = lines.flatMap((l) => l.msgs.map((id) => ({ id, line: l.id })));
      // For each message its send's record and its delivery receipt, issued together; a third of them also a read receipt.
      const work = ids.flatMap(({ id, line }, k) => [
        () => ctx.store.markSent(id, gidOf(id), 100 + k),
        () => ctx.store.receipt(line, gidOf(id), 'entregado', 100 + k),
        ...(k % 3 === 0 ? [() => ctx.store.receipt(line, gidOf(id), 'leido', 101 + k)] : []),
      ]);
      const out = await Promise.all(work.map((w) => w()));
      expect(out.filter((r) => r !== null && typeof r === 'object' && 'msg_id' in r)).toHaveLength(ids.length);
      const evs = await statuses(clienteId);
      for (const [k, { id }] of ids.entries()) {
        const want = k % 3 === 0 ? 'leido' : 'entregado';
        expect((await ctx.store.getMensaje(id))?.estado, id).toBe(want);
        expect(
          evs.filter(([m]) => m === id).map(([, e]) => e),
          id,
        ).toEqual(k % 3 === 0 ? ['enviado', 'entregado', 'leido'] : ['enviado', 'entregado']);
      }
      for (const l of lines) await expectQueued(clienteId, l.id, 0);
      expect(await total(clienteId, { desde: 0, hasta: 900_000, estado: 'leido' })).toBe(6);
      expect(await total(clienteId, { estado: 'entregado' })).toBe(12);
      expect(await total(clienteId, { estado: 'enviado' })).toBe(0);
    });

    // PostgreSQL's own (D-79): SQLite records a send in the caller's turn, with no lock to wait on.
    if (adapter.name === 'postgres')
      it('a receipt that comes while this node records the send waits for that record: one look finds the message, nothing parked', async () => {
        const { clienteId, lines } = await setup(1, 1);
        const [line] = lines;
        const id = line!.msgs[0]!;
        // Statements counted on a node opened now (each connection binds the client's query method when it connects).
        const { texts, restore } = countStatements();
        // The send's record takes its gateway id's advisory lock first: held here, the record waits, uncommitted.
        const holder = new pg.Client({ connectionString: PG_URL });
        const lockArgs = [LOCK.gatewayId, gidOf(id)];
        try {
          const node = await ctx.node();
          await holder.connect();
          await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', lockArgs);
          const sent = node.markSent(id, gidOf(id), 100);
          const got = node.receipt(line!.id, gidOf(id), 'entregado', 101);
          await until(() => texts.some((t) => t.includes('pg_advisory_xact_lock($6')));
          // The receipt's chance to look while the record waits (before, it looked, found nothing, and looked again later).
          await new Promise((r) => setTimeout(r, 100));
          await holder.query('SELECT pg_advisory_unlock($1, hashtext($2))', lockArgs);
          await sent;
          expect(await got).toMatchObject({ after: { msg_id: id, estado: 'entregado' } });
        } finally {
          restore();
          await holder.end();
        }
        expect(texts.filter((t) => t === RECEIPT_ADVANCE || t === RECEIPT_ADVANCE_ONE)).toHaveLength(1);
        // Nothing parked: no statement but the record's own read (acuses_al_dia) looks at the parked receipts.
        expect(texts.filter((t) => t.includes('acuses_pendientes'))).toEqual([]);
        expect(await statuses(clienteId)).toEqual([
          [id, 'enviado'],
          [id, 'entregado'],
        ]);
      });

    if (adapter.name === 'postgres')
      it("a send's record is one statement: the receipts parked for it are read inside it, and applied in a transaction only when there are some (D-87)", async () => {
        const { clienteId, lines } = await setup(1, 6);
        const [line] = lines;
        const [m0, m1, ...rest] = line!.msgs as [string, string, ...string[]];
        // Statements counted on a node opened now (each connection binds the client's query method when it connects).
        const { texts, restore } = countStatements();
        try {
          const node = await ctx.node();
          const record = (t: string) => t.includes('acuses_al_dia(');
          texts.length = 0;
          // Nothing parked: one round trip.
          expect(await node.markSent(m0, gidOf(m0), 20)).toMatchObject({ estado: 'enviado' });
          expect(texts.length).toBe(1);
          expect(record(texts[0]!)).toBe(true);
          // A delivery parked (by the other node): read by the record's statement, claimed and applied in one transaction after it.
          expect(await ctx.store.receipt(line!.id, gidOf(m1), 'entregado', 21)).toBe('parked');
          texts.length = 0;
          expect(await node.markSent(m1, gidOf(m1), 22)).toMatchObject({ estado: 'entregado', entregado_at: 22 });
          expect(record(texts[0]!)).toBe(true);
          expect(texts[1]).toBe('BEGIN');
          expect(texts.at(-1)).toBe('COMMIT');
          expect(texts.filter((t) => t.includes('acuses_pendientes') && !t.startsWith('DELETE FROM acuses_pendientes'))).toEqual([]);
          // A burst, alone or in turns: every statement is a record, nothing read after it.
          texts.length = 0;
          const sent = await Promise.all(rest.map((id, k) => node.markSent(id, gidOf(id), 30 + k)));
          expect(sent.map((r) => r?.estado)).toEqual(rest.map(() => 'enviado'));
          expect(texts.length).toBeGreaterThan(0);
          expect(texts.filter((t) => !record(t))).toEqual([]);
        } finally {
          restore();
        }
        expect(await statuses(clienteId)).toEqual([[m0, 'enviado'], [m1, 'enviado'], [m1, 'entregado'], ...rest.map((id) => [id, 'enviado'])]);
      });

    // PostgreSQL's own: its turn records the sends in one statement, then applies their parked receipts in one transaction.
    if (adapter.name === 'postgres')
      it("a turn whose parked receipts fail applies them send by send: the others' receipts applied, the failing one's left parked", async () => {
        const { clienteId, lines } = await setup(1, 5);
        const [m0, ...parked] = lines[0]!.msgs as [string, ...string[]];
        const bad = parked[1]!;
        for (const [k, id] of parked.entries()) expect(await ctx.store.receipt(lines[0]!.id, gidOf(id), 'entregado', 11 + k)).toBe('parked');
        // A store that refuses one message's delivery (a stand-in for any fault of one send's parked receipts).
        await ctx.exec(
          `CREATE FUNCTION bad_receipt() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
             IF NEW.msg_id = '${bad}' AND NEW.estado = 'entregado' THEN RAISE EXCEPTION 'bad receipt'; END IF; RETURN NEW; END $$;
           CREATE TRIGGER bad_receipt BEFORE UPDATE ON mensajes FOR EACH ROW EXECUTE FUNCTION bad_receipt();`,
        );
        // The first call is a turn alone; the four with parked receipts arrive meanwhile and go in the next, together.
        const results = await Promise.all([m0, ...parked].map((id, k) => ctx.store.markSent(id, gidOf(id), 30 + k)));
        expect(results.map((r) => [r?.msg_id, r?.estado])).toEqual([[m0, 'enviado'], ...parked.map((id) => [id, id === bad ? 'enviado' : 'entregado'])]);
        expect(await ctx.store.getMensaje(bad)).toMatchObject({ estado: 'enviado' });
        const evs = await statuses(clienteId);
        for (const id of parked) expect(evs.filter(([m]) => m === id).map(([, e]) => e)).toEqual(id === bad ? ['enviado'] : ['enviado', 'entregado']);
        // The failing one's receipt is still parked (its send alone's fallback), the others' are claimed.
        const parkedNow = (id: string, n: number) =>
          ctx.exec(
            `DO $$ BEGIN IF (SELECT count(*) FROM acuses_pendientes WHERE gateway_msg_id = '${gidOf(id)}') <> ${n} THEN RAISE EXCEPTION 'not ${n} parked for ${id}'; END IF; END $$;`,
          );
        for (const id of parked) await parkedNow(id, id === bad ? 1 : 0);
      });

    it('a message that cannot be recorded fails alone: the others of its turn are recorded, each once and in order', async () => {
      const { clienteId, lines } = await setup(2, 4);
      // A store that refuses one gateway id (a stand-in for any fault of one message).
      await ctx.exec(
        adapter.name === 'sqlite'
          ? `CREATE TRIGGER bad_gid BEFORE UPDATE OF gateway_msg_id ON mensajes WHEN NEW.gateway_msg_id = 'G-BAD' BEGIN SELECT RAISE(ABORT, 'bad gateway id'); END;`
          : `CREATE FUNCTION bad_gid() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.gateway_msg_id = 'G-BAD' THEN RAISE EXCEPTION 'bad gateway id'; END IF; RETURN NEW; END $$;
             CREATE TRIGGER bad_gid BEFORE UPDATE ON mensajes FOR EACH ROW EXECUTE FUNCTION bad_gid();`,
      );
      const calls = [0, 1, 2, 3].flatMap((j) => lines.map((l) => l.msgs[j]!));
      const bad = calls[5]!;
      const results = await Promise.allSettled(calls.map((id, k) => ctx.store.markSent(id, id === bad ? 'G-BAD' : gidOf(id), 70 + k)));
      results.forEach((r, k) => {
        if (calls[k] === bad) expect(r.status, `${k}`).toBe('rejected');
        else expect(r, `${k}`).toMatchObject({ status: 'fulfilled', value: { msg_id: calls[k], estado: 'enviado', enviado_at: 70 + k } });
      });
      expect(await statuses(clienteId)).toEqual(calls.filter((id) => id !== bad).map((id) => [id, 'enviado']));
      expect(await ctx.store.getMensaje(bad)).toMatchObject({ estado: 'pendiente', intentos: 0 });
      const badLine = lines.find((l) => l.msgs.includes(bad))!;
      for (const l of lines) await expectQueued(clienteId, l.id, l === badLine ? 1 : 0);
      expect(await total(clienteId, { desde: 0, hasta: 900_000, estado: 'enviado' })).toBe(7);
    });

    it('a burst of receipts on recorded sends: each moves its own message once, a second for one id after the first, unknown ids parked, a failure refunded once', async () => {
      const { clienteId, lines } = await setup(2, 6, 12);
      const ids = lines.flatMap((l) => l.msgs.map((id) => ({ id, line: l.id })));
      for (const [k, { id }] of ids.entries()) expect(await ctx.store.markSent(id, gidOf(id), 20 + k)).toMatchObject({ estado: 'enviado' });
      const [a, b] = lines as [{ id: number; msgs: string[] }, { id: number; msgs: string[] }];
      const failed = b.msgs[5]!;
      type Call = [line: number, gid: string, estado: 'entregado' | 'leido' | 'error'];
      const calls: Call[] = [];
      for (const [k, { id, line }] of ids.entries()) {
        if (id === failed) continue;
        calls.push([line, gidOf(id), 'entregado']);
        if (k % 2 === 0) calls.push([line, gidOf(id), 'leido']);
      }
      calls.push([a.id, 'G-unknown', 'entregado'], [b.id, gidOf(a.msgs[0]!), 'leido'], [b.id, gidOf(failed), 'error']);
      const results = await Promise.all(
        calls.map(([line, gid, estado], k) => ctx.store.receipt(line, gid, estado, 100 + k, estado === 'error' ? 'no entregado' : undefined)),
      );
      const seen = new Set<string>();
      results.forEach((r, k) => {
        const [line, gid, estado] = calls[k]!;
        if (gid === 'G-unknown' || (line === b.id && gid === gidOf(a.msgs[0]!))) return expect(r, `${k}`).toBe('parked');
        const again = seen.has(gid);
        seen.add(gid);
        const from = estado === 'error' ? 'enviado' : again ? 'entregado' : 'enviado';
        expect(r, `${k}`).toMatchObject({ before: { estado: from, gateway_msg_id: gid }, after: { estado, gateway_msg_id: gid } });
      });
      const evs = await statuses(clienteId);
      for (const [k, { id }] of ids.entries()) {
        const want = id === failed ? ['enviado', 'error'] : k % 2 === 0 ? ['enviado', 'entregado', 'leido'] : ['enviado', 'entregado'];
        expect(
          evs.filter(([m]) => m === id).map(([, e]) => e),
          id,
        ).toEqual(want);
      }
      // Twelve paid, one refunded.
      expect((await ctx.store.getCliente(clienteId))!.saldo_global).toBe(1);
      expect(await total(clienteId, { desde: 0, hasta: 900_000, estado: 'leido' })).toBe(6);
      expect(await total(clienteId, { estado: 'entregado' })).toBe(5);
      expect(await total(clienteId, { celular_id: b.id, estado: 'error' })).toBe(1);
      expect(await total(clienteId, { estado: 'enviado' })).toBe(0);
    });
  });
}
