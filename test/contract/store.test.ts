import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/caps.js';
import type { NewCelular, NewMensaje, Store } from '../../src/core/ports.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { tempDir } from '../helpers/server.js';

/**
 * The Store contract, run against every adapter (SQLite today; PostgreSQL
 * joins this list when it exists).
 */
const ADAPTERS: Array<{ name: string; open(): { store: Store; reopen(): Store; cleanup(): void } }> = [
  {
    name: 'sqlite',
    open() {
      const dir = tempDir('pasarela-store-');
      const file = join(dir, 'test.db');
      return { store: new SqliteStore(file), reopen: () => new SqliteStore(file), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
];

const celular = (cliente_id: number, numero: string): NewCelular => ({
  cliente_id,
  numero,
  nombre_interno: null,
  estado: 'desconectado',
  max_envios_por_minuto: 12,
  max_envios_por_hora: 500,
  max_envios_por_dia: null,
  hora_inicio_permitido: '00:00',
  hora_fin_permitido: '23:59',
  key_hash: 'k'.repeat(64),
  gateway_token_hash: `${numero}`.padEnd(64, 'g'),
});

/** New text messages of one line, numbered from 1, queued unless asked otherwise. */
function messages(clienteId: number, celularId: number): (modo?: 'cola' | 'directo') => NewMensaje {
  let n = 0;
  return (modo = 'cola') => ({
    msg_id: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
    cliente_id: clienteId,
    celular_id: celularId,
    destinatario: '14155552671',
    tipo: 'texto',
    modo,
    texto: 'x',
    media: null,
    payload: { texto: 'x' },
    expira_at: null,
  });
}

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: Store contract`, () => {
    let h: ReturnType<typeof adapter.open>;
    let store: Store;
    beforeEach(() => {
      h = adapter.open();
      store = h.store;
    });
    afterEach(async () => {
      await store.close();
      h.cleanup();
    });

    const newCliente = (max: number | null = null) =>
      store.createCliente({ nombre: 'A', email: 'a@x.mx', plan: 'medido', estado: 'activo', max_celulares: max, saldo_global: 0, key_hash: 'h' }, 1000);

    it('creates celulares under the cap and refuses a taken number', async () => {
      const c = await newCliente(1);
      const a = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      expect(a.ok).toBe(true);
      expect(await store.insertCelular(celular(c.id, '525512345679'), 1000)).toEqual({ ok: false, reason: 'cap' });
      const other = await newCliente();
      expect(await store.insertCelular(celular(other.id, '525512345678'), 1000)).toEqual({ ok: false, reason: 'taken' });
      expect(await store.insertCelular(celular(9999, '525512345670'), 1000)).toEqual({ ok: false, reason: 'cliente' });
    });

    it('never lets a balance go negative and records every change', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      expect(await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 10, motivo: 'r', actor: 'op' }, 1)).toMatchObject({ ok: true, saldo_global: 10 });
      expect(await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: -11, motivo: 'r', actor: 'op' }, 1)).toEqual({ ok: false, reason: 'negativo' });
      expect(await store.changeBalance({ cliente_id: c.id, celular_id: cel.celular.id, monto: 3, motivo: 'r', actor: 'op' }, 1)).toMatchObject({ ok: true, saldo_global: 10, saldo_celular: 3 });
      expect(await store.changeBalance({ cliente_id: c.id + 1, celular_id: cel.celular.id, monto: 3, motivo: 'r', actor: 'op' }, 1)).toEqual({ ok: false, reason: 'cliente' });
      expect((await store.getCelular(cel.celular.id))?.saldo_actual).toBe(3);
    });

    it('deletes with an audit record that outlives the row', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      const audit = { actor: 'cliente:1', accion: 'celular.eliminar', objeto_tipo: 'celular', objeto_id: cel.celular.id, cliente_id: c.id, detalle: { numero: '525512345678' } };
      expect(await store.deleteCelular(cel.celular.id, audit, 2000)).toBe(true);
      expect(await store.deleteCelular(cel.celular.id, audit, 2000)).toBe(false);
      expect(await store.getCelular(cel.celular.id)).toBeNull();
      const rows = await store.listAudit({ cliente_id: c.id, limit: 10 });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ accion: 'celular.eliminar', fecha: 2000, detalle: { numero: '525512345678' } });
    });

    it('finds a line by gateway or legacy token hash and by instance', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await store.updateCelular(cel.celular.id, { legacy_token_hash: 'L'.repeat(64), gateway_instancia: 'pasarela-1' }, 1001);
      expect((await store.getCelularByTokenHash('525512345678'.padEnd(64, 'g')))?.id).toBe(cel.celular.id);
      expect((await store.getCelularByTokenHash('L'.repeat(64)))?.id).toBe(cel.celular.id);
      expect(await store.getCelularByTokenHash('x'.repeat(64))).toBeNull();
      expect((await store.getCelularByInstancia('pasarela-1'))?.id).toBe(cel.celular.id);
    });

    it('accepts messages atomically: a refusal changes nothing, the queue depth follows every estado change', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      const msg = messages(c.id, cel.celular.id);
      const opts = { charge: true, maxPending: 2 };
      expect(await store.acceptMensaje(msg(), opts, 1)).toEqual({ ok: false, reason: 'saldo' });
      await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      const a = msg();
      expect(await store.acceptMensaje(a, opts, 2)).toMatchObject({ ok: true, cargo: 'global', saldo_global: 4 });
      expect(await store.acceptMensaje(msg(), opts, 3)).toMatchObject({ ok: true });
      expect(await store.acceptMensaje(msg(), opts, 4)).toEqual({ ok: false, reason: 'cola_llena' });
      expect(await store.acceptMensaje(msg('directo'), opts, 4)).toMatchObject({ ok: true });
      expect((await store.getCliente(c.id))?.saldo_global).toBe(2);
      expect(await store.markSent(a.msg_id, 'G1', 5)).toMatchObject({ estado: 'enviado', gateway_msg_id: 'G1' });
      expect(await store.markSent(a.msg_id, 'G2', 6)).toBeNull();
      expect(await store.acceptMensaje(msg(), opts, 7)).toMatchObject({ ok: true });
      const failed = await store.failMensaje(a.msg_id, 'x', 8);
      expect(failed).toMatchObject({ estado: 'error', cobrado: 0 });
      expect(await store.failMensaje(a.msg_id, 'x', 9)).toBeNull();
      expect((await store.getCliente(c.id))?.saldo_global).toBe(2);
    });

    it('journals each change with it for a client with an active webhook only, and moves journaled events to the outbox in one step', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      const m = messages(c.id, cel.celular.id)();
      const seen: Array<[string, unknown]> = [];
      const route = (ev: { evento: string; data: Record<string, unknown> }, cfg: unknown) => {
        seen.push([ev.evento, (ev.data as { estado?: string; status?: string }).estado ?? (ev.data as { status?: string }).status]);
        return cfg ? { id: `evt_${seen.length}`, body: JSON.stringify(ev) } : null;
      };
      const connected = (fecha: number) => ({ evento: 'session.status' as const, cliente_id: c.id, celular_id: cel.celular.id, data: { status: 'connected' }, fecha });
      // No webhook, or an inactive one: nobody to tell, nothing journaled.
      await store.acceptMensaje(m, { charge: true, maxPending: null }, 2);
      await store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: false }, 3);
      await store.updateCelular(cel.celular.id, { last_status: 'connected' }, 3, connected(3));
      expect(await store.moveEventsToOutbox(10, route, 4)).toBe(0);
      expect(seen).toEqual([]);
      // Active: each change journals its event with it, and the move turns them into deliveries.
      await store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 5);
      await store.markSent(m.msg_id, 'G1', 6);
      await store.updateCelular(cel.celular.id, { last_status: 'connected' }, 7, connected(7));
      await store.failMensaje(m.msg_id, 'x', 8);
      expect(await store.moveEventsToOutbox(10, route, 9)).toBe(3);
      expect(seen).toEqual([['message.status', 'enviado'], ['session.status', 'connected'], ['message.status', 'error']]);
      expect(await store.moveEventsToOutbox(10, route, 10)).toBe(0);
      expect((await store.dueEntregas(c.id, 10, 10)).map((e) => e.evento)).toEqual(['message.status', 'session.status', 'message.status']);
      // Due from the move (9): not before, and nothing else pending after it.
      expect(await store.dueEntregas(c.id, 8, 10)).toEqual([]);
      expect(await store.nextEntregaAt(c.id, 8)).toBe(9);
      expect(await store.entregaQueues()).toEqual([{ cliente_id: c.id, next_at: 9 }]);
    });

    it('send slots: a direct acceptance and a queued claim take slots of the same caps; in flight they count, a failure gives one back', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular({ ...celular(c.id, '525512345678'), max_envios_por_minuto: 2 }, 1000);
      if (!cel.ok) throw new Error('insert');
      const msg = messages(c.id, cel.celular.id);
      const t = 100_000;
      const slot = (now: number) => slotClaim(cel.celular, now, 60_000);
      const q1 = msg('cola');
      const q2 = msg('cola');
      await store.acceptMensaje(q1, { charge: false, maxPending: null }, t);
      await store.acceptMensaje(q2, { charge: false, maxPending: null }, t);
      // One direct send in flight, one queued claim: the minute is full, whatever the mode of the third.
      const d1 = msg('directo');
      expect(await store.acceptMensaje(d1, { charge: false, maxPending: null, slot: slot(t) }, t)).toMatchObject({ ok: true });
      expect(await store.claimQueued(q1.msg_id, slot(t), t)).toEqual({ ok: true });
      expect(await store.claimQueued(q1.msg_id, slot(t), t)).toEqual({ ok: false, reason: 'taken' });
      // Both in flight: no send made yet, so "ask again shortly" rather than a minute.
      expect(await store.claimQueued(q2.msg_id, slot(t), t)).toEqual({ ok: false, reason: 'cap', retryAfterMs: 1000, which: 'per minute', cap: 2 });
      expect(await store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot: slot(t) }, t)).toMatchObject({ ok: false, reason: 'cap' });
      // The direct send is made at t+10: it counts from then; the queued one fails for good and frees its slot.
      await store.markSent(d1.msg_id, 'G1', t + 10);
      await store.failMensaje(q1.msg_id, 'refused', t + 20);
      expect(await store.claimQueued(q2.msg_id, slot(t + 30), t + 30)).toEqual({ ok: true });
      expect(await store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot: slot(t + 40) }, t + 40)).toMatchObject({
        ok: false,
        reason: 'cap',
        retryAfterMs: 60_000 - 30,
      });
      // A claim given back for a retry frees its slot too.
      await store.retryLater(q2.msg_id, t + 5000, 'down');
      expect(await store.acceptMensaje(msg('directo'), { charge: false, maxPending: null, slot: slot(t + 50) }, t + 50)).toMatchObject({ ok: true });
    });

    it('history totals read from the kept counts equal the totals counted over the rows, through every state change', async () => {
      const c = await newCliente();
      const [a, b] = await Promise.all(['525512345678', '525512345679'].map((n) => store.insertCelular(celular(c.id, n), 1000)));
      if (!a?.ok || !b?.ok) throw new Error('insert');
      const ofA = messages(c.id, a.celular.id);
      const ofB = messages(c.id, b.celular.id);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const m = { ...(i % 3 === 0 ? ofB() : ofA(i % 2 ? 'directo' : 'cola')), msg_id: `00000000-0000-4000-8000-${String(100 + i).padStart(12, '0')}` };
        await store.acceptMensaje(m, { charge: false, maxPending: null }, 2000 + i);
        ids.push(m.msg_id);
      }
      for (const [i, id] of ids.entries()) {
        if (i % 4 === 3) await store.failMensaje(id, 'refused', 3000);
        else if (i % 4 !== 0) await store.markSent(id, `G${i}`, 3000);
      }
      await store.receipt('G1', 'entregado', 4000);
      await store.receipt('G2', 'leido', 4000);
      await store.receipt('G5', 'error', 4000, 'lost');
      const filters = [{}, { estado: 'enviado' as const }, { estado: 'error' as const }, { celular_id: a.celular.id }, { celular_id: b.celular.id, estado: 'pendiente' as const }];
      for (const f of filters) {
        const kept = await store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1, ...f });
        // A date filter off a quarter-hour boundary that takes every row makes the store count the rows themselves.
        const counted = await store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1, desde: 1, ...f });
        expect(kept.total, JSON.stringify(f)).toBe(counted.total);
      }
      // Whole quarter hours, no other filter: the per-quarter counts, which must agree with a count too.
      for (const [desde, hasta] of [[0, 900_000], [0, undefined], [900_000, 1_800_000]] as const) {
        const kept = await store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1, desde, ...(hasta ? { hasta } : {}) });
        const counted = await store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1, desde: desde + 1, ...(hasta ? { hasta: hasta - 1 } : {}) });
        expect(kept.total, `${desde}-${hasta}`).toBe(counted.total);
      }
      expect((await store.listMensajes({ cliente_id: c.id, page: 1, por_pagina: 1 })).total).toBe(12);
    });

    it('kv entries with an expiry are removed once past it, in batches; the others stay', async () => {
      await store.kvSet('ns', 'keep', 1);
      await store.kvSet('ns', 'old1', 2, 10);
      await store.kvSet('ns', 'old2', 3, 20);
      await store.kvSet('ns', 'young', 4, 1000);
      expect(await store.kvExpire(500, 1)).toBe(1);
      expect(await store.kvExpire(500, 10)).toBe(1);
      expect(await store.kvExpire(500, 10)).toBe(0);
      expect((await store.kvList('ns')).map((e) => e.key)).toEqual(['keep', 'young']);
    });

    it('keeps data and applies no migration twice on reopen', async () => {
      const c = await newCliente();
      await store.kvSet('ns', 'k', { a: 1 });
      await store.close();
      store = h.reopen();
      expect((await store.getCliente(c.id))?.nombre).toBe('A');
      expect(await store.kvGet('ns', 'k')).toEqual({ a: 1 });
      expect(await store.kvList('ns')).toEqual([{ key: 'k', value: { a: 1 } }]);
    });
  });
}

/**
 * Gateway receipts and incoming messages (migration 6): a receipt that beats
 * the send's own record is parked and applied by markSent, in order; an
 * `error` receipt ends a sent message with its refund, once; an incoming
 * message's gateway key is journaled once. The journal is read through
 * moveEventsToOutbox (its route keeps every event out of the outbox), and
 * balance movements are counted through the ids changeBalance returns.
 */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: Store contract, gateway receipts and inbound dedupe`, () => {
    let h: ReturnType<typeof adapter.open>;
    let store: Store;
    beforeEach(() => {
      h = adapter.open();
      store = h.store;
    });
    afterEach(async () => {
      await store.close();
      h.cleanup();
    });

    /** A client with `saldo` global credit and one line; returns the ids and the movimiento id of the top-up. */
    async function line(saldo = 5) {
      const c = await store.createCliente({ nombre: 'R', email: 'r@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' }, 1);
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1);
      if (!cel.ok) throw new Error('insert');
      const top = await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: saldo, motivo: 'recarga', actor: 'op' }, 1);
      if (!top.ok) throw new Error('top-up');
      // An active webhook, so that the client's events are journaled (the route below keeps them out of the outbox).
      await store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 1);
      return { clienteId: c.id, celularId: cel.celular.id, movimiento: top.movimiento_id };
    }

    let n = 0;
    const accept = async (l: { clienteId: number; celularId: number }, now: number) => {
      const msg_id = `00000000-0000-4000-9000-${String(++n).padStart(12, '0')}`;
      const r = await store.acceptMensaje(
        { msg_id, cliente_id: l.clienteId, celular_id: l.celularId, destinatario: '14155552671', tipo: 'texto', modo: 'cola', texto: 'x', media: null, payload: { texto: 'x' }, expira_at: null },
        { charge: true, maxPending: null },
        now,
      );
      expect(r).toMatchObject({ ok: true, cargo: 'global' });
      return msg_id;
    };

    /** Takes every journaled event (in order) out of the journal. */
    async function journal(now: number): Promise<Array<{ evento: string; data: Record<string, any>; fecha: number }>> {
      const seen: Array<{ evento: string; data: Record<string, any>; fecha: number }> = [];
      await store.moveEventsToOutbox(1000, (ev) => (seen.push({ evento: ev.evento, data: ev.data, fecha: ev.fecha }), null), now);
      return seen;
    }
    const saldo = async (clienteId: number) => (await store.getCliente(clienteId))!.saldo_global;
    /** The id the next movimiento gets, found by recording one (+0 is refused, so +1). */
    const nextMovimiento = async (clienteId: number) => {
      const r = await store.changeBalance({ cliente_id: clienteId, celular_id: null, monto: 1, motivo: 'sonda', actor: 'op' }, 1);
      if (!r.ok) throw new Error('probe');
      return r.movimiento_id;
    };

    it('parks receipts for an unknown gateway id; markSent applies them in order (entregado, then leido), journaling each step', async () => {
      const l = await line();
      const id = await accept(l, 10);
      await journal(11);
      // The read receipt arrives first, then the delivery one, both before the send is recorded.
      expect(await store.receipt('G-early', 'leido', 12)).toBe('parked');
      expect(await store.receipt('G-early', 'entregado', 13)).toBe('parked');
      expect(await store.getMensaje(id)).toMatchObject({ estado: 'pendiente', gateway_msg_id: null, entregado_at: null, leido_at: null });
      expect(await journal(14)).toEqual([]);

      const after = await store.markSent(id, 'G-early', 20);
      expect(after).toMatchObject({ msg_id: id, estado: 'leido', gateway_msg_id: 'G-early', enviado_at: 20, entregado_at: 20, leido_at: 20, error: null });
      const evs = await journal(21);
      expect(evs.map((e) => [e.evento, e.data.estado_anterior, e.data.estado])).toEqual([
        ['message.status', 'pendiente', 'enviado'],
        ['message.status', 'enviado', 'entregado'],
        ['message.status', 'entregado', 'leido'],
      ]);
      for (const e of evs) expect(e).toMatchObject({ fecha: 20, data: { msg_id: id, gateway_msg_id: 'G-early' } });

      // Applied once: the parked rows are gone, and a late repeat never moves the message backwards.
      expect(await store.receipt('G-early', 'entregado', 30)).toBeNull();
      expect(await store.receipt('G-early', 'leido', 31)).toBeNull();
      expect(await journal(32)).toEqual([]);
      // A message sent later under another gateway id gets nothing of them.
      const other = await accept(l, 40);
      expect(await store.markSent(other, 'G-other', 41)).toMatchObject({ estado: 'enviado', entregado_at: null, leido_at: null });
      expect(await saldo(l.clienteId)).toBe(3);
    });

    it('receipts on a recorded send move it forward only: enviado -> entregado -> leido, never back', async () => {
      const l = await line();
      const id = await accept(l, 10);
      await store.markSent(id, 'G1', 11);
      await journal(12);
      expect(await store.receipt('G1', 'entregado', 13)).toMatchObject({ before: { estado: 'enviado' }, after: { estado: 'entregado', entregado_at: 13 } });
      expect(await store.receipt('G1', 'entregado', 14)).toBeNull();
      expect(await store.receipt('G1', 'leido', 15)).toMatchObject({ before: { estado: 'entregado' }, after: { estado: 'leido', leido_at: 15, entregado_at: 13 } });
      expect(await store.receipt('G1', 'entregado', 16)).toBeNull();
      expect((await journal(17)).map((e) => [e.data.estado_anterior, e.data.estado, e.fecha])).toEqual([
        ['enviado', 'entregado', 13],
        ['entregado', 'leido', 15],
      ]);
    });

    it("an 'error' receipt on an enviado message ends it in error with its refund: saldo restored, one movimiento, once", async () => {
      const l = await line(5);
      const id = await accept(l, 10);
      expect(await saldo(l.clienteId)).toBe(4);
      await store.markSent(id, 'G-err', 11);
      await journal(12);

      const r = await store.receipt('G-err', 'error', 13, 'recipient unreachable');
      expect(r).toMatchObject({ before: { estado: 'enviado' }, after: { msg_id: id, estado: 'error', error: 'recipient unreachable', cobrado: 0 } });
      expect(await saldo(l.clienteId)).toBe(5);
      expect((await journal(14)).map((e) => [e.evento, e.data.estado_anterior, e.data.estado, e.data.error])).toEqual([
        ['message.status', 'enviado', 'error', 'recipient unreachable'],
      ]);

      // Repeats change nothing: no second refund, and error is final.
      expect(await store.receipt('G-err', 'error', 15, 'again')).toBeNull();
      expect(await store.receipt('G-err', 'entregado', 16)).toBeNull();
      expect(await store.failMensaje(id, 'again', 17)).toBeNull();
      expect(await saldo(l.clienteId)).toBe(5);
      expect(await journal(18)).toEqual([]);
      // Movimientos since the top-up: the charge, the refund, and this probe.
      expect(await nextMovimiento(l.clienteId)).toBe(l.movimiento + 3);
    });

    it("an 'error' receipt does nothing to a pendiente message (parked, applied at markSent) nor to a leido one", async () => {
      const l = await line(5);
      // pendiente: the receipt waits; nothing is refunded before the send is recorded.
      const p = await accept(l, 10);
      expect(await store.receipt('G-p', 'error', 11, 'failed early')).toBe('parked');
      expect(await store.getMensaje(p)).toMatchObject({ estado: 'pendiente', cobrado: 1, error: null });
      expect(await saldo(l.clienteId)).toBe(4);
      // Once recorded, the parked failure applies, with the refund.
      expect(await store.markSent(p, 'G-p', 12)).toMatchObject({ estado: 'error', error: 'failed early', cobrado: 0 });
      expect(await saldo(l.clienteId)).toBe(5);

      // leido: the message was read; a late failure report is ignored.
      const r = await accept(l, 20);
      await store.markSent(r, 'G-r', 21);
      await store.receipt('G-r', 'leido', 22);
      await journal(23);
      expect(await store.receipt('G-r', 'error', 24, 'late')).toBeNull();
      expect(await store.getMensaje(r)).toMatchObject({ estado: 'leido', error: null, cobrado: 1 });
      expect(await saldo(l.clienteId)).toBe(4);
      expect(await journal(25)).toEqual([]);
    });

    it('journalInbound: false for a repeated key, true for a new one; a null key never dedupes', async () => {
      const l = await line();
      const ev = (texto: string) => ({
        evento: 'messages.received',
        cliente_id: l.clienteId,
        celular_id: l.celularId,
        data: { texto },
        fecha: 100,
      });
      expect(await store.journalInbound(ev('uno'), 'sim:i:A', 100)).toBe(true);
      expect(await store.journalInbound(ev('uno otra vez'), 'sim:i:A', 101)).toBe(false);
      expect(await store.journalInbound(ev('dos'), 'sim:i:B', 102)).toBe(true);
      expect(await store.journalInbound(ev('sin clave'), null, 103)).toBe(true);
      expect(await store.journalInbound(ev('sin clave'), null, 104)).toBe(true);
      expect((await journal(105)).map((e) => [e.evento, e.data.texto])).toEqual([
        ['messages.received', 'uno'],
        ['messages.received', 'dos'],
        ['messages.received', 'sin clave'],
        ['messages.received', 'sin clave'],
      ]);
      // The key is remembered after its event left the journal.
      expect(await store.journalInbound(ev('uno, tarde'), 'sim:i:A', 200)).toBe(false);
      expect(await journal(201)).toEqual([]);
    });
  });
}
