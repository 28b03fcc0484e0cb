import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { until } from '../helpers/poll.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { admin, editCelular, linkedLine, numeroNuevo, queueLinesExact } from './send-helpers.js';
import { crearGrupo, lineOf, phoneLogout, sendPool, siblingLine } from './grupos-helpers.js';

/**
 * Pools (docs/pools.md): their CRUD and refusals, and a send naming a pool:
 * sticky per recipient, skipping a line that is down or full, and caps exact
 * across two nodes on PostgreSQL.
 */

/** Each balance equals the sum of its ledger rows: the client's global one and each line's. */
async function ledgerAddsUp(s: TestServer, clienteId: number, lineIds: number[]): Promise<void> {
  const sql = 'SELECT celular_id, SUM(monto) AS total FROM movimientos_saldo WHERE cliente_id = $1 GROUP BY celular_id';
  const store = s.core.store as unknown as Partial<SqliteStore & PgStore>;
  const sums: Array<{ celular_id: number | null; total: number }> =
    s.core.store.caps.name === 'postgres'
      ? await (store as PgStore).db.q(sql, [clienteId])
      : ((store as SqliteStore).db.prepare(sql.replace('$1', '?')).all(clienteId) as Array<{ celular_id: number | null; total: number }>);
  const total = (id: number | null) => Number(sums.find((r) => r.celular_id === id)?.total ?? 0);
  expect(total(null)).toBe((await s.core.store.getCliente(clienteId))!.saldo_global);
  for (const id of lineIds) expect(total(id)).toBe((await s.core.store.getCelular(id))!.saldo_actual);
}

const driven = (s: TestServer): ManualClock => {
  if (!(s.clock instanceof ManualClock)) throw new Error('a driven clock is expected');
  return s.clock;
};

const suite = (name: string, start: () => Promise<TestServer>) =>
  describe(name, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await start();
    });
    afterAll(async () => {
      await s.stop();
    });

    it('creates, lists, edits and deletes a pool; refuses bad names, taken names, and lines of another client', async () => {
      const a = await linkedLine(s, { link: false });
      const a2 = await siblingLine(s, a, { link: false });
      const other = await linkedLine(s, { link: false });
      const c = await crearGrupo(s, a, { nombre: 'codigos', celulares: [a2.celularId, a.celularId], conmutacion_s: 60 });
      expect(c.status, c.text).toBe(201);
      expect(c.body.grupo).toMatchObject({ nombre: 'codigos', celulares: [a.celularId, a2.celularId], conmutacion_s: 60 });
      const id = c.body.grupo.id as number;

      const dup = await crearGrupo(s, a, { nombre: ' codigos ', celulares: [a.celularId] });
      expect(dup.status, dup.text).toBe(409);
      expect(dup.body).toMatchObject({ ok: false, api_codigo: 644 });
      // Names are per client: another client may use it.
      expect((await crearGrupo(s, other, { nombre: 'codigos', celulares: [other.celularId] })).status).toBe(201);

      for (const nombre of ['', '   ', 'x'.repeat(65), 'a\nb']) {
        const r = await crearGrupo(s, a, { nombre, celulares: [a.celularId] });
        expect(r.status, `${JSON.stringify(nombre)}: ${r.text}`).toBe(400);
        expect(r.body.api_codigo).toBe(100);
      }
      const foreign = await crearGrupo(s, a, { nombre: 'ajeno', celulares: [a.celularId, other.celularId] });
      expect(foreign.status, foreign.text).toBe(404);
      expect(foreign.body.api_codigo).toBe(600);
      for (const bad of [[], [0], 'x', [a.celularId, 'y']]) {
        const r = await crearGrupo(s, a, { nombre: 'malo', celulares: bad });
        expect(r.status, `${JSON.stringify(bad)}: ${r.text}`).toBe(400);
      }
      expect((await crearGrupo(s, a, { nombre: 'malo', celulares: [a.celularId], conmutacion_s: 3 })).status).toBe(400);
      // A celular key manages no pools.
      const byLine = await api(s.url, 'POST', '/api/grupo_crear.php', { key: a.celularKey, json: { nombre: 'linea', celulares: [a.celularId] } });
      expect(byLine.status, byLine.text).toBe(403);

      // A form body: ids separated by commas; "" is null (never).
      const f = await api(s.url, 'POST', '/api/grupo_crear.php', {
        key: a.clientKey,
        form: { nombre: 'campaña', celulares: `${a.celularId},${a2.celularId}`, conmutacion_s: '' },
      });
      expect(f.status, f.text).toBe(201);
      expect(f.body.grupo).toMatchObject({ nombre: 'campaña', celulares: [a.celularId, a2.celularId], conmutacion_s: null });

      const list = await api(s.url, 'GET', '/api/grupos.php', { key: a.clientKey });
      expect(list.status, list.text).toBe(200);
      expect(list.body.grupos.map((g: { nombre: string }) => g.nombre)).toEqual(['campaña', 'codigos']);

      const taken = await api(s.url, 'POST', `/api/grupo_editar.php?id=${id}`, { key: a.clientKey, json: { nombre: 'campaña' } });
      expect(taken.status, taken.text).toBe(409);
      const e = await api(s.url, 'POST', '/api/grupo_editar.php', {
        key: a.clientKey,
        form: { grupo: 'codigos', nombre: 'otp', celulares: String(a2.celularId), conmutacion_s: 'null' },
      });
      expect(e.status, e.text).toBe(200);
      expect(e.body.grupo).toMatchObject({ id, nombre: 'otp', celulares: [a2.celularId], conmutacion_s: null });
      // Another client's pool is not found.
      const otherEdit = await api(s.url, 'POST', `/api/grupo_editar.php?id=${id}`, { key: other.clientKey, json: { nombre: 'mio' } });
      expect(otherEdit.status, otherEdit.text).toBe(404);
      expect(otherEdit.body.api_codigo).toBe(643);

      const d = await api(s.url, 'POST', '/api/grupo_eliminar.php', { key: a.clientKey, json: { id } });
      expect(d.status, d.text).toBe(200);
      expect(d.body).toMatchObject({ id, nombre: 'otp', eliminado: true });
      const again = await api(s.url, 'POST', '/api/grupo_eliminar.php', { key: a.clientKey, json: { id } });
      expect(again.status).toBe(404);
      // A deleted line leaves its pools.
      expect((await api(s.url, 'POST', `/api/celular_eliminar.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(200);
      const after = await api(s.url, 'GET', '/api/grupos.php', { key: a.clientKey });
      expect(after.body.grupos).toEqual([expect.objectContaining({ nombre: 'campaña', celulares: [a2.celularId] })]);
    });

    it('sticks a recipient to one line, spreads new recipients by room, skips a line that disconnects', async () => {
      const a = await linkedLine(s, { saldo: 100 });
      const b = await siblingLine(s, a);
      expect((await crearGrupo(s, a, { nombre: 'otp', celulares: [a.celularId, b.celularId] })).status).toBe(201);
      const r1 = numeroNuevo();
      const r2 = numeroNuevo();
      const first = await sendPool(s, a, 'otp', r1, 'uno', { directo: 1 });
      expect(first.status, first.text).toBe(200);
      const l1 = await lineOf(s, first.body.msg_id);
      // The answer names the line picked (a send naming its line says nothing new: no field).
      expect(first.body.celular_id).toBe(l1);
      const byLine = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
        key: a.clientKey,
        json: { celular_id: a.celularId, destinatario: numeroNuevo(), mensaje: 'x' },
      });
      expect(byLine.status, byLine.text).toBe(200);
      expect(byLine.body).not.toHaveProperty('celular_id');
      // The other recipient goes to the line with more room (the first line has one send in its windows).
      const other = await sendPool(s, a, 'otp', r2, 'dos', { directo: 1 });
      expect(other.status, other.text).toBe(200);
      const l2 = await lineOf(s, other.body.msg_id);
      expect(other.body.celular_id).toBe(l2);
      expect(l2).not.toBe(l1);
      for (let i = 0; i < 3; i++) {
        const again = await sendPool(s, a, 'otp', r1, `otra ${i}`, { directo: i % 2 });
        expect(again.status, again.text).toBe(200);
        expect(await lineOf(s, again.body.msg_id)).toBe(l1);
      }
      // A recipient the client last wrote to from a member line, naming it, sticks to that line (D-184).
      const r3 = numeroNuevo();
      const named = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
        key: a.clientKey,
        json: { celular_id: l2, destinatario: r3, mensaje: 'directo' },
      });
      expect(named.status, named.text).toBe(200);
      for (let i = 0; i < 2; i++) expect(await lineOf(s, (await sendPool(s, a, 'otp', r3, `r3 ${i}`)).body.msg_id)).toBe(l2);
      // The sticky line disconnects: the recipient goes through the other one, and stays there.
      await phoneLogout(s, l1 === a.celularId ? a : b);
      await until(async () => (await s.core.store.getCelular(l1!))?.estado !== 'activo', { what: 'line disconnected' });
      s.core.lines.clear();
      const moved = await sendPool(s, a, 'otp', r1, 'sin linea', { directo: 1 });
      expect(moved.status, moved.text).toBe(200);
      expect(await lineOf(s, moved.body.msg_id)).toBe(l2);
      // Both down: a clear 503 naming the pool.
      await phoneLogout(s, l2 === a.celularId ? a : b);
      await until(async () => (await s.core.store.getCelular(l2!))?.estado !== 'activo', { what: 'line disconnected' });
      s.core.lines.clear();
      const from = s.logs.length;
      const none = await sendPool(s, a, 'otp', r2, 'nada');
      expect(none.status, none.text).toBe(503);
      expect(none.body).toMatchObject({ ok: false, api_codigo: 645 });
      expect(none.body.retry_after).toBeGreaterThan(0);
      // A state, not a fault: one warning naming the pool, no error entry and no stack.
      const logged = s.logs
        .slice(from)
        .map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown })
        .filter((l) => /pool "otp"/.test(l.msg));
      expect(logged).toEqual([expect.objectContaining({ level: 40, msg: expect.stringMatching(/^request failed: no line of pool "otp" can send now/) })]);
      expect(logged[0]!.err).toBeUndefined();
    });

    it('skips a line at its caps for a direct send, and answers 429 when every line is full', async () => {
      const a = await linkedLine(s, { saldo: 100 });
      const b = await siblingLine(s, a);
      for (const l of [a, b]) await editCelular(s, l, { max_envios_por_minuto: 1 });
      expect((await crearGrupo(s, a, { nombre: 'lleno', celulares: [a.celularId, b.celularId] })).status).toBe(201);
      const r = numeroNuevo();
      const one = await sendPool(s, a, 'lleno', r, 'uno', { directo: 1 });
      const two = await sendPool(s, a, 'lleno', r, 'dos', { directo: 1 });
      expect([one.status, two.status], two.text).toEqual([200, 200]);
      expect(new Set([await lineOf(s, one.body.msg_id), await lineOf(s, two.body.msg_id)]).size).toBe(2);
      const full = await sendPool(s, a, 'lleno', r, 'tres', { directo: 1 });
      expect(full.status, full.text).toBe(429);
      expect(full.body).toMatchObject({ ok: false, api_codigo: 646 });
    });

    it("fails over a disconnected line's queued messages after the pool's wait, in order per recipient, moving their charges", async () => {
      const a = await linkedLine(s, { saldo: 100 });
      const b = await siblingLine(s, a);
      // Line A's own balance pays its sends; its hours are closed, so its queue waits.
      expect((await admin(s, 'POST', '/admin/saldo', { cliente_id: a.clienteId, celular_id: a.celularId, monto: 10, motivo: 'carga' })).status).toBe(200);
      const now = new Date(s.clock.now());
      const hh = (h: number) => `${String((now.getUTCHours() + h) % 24).padStart(2, '0')}:00`;
      await editCelular(s, a, { hora_inicio_permitido: hh(2), hora_fin_permitido: hh(3) });
      const g = await crearGrupo(s, a, { nombre: 'failover', celulares: [a.celularId], conmutacion_s: 60 });
      expect(g.status, g.text).toBe(201);
      const r1 = numeroNuevo();
      const r2 = numeroNuevo();
      const ids: string[] = [];
      for (const [i, r] of [r1, r2, r1, r2, r1].entries()) {
        const q = await sendPool(s, a, 'failover', r, `m${i}`);
        expect(q.status, q.text).toBe(200);
        ids.push(q.body.msg_id as string);
      }
      expect((await s.core.store.getCelular(a.celularId))!.saldo_actual).toBe(5);
      expect(
        (await api(s.url, 'POST', '/api/grupo_editar.php', { key: a.clientKey, json: { grupo: 'failover', celulares: [a.celularId, b.celularId] } })).status,
      ).toBe(200);

      await phoneLogout(s, a);
      await until(async () => (await s.core.store.getCelular(a.celularId))?.estado !== 'activo', { what: 'line A disconnected' });
      await s.health.checkNow();
      // Not yet: the wait has not passed.
      driven(s).advance(59_000);
      await s.health.checkNow();
      for (const id of ids) expect(await lineOf(s, id)).toBe(a.celularId);
      driven(s).advance(2_000);
      await s.health.checkNow();
      for (const id of ids) expect(await lineOf(s, id)).toBe(b.celularId);
      expect((await s.core.store.queueSizes([a.celularId, b.celularId])).map((q) => q.pendientes)).toEqual([0, 5]);
      queueLinesExact(s);
      // The charges left A's balance (refunded there) for the client's global one (B has none of its own).
      expect((await s.core.store.getCelular(a.celularId))!.saldo_actual).toBe(10);
      expect((await s.core.store.getCliente(a.clienteId))!.saldo_global).toBe(95);
      await ledgerAddsUp(s, a.clienteId, [a.celularId, b.celularId]);
      // The recipients now stick to B; B sends them in their order.
      const next = await sendPool(s, a, 'failover', r1, 'despues');
      expect(await lineOf(s, next.body.msg_id)).toBe(b.celularId);
      ids.push(next.body.msg_id as string);
      await until(
        async () => {
          await s.stepQueue();
          return (await Promise.all(ids.map((id) => s.core.store.getMensaje(id)))).every((m) => m?.estado !== 'pendiente');
        },
        { what: 'moved messages sent' },
      );
      const sentAt = async (id: string) => (await s.core.store.getMensaje(id))!.enviado_at!;
      for (const [x, y] of [
        [0, 2],
        [2, 4],
        [4, 5],
        [1, 3],
      ] as const)
        expect(await sentAt(ids[x]!)).toBeLessThanOrEqual(await sentAt(ids[y]!));
      queueLinesExact(s);
    });

    it('refuses a pool send with a celular key, with celular_id too, or naming an unknown pool', async () => {
      const a = await linkedLine(s, { saldo: 10 });
      expect((await crearGrupo(s, a, { nombre: 'p', celulares: [a.celularId] })).status).toBe(201);
      const byLine = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
        key: a.celularKey,
        json: { grupo: 'p', destinatario: numeroNuevo(), mensaje: 'x' },
      });
      expect(byLine.status, byLine.text).toBe(403);
      const both = await sendPool(s, a, 'p', numeroNuevo(), 'x', { celular_id: a.celularId });
      expect(both.status, both.text).toBe(400);
      const unknown = await sendPool(s, a, 'nope', numeroNuevo(), 'x');
      expect(unknown.status, unknown.text).toBe(404);
      expect(unknown.body.api_codigo).toBe(643);
      // A form body names the pool too.
      const form = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
        key: a.clientKey,
        form: { grupo: 'p', destinatario: numeroNuevo(), mensaje: 'por formulario' },
      });
      expect(form.status, form.text).toBe(200);
      expect(await lineOf(s, form.body.msg_id)).toBe(a.celularId);
    });

    it("sees a pool's edit, rename and deletion at the very next send (the pool is kept in memory, D-183)", async () => {
      const a = await linkedLine(s, { saldo: 10 });
      const b = await siblingLine(s, a);
      expect((await crearGrupo(s, a, { nombre: 'vivo', celulares: [a.celularId] })).status).toBe(201);
      expect(await lineOf(s, (await sendPool(s, a, 'vivo', numeroNuevo(), 'uno')).body.msg_id)).toBe(a.celularId);
      const edit = await api(s.url, 'POST', '/api/grupo_editar.php', { key: a.clientKey, json: { grupo: 'vivo', celulares: [b.celularId] } });
      expect(edit.status, edit.text).toBe(200);
      expect(await lineOf(s, (await sendPool(s, a, 'vivo', numeroNuevo(), 'dos')).body.msg_id)).toBe(b.celularId);
      const renamed = await api(s.url, 'POST', '/api/grupo_editar.php', { key: a.clientKey, json: { grupo: 'vivo', nombre: 'otro' } });
      expect(renamed.status, renamed.text).toBe(200);
      expect((await sendPool(s, a, 'vivo', numeroNuevo(), 'tres')).body.api_codigo).toBe(643);
      expect((await sendPool(s, a, 'otro', numeroNuevo(), 'tres')).status).toBe(200);
      expect((await api(s.url, 'POST', '/api/grupo_eliminar.php', { key: a.clientKey, json: { grupo: 'otro' } })).status).toBe(200);
      const gone = await sendPool(s, a, 'otro', numeroNuevo(), 'cuatro');
      expect(gone.status, gone.text).toBe(404);
      expect(gone.body.api_codigo).toBe(643);
    });
  });

suite('pools on SQLite', () => startTestServer({ healthIntervalMs: 0, clock: new ManualClock(Date.UTC(2026, 3, 1, 12)), queue: { gapMinMs: 0, gapMaxMs: 0 } }));

const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
});
async function storeUrl(): Promise<string> {
  const sc = await pgSchema();
  drops.push(sc.drop);
  return schemaUrl(sc.schema);
}

describeWith(postgres, 'pools on PostgreSQL', () => {
  suite('one node', async () =>
    startTestServer({ store: await storeUrl(), healthIntervalMs: 0, clock: new ManualClock(Date.UTC(2026, 3, 1, 12)), queue: { gapMinMs: 0, gapMaxMs: 0 } }),
  );

  it('keeps each line of a pool within its caps across two nodes sending to it at once', async () => {
    const url = await storeUrl();
    const clock = new ManualClock(Date.UTC(2026, 3, 1, 12));
    const n1 = await startTestServer({ store: url, clock, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    const n2 = await startTestServer({ store: url, dataDir: tempDir(), clock, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    try {
      const a = await linkedLine(n1, { saldo: 100 });
      const b = await siblingLine(n1, a);
      const CAP = 3;
      for (const l of [a, b]) await editCelular(n1, l, { max_envios_por_minuto: CAP });
      expect((await crearGrupo(n1, a, { nombre: 'dos-nodos', celulares: [a.celularId, b.celularId] })).status).toBe(201);
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) => sendPool(i % 2 ? n2 : n1, a, 'dos-nodos', numeroNuevo(), `m${i}`, { directo: 1 })),
      );
      const ok = answers.filter((r) => r.status === 200);
      for (const r of answers.filter((r) => r.status !== 200)) expect([429], r.text).toContain(r.status);
      const perLine = new Map<number, number>();
      for (const r of ok) {
        const l = (await lineOf(n1, r.body.msg_id))!;
        perLine.set(l, (perLine.get(l) ?? 0) + 1);
      }
      for (const n of perLine.values()) expect(n).toBeLessThanOrEqual(CAP);
      expect(ok.length).toBeLessThanOrEqual(2 * CAP);
      expect(ok.length).toBeGreaterThan(0);
    } finally {
      await n2.stop();
      await n1.stop();
    }
  });

  it("moves a down line's queue once when two nodes' health passes run together", async () => {
    const url = await storeUrl();
    const clock = new ManualClock(Date.UTC(2026, 3, 1, 12));
    const opts = { store: url, healthIntervalMs: 0, clock, queue: { gapMinMs: 0, gapMaxMs: 0 } };
    const n1 = await startTestServer(opts);
    const n2 = await startTestServer({ ...opts, dataDir: tempDir() });
    try {
      const a = await linkedLine(n1, { saldo: 100 });
      const b = await siblingLine(n1, a);
      expect((await admin(n1, 'POST', '/admin/saldo', { cliente_id: a.clienteId, celular_id: a.celularId, monto: 20, motivo: 'carga' })).status).toBe(200);
      await editCelular(n1, a, { hora_inicio_permitido: '15:00', hora_fin_permitido: '16:00' });
      expect((await crearGrupo(n1, a, { nombre: 'uno', celulares: [a.celularId], conmutacion_s: 30 })).status).toBe(201);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await sendPool(i % 2 ? n2 : n1, a, 'uno', numeroNuevo(), `m${i}`)).body.msg_id as string);
      expect(
        (await api(n1.url, 'POST', '/api/grupo_editar.php', { key: a.clientKey, json: { grupo: 'uno', celulares: [a.celularId, b.celularId] } })).status,
      ).toBe(200);
      await phoneLogout(n1, a);
      await until(async () => (await n1.core.store.getCelular(a.celularId))?.estado !== 'activo', { what: 'line A disconnected' });
      await Promise.all([n1.health.checkNow(), n2.health.checkNow()]);
      clock.advance(31_000);
      await Promise.all([n1.health.checkNow(), n2.health.checkNow()]);
      expect(n1.health.moved + n2.health.moved).toBe(12);
      for (const id of ids) expect(await lineOf(n1, id)).toBe(b.celularId);
      // Line B is up with no gap: its workers may already be sending them. Each is B's, queued or sent (two reads of a moving queue cannot be summed).
      const estados = await Promise.all(ids.map(async (id) => (await n1.core.store.getMensaje(id))!.estado));
      for (const e of estados) expect(['pendiente', 'enviado', 'entregado', 'leido']).toContain(e);
      expect((await n1.core.store.queueSizes([a.celularId]))[0]!.pendientes).toBe(0);
      await ledgerAddsUp(n1, a.clienteId, [a.celularId, b.celularId]);
      expect((await n1.core.store.getCelular(a.celularId))!.saldo_actual).toBe(20);
    } finally {
      await n2.stop();
      await n1.stop();
    }
  });
});
