import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewCelular, Store } from '../../src/core/ports.js';
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
      let n = 0;
      const msg = (modo: 'cola' | 'directo' = 'cola') => ({
        msg_id: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
        cliente_id: c.id,
        celular_id: cel.celular.id,
        destinatario: '14155552671',
        tipo: 'texto' as const,
        modo,
        texto: 'x',
        media: null,
        payload: { texto: 'x' },
        expira_at: null,
      });
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

    it('journals each change with it, and moves journaled events to the outbox in one step', async () => {
      const c = await newCliente();
      const cel = await store.insertCelular(celular(c.id, '525512345678'), 1000);
      if (!cel.ok) throw new Error('insert');
      await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 5, motivo: 'r', actor: 'op' }, 1);
      const m = {
        msg_id: '00000000-0000-4000-8000-00000000000a',
        cliente_id: c.id,
        celular_id: cel.celular.id,
        destinatario: '14155552671',
        tipo: 'texto' as const,
        modo: 'cola' as const,
        texto: 'x',
        media: null,
        payload: { texto: 'x' },
        expira_at: null,
      };
      await store.acceptMensaje(m, { charge: true, maxPending: null }, 2);
      await store.markSent(m.msg_id, 'G1', 3);
      await store.updateCelular(cel.celular.id, { last_status: 'connected' }, 4, {
        evento: 'session.status', cliente_id: c.id, celular_id: cel.celular.id, data: { status: 'connected' }, fecha: 4,
      });
      const seen: Array<[string, unknown]> = [];
      const route = (ev: { evento: string; data: Record<string, unknown> }, cfg: unknown) => {
        seen.push([ev.evento, (ev.data as { estado?: string; status?: string }).estado ?? (ev.data as { status?: string }).status]);
        return cfg ? { id: `evt_${seen.length}`, body: JSON.stringify(ev) } : null;
      };
      expect(await store.moveEventsToOutbox(10, route, 5)).toBe(3);
      expect(seen).toEqual([['message.status', 'pendiente'], ['message.status', 'enviado'], ['session.status', 'connected']]);
      expect(await store.moveEventsToOutbox(10, route, 6)).toBe(0);
      // Without a configuration nothing reached the outbox; with one, the next events do.
      expect(await store.dueEntregas(10, 10)).toEqual([]);
      await store.setWebhook({ cliente_id: c.id, url: 'http://127.0.0.1:9/', secret: null, eventos: ['all'], activo: true }, 7);
      await store.failMensaje(m.msg_id, 'x', 8);
      expect(await store.moveEventsToOutbox(10, route, 9)).toBe(1);
      expect((await store.dueEntregas(10, 10)).map((e) => e.evento)).toEqual(['message.status']);
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
