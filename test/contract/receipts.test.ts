import { describe, expect, it } from 'vitest';
import { PARKED_PER_LINE, PARKED_TTL_MS } from '../../src/core/billing/ledger.js';
import { ADAPTERS, celular, claimableAt, storeEachTest } from './adapters.js';

/**
 * Gateway receipts and incoming messages (migration 6): a receipt that beats
 * the send's own record is parked and applied by markSent, in order; an
 * `error` receipt ends a sent message with its refund, once; an incoming
 * message's gateway key is journaled once. The event log is read past the
 * last event each read returned, and balance movements are counted through
 * the ids changeBalance returns.
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: MessagesStore contract, gateway receipts and inbound dedupe`, () => {
    const ctx = storeEachTest(adapter);
    /** A client with `saldo` global credit and one line; returns the ids and the movimiento id of the top-up. */
    async function line(saldo = 5) {
      const c = await ctx.store.createCliente(
        { nombre: 'R', email: 'r@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' },
        1,
      );
      const cel = await ctx.store.insertCelular(celular(c.id, '525512345678'), 1);
      if (!cel.ok) throw new Error('insert');
      const top = await ctx.store.changeBalance({ cliente_id: c.id, celular_id: null, monto: saldo, motivo: 'recarga', actor: 'op' }, 1);
      if (!top.ok) throw new Error('top-up');
      readers.set(c.id, null);
      return { clienteId: c.id, celularId: cel.celular.id, movimiento: top.movimiento_id };
    }

    let n = 0;
    const accept = async (l: { clienteId: number; celularId: number }, now: number) => {
      const msg_id = `00000000-0000-4000-9000-${String(++n).padStart(12, '0')}`;
      const r = await ctx.store.acceptMensaje(
        {
          msg_id,
          cliente_id: l.clienteId,
          celular_id: l.celularId,
          destinatario: '14155552671',
          tipo: 'texto',
          modo: 'cola',
          texto: 'x',
          media: null,
          payload: { texto: 'x' },
          expira_at: null,
        },
        { charge: true, maxPending: null },
        now,
      );
      expect(r).toMatchObject({ ok: true, cargo: 'global' });
      return msg_id;
    };

    /** The last event read of each client this test made (null: none yet). */
    const readers = new Map<number, string | null>();
    /** The events logged since the last read, of every client this test made, in log order (ids of one store sort as their rows). */
    async function journal(_now: number): Promise<Array<{ evento: string; data: Record<string, any>; fecha: number }>> {
      await ctx.settled();
      const all: Array<{ id: string; evento: string; data: Record<string, any>; fecha: number }> = [];
      for (const [clienteId, after] of readers) {
        const evs = await ctx.store.eventsAfter(clienteId, after, 1000);
        if (evs.length > 0) readers.set(clienteId, evs[evs.length - 1]!.id);
        all.push(...evs);
      }
      return all.sort((a, b) => (a.id < b.id ? -1 : 1)).map(({ evento, data, fecha }) => ({ evento, data, fecha }));
    }
    const saldo = async (clienteId: number) => (await ctx.store.getCliente(clienteId))!.saldo_global;
    /** The id the next movimiento gets, found by recording one (+0 is refused, so +1). */
    const nextMovimiento = async (clienteId: number) => {
      const r = await ctx.store.changeBalance({ cliente_id: clienteId, celular_id: null, monto: 1, motivo: 'sonda', actor: 'op' }, 1);
      if (!r.ok) throw new Error('probe');
      return r.movimiento_id;
    };

    it('parks receipts for an unknown gateway id; markSent applies them in order (entregado, then leido), journaling each step', async () => {
      const l = await line();
      const id = await accept(l, 10);
      await journal(11);
      // The read receipt arrives first, then the delivery one, both before the send is recorded.
      expect(await ctx.store.receipt(l.celularId, 'G-early', 'leido', 12)).toBe('parked');
      expect(await ctx.store.receipt(l.celularId, 'G-early', 'entregado', 13)).toBe('parked');
      expect(await ctx.store.getMensaje(id)).toMatchObject({ estado: 'pendiente', gateway_msg_id: null, entregado_at: null, leido_at: null });
      expect(await journal(14)).toEqual([]);

      const after = await ctx.store.markSent(id, 'G-early', 20);
      expect(after).toMatchObject({ msg_id: id, estado: 'leido', gateway_msg_id: 'G-early', enviado_at: 20, entregado_at: 20, leido_at: 20, error: null });
      const evs = await journal(21);
      expect(evs.map((e) => [e.evento, e.data.estado_anterior, e.data.estado])).toEqual([
        ['message.status', 'pendiente', 'enviado'],
        ['message.status', 'enviado', 'entregado'],
        ['message.status', 'entregado', 'leido'],
      ]);
      for (const e of evs) expect(e).toMatchObject({ fecha: 20, data: { msg_id: id, gateway_msg_id: 'G-early' } });

      // Applied once: the parked rows are gone, and a late repeat never moves the message backwards.
      expect(await ctx.store.receipt(l.celularId, 'G-early', 'entregado', 30)).toBeNull();
      expect(await ctx.store.receipt(l.celularId, 'G-early', 'leido', 31)).toBeNull();
      expect(await journal(32)).toEqual([]);
      // A message sent later under another gateway id gets nothing of them.
      const other = await accept(l, 40);
      expect(await ctx.store.markSent(other, 'G-other', 41)).toMatchObject({ estado: 'enviado', entregado_at: null, leido_at: null });
      expect(await saldo(l.clienteId)).toBe(3);
    });

    it('receipts on a recorded send move it forward only: enviado -> entregado -> leido, never back', async () => {
      const l = await line();
      const id = await accept(l, 10);
      await ctx.store.markSent(id, 'G1', 11);
      await journal(12);
      expect(await ctx.store.receipt(l.celularId, 'G1', 'entregado', 13)).toMatchObject({
        before: { estado: 'enviado' },
        after: { estado: 'entregado', entregado_at: 13 },
      });
      expect(await ctx.store.receipt(l.celularId, 'G1', 'entregado', 14)).toBeNull();
      expect(await ctx.store.receipt(l.celularId, 'G1', 'leido', 15)).toMatchObject({
        before: { estado: 'entregado' },
        after: { estado: 'leido', leido_at: 15, entregado_at: 13 },
      });
      expect(await ctx.store.receipt(l.celularId, 'G1', 'entregado', 16)).toBeNull();
      expect((await journal(17)).map((e) => [e.data.estado_anterior, e.data.estado, e.fecha])).toEqual([
        ['enviado', 'entregado', 13],
        ['entregado', 'leido', 15],
      ]);
    });

    it('a read receipt that beats the delivery receipt records the delivery first: both steps journaled, the late delivery ignored', async () => {
      const l = await line();
      const id = await accept(l, 10);
      await ctx.store.markSent(id, 'G2', 11);
      await journal(12);
      expect(await ctx.store.receipt(l.celularId, 'G2', 'leido', 13)).toMatchObject({
        before: { estado: 'enviado' },
        after: { estado: 'leido', entregado_at: 13, leido_at: 13 },
      });
      expect(await ctx.store.receipt(l.celularId, 'G2', 'entregado', 14)).toBeNull();
      expect((await journal(15)).map((e) => [e.data.estado_anterior, e.data.estado, e.fecha])).toEqual([
        ['enviado', 'entregado', 13],
        ['entregado', 'leido', 13],
      ]);
    });

    it("an 'error' receipt on an enviado message ends it in error with its refund: saldo restored, one movimiento, once", async () => {
      const l = await line(5);
      const id = await accept(l, 10);
      expect(await saldo(l.clienteId)).toBe(4);
      await ctx.store.markSent(id, 'G-err', 11);
      await journal(12);

      const r = await ctx.store.receipt(l.celularId, 'G-err', 'error', 13, 'recipient unreachable');
      expect(r).toMatchObject({
        before: { estado: 'enviado' },
        after: { msg_id: id, estado: 'error', error: 'recipient unreachable', error_clase: 'fallido', cobrado: 0 },
      });
      expect(await saldo(l.clienteId)).toBe(5);
      expect((await journal(14)).map((e) => [e.evento, e.data.estado_anterior, e.data.estado, e.data.error])).toEqual([
        ['message.status', 'enviado', 'error', 'recipient unreachable'],
      ]);

      // Repeats change nothing: no second refund, and error is final.
      expect(await ctx.store.receipt(l.celularId, 'G-err', 'error', 15, 'again')).toBeNull();
      expect(await ctx.store.receipt(l.celularId, 'G-err', 'entregado', 16)).toBeNull();
      expect(await ctx.store.failMensaje(id, 'again', 'rechazado', 17)).toBeNull();
      expect(await saldo(l.clienteId)).toBe(5);
      expect(await journal(18)).toEqual([]);
      // Movimientos since the top-up: the charge, the refund, and this probe.
      expect(await nextMovimiento(l.clienteId)).toBe(l.movimiento + 3);
    });

    /** A second client with its own line (another instance, another secret). */
    async function otherLine() {
      const c = await ctx.store.createCliente(
        { nombre: 'O', email: 'o@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h2' },
        1,
      );
      const cel = await ctx.store.insertCelular(celular(c.id, '525587654321'), 1);
      if (!cel.ok) throw new Error('insert');
      return cel.celular.id;
    }

    it("a receipt reported by another line changes nothing of this line's message: no error, no refund; parked, it never applies here", async () => {
      const l = await line(5);
      const otro = await otherLine();
      const id = await accept(l, 10);
      await ctx.store.markSent(id, 'G-b', 11);
      await journal(12);
      // The other line's instance reports this message failed: it is not that line's, so it is parked for that line.
      expect(await ctx.store.receipt(otro, 'G-b', 'error', 13, 'forged')).toBe('parked');
      expect(await ctx.store.getMensaje(id)).toMatchObject({ estado: 'enviado', cobrado: 1, error: null });
      expect(await saldo(l.clienteId)).toBe(4);
      expect(await journal(14)).toEqual([]);
      // Its own line's receipts apply as ever.
      expect(await ctx.store.receipt(l.celularId, 'G-b', 'entregado', 15)).toMatchObject({ after: { msg_id: id, estado: 'entregado' } });

      // Parked by the other line before this line's send is recorded: markSent applies only this line's own.
      const p = await accept(l, 20);
      expect(await ctx.store.receipt(otro, 'G-p2', 'error', 21, 'forged early')).toBe('parked');
      expect(await ctx.store.receipt(l.celularId, 'G-p2', 'entregado', 22)).toBe('parked');
      expect(await ctx.store.markSent(p, 'G-p2', 23)).toMatchObject({ estado: 'entregado', error: null, cobrado: 1 });
      expect(await saldo(l.clienteId)).toBe(3);
    });

    it('each line parks at most PARKED_PER_LINE receipts for unknown ids: the next are refused, another line still parks', async () => {
      const l = await line(5);
      const otro = await otherLine();
      for (let i = 0; i < PARKED_PER_LINE; i++) expect(await ctx.store.receipt(l.celularId, `U-${i}`, 'entregado', 10)).toBe('parked');
      expect(await ctx.store.receipt(l.celularId, 'U-over', 'entregado', 11)).toBeNull();
      // Refused, not parked: a send later recorded under that id gets nothing of it, while those parked first still apply.
      const id = await accept(l, 12);
      expect(await ctx.store.markSent(id, 'U-over', 13)).toMatchObject({ estado: 'enviado', entregado_at: null });
      const first = await accept(l, 14);
      expect(await ctx.store.markSent(first, 'U-0', 15)).toMatchObject({ estado: 'entregado', entregado_at: 15 });
      expect(await ctx.store.receipt(otro, 'U-other', 'entregado', 16)).toBe('parked');
      // Once they expire, the line parks again.
      expect(await ctx.store.receipt(l.celularId, 'U-later', 'entregado', 16 + PARKED_TTL_MS + 1)).toBe('parked');
    }, 60_000);

    it("an 'error' receipt does nothing to a pendiente message (parked, applied at markSent) nor to a leido one", async () => {
      const l = await line(5);
      // pendiente: the receipt waits; nothing is refunded before the send is recorded.
      const p = await accept(l, 10);
      expect(await ctx.store.receipt(l.celularId, 'G-p', 'error', 11, 'failed early')).toBe('parked');
      expect(await ctx.store.getMensaje(p)).toMatchObject({ estado: 'pendiente', cobrado: 1, error: null });
      expect(await saldo(l.clienteId)).toBe(4);
      // Once recorded, the parked failure applies, with the refund.
      expect(await ctx.store.markSent(p, 'G-p', 12)).toMatchObject({ estado: 'error', error: 'failed early', cobrado: 0 });
      expect(await saldo(l.clienteId)).toBe(5);

      // leido: the message was read; a late failure report is ignored.
      const r = await accept(l, 20);
      await ctx.store.markSent(r, 'G-r', 21);
      await ctx.store.receipt(l.celularId, 'G-r', 'leido', 22);
      await journal(23);
      expect(await ctx.store.receipt(l.celularId, 'G-r', 'error', 24, 'late')).toBeNull();
      expect(await ctx.store.getMensaje(r)).toMatchObject({ estado: 'leido', error: null, cobrado: 1 });
      expect(await saldo(l.clienteId)).toBe(4);
      expect(await journal(25)).toEqual([]);
    });

    it('journalInbound: false for a repeated key, true for a new one; a null key never dedupes; the inbox row goes with the event', async () => {
      const l = await line();
      const ev = (texto: string) => ({
        evento: 'messages.received',
        cliente_id: l.clienteId,
        celular_id: l.celularId,
        data: { texto },
        fecha: 100,
      });
      const rec = (texto: string) => ({
        cliente_id: l.clienteId,
        celular_id: l.celularId,
        de: '14155552671',
        tipo: 'texto',
        texto,
        media: null,
        gateway_msg_id: null,
        fecha: 90,
      });
      const inbox = async () => (await ctx.store.listRecibidos({ cliente_id: l.clienteId, page: 1, por_pagina: 50 })).rows.map((r) => r.texto);
      expect(await ctx.store.journalInbound(ev('uno'), 'sim:i:A', 100, rec('uno'))).toBe(true);
      expect(await ctx.store.journalInbound(ev('uno otra vez'), 'sim:i:A', 101, rec('uno otra vez'))).toBe(false);
      expect(await ctx.store.journalInbound(ev('dos'), 'sim:i:B', 102, rec('dos'))).toBe(true);
      expect(await ctx.store.journalInbound(ev('sin clave'), null, 103, rec('sin clave'))).toBe(true);
      expect(await ctx.store.journalInbound(ev('sin clave'), null, 104, rec('sin clave'))).toBe(true);
      expect(await inbox()).toEqual(['sin clave', 'sin clave', 'dos', 'uno']);
      expect((await journal(105)).map((e) => [e.evento, e.data.texto])).toEqual([
        ['messages.received', 'uno'],
        ['messages.received', 'dos'],
        ['messages.received', 'sin clave'],
        ['messages.received', 'sin clave'],
      ]);
      // The key is remembered after its event left the journal.
      expect(await ctx.store.journalInbound(ev('uno, tarde'), 'sim:i:A', 200, rec('uno, tarde'))).toBe(false);
      expect(await journal(201)).toEqual([]);
      expect(await inbox()).toHaveLength(4);
      // With a webhook, an incoming message's delivery is due when it is recorded, whatever time the gateway gave it.
      await ctx.store.setWebhook({ cliente_id: l.clienteId, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 300);
      expect(await ctx.store.journalInbound({ ...ev('del futuro'), fecha: 9_000_000 }, 'sim:i:C', 300, rec('del futuro'))).toBe(true);
      expect((await claimableAt(ctx.store, l.clienteId, 300, 10)).map((e) => [JSON.parse(e.body).data.texto, e.proximo_intento_at])).toEqual([
        ['del futuro', 300],
      ]);
    });
  });
}
