import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { pgSchema } from '../contract/adapters.js';
import { editCelular, linkedLine, mensaje, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';

/**
 * Warm-up (docs/warm-up.md): a line's `calentamiento` set and cleared through
 * the API, its effective caps in the line's views, and those caps held by a
 * direct send (429) and by the queue, on a driven clock, on SQLite and on
 * PostgreSQL.
 */

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const DAY = 86_400_000;
const SENT = ['enviado', 'entregado', 'leido'];

function suite(store: () => Promise<string | undefined>) {
  let s: TestServer;
  const clock = () => s.clock as ManualClock;
  beforeAll(async () => {
    const url = await store();
    s = await startTestServer({
      ...(url ? { store: url } : {}),
      tz: 'UTC',
      clock: new ManualClock(T0),
      queue: { gapMinMs: 0, gapMaxMs: 0 },
      simDeliveryMs: 20,
      simReadMs: 40,
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const view = async (L: Line) => {
    const r = await api(s.url, 'GET', `/api/celular.php?id=${L.celularId}`, { key: L.clientKey });
    expect(r.status, r.text).toBe(200);
    return r.body.celular as Record<string, unknown>;
  };
  const dest = () => `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;

  it('set, kept, cleared through the API; the views show the effective caps; a bad plan is 400', async () => {
    const L = await linkedLine(s);
    // No plan: what a line always had, the effective caps being the configured ones.
    expect(await view(L)).toMatchObject({
      calentamiento: null,
      calentamiento_desde: null,
      calentamiento_dia: null,
      max_envios_por_minuto: 12,
      max_envios_por_minuto_efectivo: 12,
      max_envios_por_hora_efectivo: 500,
      max_envios_por_dia_efectivo: null,
    });
    const set = await editCelular(s, L, { calentamiento: 'estandar' });
    const desde = new Date(clock().now()).toISOString();
    expect(set.body.celular).toMatchObject({
      calentamiento: 'estandar',
      calentamiento_desde: desde,
      calentamiento_dia: 1,
      max_envios_por_minuto: 12,
      max_envios_por_minuto_efectivo: 2,
      max_envios_por_hora_efectivo: 10,
      max_envios_por_dia_efectivo: 20,
    });
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: L.clientKey });
    expect(list.body.celulares.find((c: { id: number }) => c.id === L.celularId)).toMatchObject({ calentamiento_dia: 1, max_envios_por_dia_efectivo: 20 });
    // The same plan again keeps its start; another field edited leaves it too.
    clock().advance(DAY);
    expect((await editCelular(s, L, { calentamiento: 'estandar' })).body.celular).toMatchObject({ calentamiento_desde: desde, calentamiento_dia: 2 });
    expect((await editCelular(s, L, { max_envios_por_minuto: 10 })).body.celular).toMatchObject({ calentamiento_dia: 2, max_envios_por_dia_efectivo: 30 });
    // Another plan starts today.
    expect((await editCelular(s, L, { calentamiento: 'prudente' })).body.celular).toMatchObject({ calentamiento: 'prudente', calentamiento_dia: 1 });
    // Bad names, refused before anything changes.
    for (const bad of ['turbo', '', 'ESTANDAR', 5]) {
      const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${L.celularId}`, { key: L.clientKey, json: { calentamiento: bad } });
      expectError(r, 400, 100);
    }
    const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${L.celularId}`, { key: L.clientKey, json: { calentamiento: 'turbo' } });
    expect(r.body.error).toMatch(/calentamiento must be one of estandar, rapido, prudente/);
    expect(await view(L)).toMatchObject({ calentamiento: 'prudente' });
    // Null ends it: the caps set, at once.
    expect((await editCelular(s, L, { calentamiento: null })).body.celular).toMatchObject({
      calentamiento: null,
      calentamiento_desde: null,
      calentamiento_dia: null,
      max_envios_por_minuto_efectivo: 10,
      max_envios_por_dia_efectivo: null,
    });
    // The operator's view of the client shows them too.
    const op = await api(s.url, 'GET', `/admin/clientes/${L.clienteId}`, { key: s.adminToken });
    expect(op.status, op.text).toBe(200);
    expect(op.body.celulares[0]).toHaveProperty('max_envios_por_minuto_efectivo', 10);
  });

  it('a new line may start with its plan and its brake; a bad plan is 400 and registers nothing', async () => {
    const L = await linkedLine(s);
    const crear = (json: Record<string, unknown>) => api(s.url, 'POST', '/api/celular_crear.php', { key: L.clientKey, json });
    const numero = dest();
    const bad = await crear({ numero, calentamiento: 'turbo' });
    expectError(bad, 400);
    expect(bad.body.api_descripcion ?? bad.text).toMatch(/calentamiento must be one of estandar, rapido, prudente/);
    const made = await crear({ numero, calentamiento: 'prudente', freno: 1 });
    expect(made.status, made.text).toBe(201);
    expect(made.body.celular).toMatchObject({
      calentamiento: 'prudente',
      calentamiento_desde: new Date(clock().now()).toISOString(),
      calentamiento_dia: 1,
      freno: true,
      frenado: false,
    });
    const plain = await crear({ numero: dest() });
    expect(plain.body.celular).toMatchObject({ calentamiento: null, freno: false });
    const audit = await api(s.url, 'GET', `/admin/auditoria?cliente_id=${L.clienteId}&accion=celular.crear&limit=2`, { key: s.adminToken });
    expect(audit.body.registros.map((r: { detalle: Record<string, unknown> }) => r.detalle)).toEqual([
      expect.not.objectContaining({ calentamiento: expect.anything() }),
      expect.objectContaining({ calentamiento: 'prudente', freno: true }),
    ]);
  });

  it('a direct send over the day-1 warm-up cap is 429 naming the plan; on day 8 the same sends go', async () => {
    const L = await linkedLine(s, { saldo: 20 });
    await editCelular(s, L, { calentamiento: 'estandar' });
    for (let i = 0; i < 2; i++) expectOk(await send(s, L, TEXT, { destinatario: dest(), mensaje: uniqueText('w'), directo: 1 }), { send: true });
    const r = await send(s, L, TEXT, { destinatario: dest(), mensaje: uniqueText('w'), directo: 1 });
    expectError(r, 429, 304);
    expect(r.body.error).toMatch(/cap of 2 sends per minute \(warm-up estandar, day 1\)/);
    expect(r.body.retry_after).toBe(60);
    // Day 8 of the plan: 6 a minute.
    clock().advance(7 * DAY);
    expect(await view(L)).toMatchObject({ calentamiento_dia: 8, max_envios_por_minuto_efectivo: 6 });
    for (let i = 0; i < 6; i++) expectOk(await send(s, L, TEXT, { destinatario: dest(), mensaje: uniqueText('w'), directo: 1 }), { send: true });
    const seventh = await send(s, L, TEXT, { destinatario: dest(), mensaje: uniqueText('w'), directo: 1 });
    expectError(seventh, 429, 304);
    expect(seventh.body.error).toMatch(/cap of 6 sends per minute \(warm-up estandar, day 8\)/);
    // A line without a plan beside it is not held: 12 a minute.
    const M = await linkedLine(s, { saldo: 20 });
    for (let i = 0; i < 6; i++) expectOk(await send(s, M, TEXT, { destinatario: dest(), mensaje: uniqueText('m'), directo: 1 }), { send: true });
  });

  it('the queue holds at the effective cap and the queue view says why; the next minute it goes', async () => {
    const L = await linkedLine(s, { saldo: 20 });
    await editCelular(s, L, { calentamiento: 'estandar' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const q = await send(s, L, TEXT, { destinatario: dest(), mensaje: uniqueText('q') });
      expectOk(q, { count: 1 });
      ids.push(q.body.msg_id as string);
    }
    await waitEstado(s, ids[0]!, SENT);
    await waitEstado(s, ids[1]!, SENT);
    clock().advance(30_000);
    await s.stepQueue();
    expect((await mensaje(s, ids[2]!)).estado).toBe('pendiente');
    const cola = await api(s.url, 'GET', `/api/cola.php?celular_id=${L.celularId}`, { key: L.clientKey });
    expect(cola.status, cola.text).toBe(200);
    expect(cola.body.mensajes).toHaveLength(1);
    expect(cola.body.mensajes[0]).toMatchObject({ msg_id: ids[2], motivo: 'cupo_minuto' });
    expect(cola.body.lineas).toEqual([
      {
        celular_id: L.celularId,
        calentamiento: 'estandar',
        calentamiento_dia: 1,
        max_envios_por_minuto_efectivo: 2,
        max_envios_por_hora_efectivo: 10,
        max_envios_por_dia_efectivo: 20,
      },
    ]);
    clock().advance(31_000);
    await s.stepQueue();
    await waitEstado(s, ids[2]!, SENT);
  });
}

describe('warm-up on SQLite', () => {
  suite(async () => undefined);
});

const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const d of drops) await d();
});
describeWith(postgres, 'warm-up', () => {
  suite(async () => {
    const sc = await pgSchema();
    drops.push(sc.drop);
    return schemaUrl(sc.schema);
  });

  it('two nodes on one store: parallel direct sends through both pass the day-1 warm-up cap exactly', async () => {
    const sc = await pgSchema();
    drops.push(sc.drop);
    const url = schemaUrl(sc.schema);
    const opts = { store: url, tz: 'UTC', clock: new ManualClock(T0), queue: { gapMinMs: 0, gapMaxMs: 0 } };
    const a = await startTestServer(opts);
    const b = await startTestServer({ ...opts, dataDir: tempDir(), clock: new ManualClock(T0) });
    try {
      const L = await linkedLine(a, { saldo: 20 });
      await editCelular(a, L, { calentamiento: 'estandar' });
      const rs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          send(i % 2 ? b : a, L, TEXT, { destinatario: `52559${String(1000000 + i)}`, mensaje: uniqueText('n'), directo: 1 }),
        ),
      );
      expect(rs.filter((r) => r.status === 200)).toHaveLength(2);
      for (const r of rs.filter((x) => x.status !== 200)) expectError(r, 429, 304);
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});
