import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';

/** GET /api/info.php, /api/saldo.php and /api/celulares.php: fields and values. */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CLIENTE_FIELDS = ['consumo_mes_actual', 'created_at', 'email', 'estado', 'id', 'max_celulares', 'nombre', 'plan'];
const CELULAR_FIELDS = [
  'id',
  'numero',
  'nombre_interno',
  'estado',
  'saldo_actual',
  'max_envios_por_minuto',
  'max_envios_por_hora',
  'max_envios_por_dia',
  'hora_inicio_permitido',
  'hora_fin_permitido',
  'gateway_instancia',
  'tiene_gateway_token',
  'tiene_token_legacy',
  'last_status_check',
  'last_status',
];

let s: TestServer;
let A: Seeded;
let B: Seeded;
let a2: number;

const admin = (method: string, path: string, json?: unknown) => api(s.url, method, path, { key: s.adminToken, json });

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo(), saldo: 7 });
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo(), nombre_interno: 'segunda' } });
  expect(r.status, r.text).toBe(201);
  a2 = r.body.celular_id;
});
afterAll(async () => {
  await s?.stop();
});

describe('GET /api/info.php', () => {
  it('answers the client info with a fresh client', async () => {
    const r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expectOk(r);
    expect(Object.keys(r.body.cliente).sort()).toEqual(CLIENTE_FIELDS);
    expect(r.body.cliente).toMatchObject({ id: A.clienteId, estado: 'activo', plan: 'medido', max_celulares: null, consumo_mes_actual: 0 });
    expect(r.body.cliente.nombre).toMatch(/^Cliente /);
    expect(r.body.cliente.email).toMatch(/@example\.com$/);
    expect(r.body.cliente.created_at).toMatch(ISO);
    expect(r.body).toMatchObject({ saldo_global: 0, num_celulares: 2, num_celulares_activos: 0, mensajes_30d: 0 });
    // A client key names no line: no celular balance in `saldo`.
    expect(r.body.saldo).toBeNull();
  });

  it('a seeded global balance is reported', async () => {
    const r = await api(s.url, 'GET', '/api/info.php', { key: B.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ saldo_global: 7, num_celulares: 1 });
    expect(r.body.cliente.id).toBe(B.clienteId);
  });

  it("with a celular key, `saldo` is that line's balance", async () => {
    const add = await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, celular_id: A.celularId, monto: 11 });
    expectOk(add);
    const r = await api(s.url, 'GET', '/api/info.php', { key: A.celularKey });
    expectOk(r);
    expect(r.body.saldo).toBe(11);
    expect(r.body.saldo_global).toBe(0);
    expect(r.body.cliente.id).toBe(A.clienteId);
  });

  it('saldo_global follows /admin/saldo (add and remove)', async () => {
    expectOk(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: 500, motivo: 'recarga de prueba' }));
    let r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(r.body.saldo_global).toBe(500);
    expectOk(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: -120 }));
    r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(r.body.saldo_global).toBe(380);
    // Never below zero: refused and unchanged.
    expectError(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: -381 }), 409, 604);
    r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(r.body.saldo_global).toBe(380);
  });

  it('num_celulares_activos counts connected lines and drops suspended ones', async () => {
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${a2}`, { key: A.clientKey }));
    expectOk(await admin('POST', '/admin/sim/scan', { celular_id: a2 }));
    let r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(r.body).toMatchObject({ num_celulares: 2, num_celulares_activos: 1 });
    expectOk(await api(s.url, 'POST', `/api/celular_editar.php?id=${a2}`, { key: A.clientKey, json: { estado: 'suspendido' } }));
    r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(r.body).toMatchObject({ num_celulares: 2, num_celulares_activos: 0 });
    expectOk(await api(s.url, 'POST', `/api/celular_editar.php?id=${a2}`, { key: A.clientKey, form: { estado: 'activo' } }));
    r = await api(s.url, 'GET', '/api/info.php', { key: A.celularKey });
    expect(r.body).toMatchObject({ num_celulares: 2, num_celulares_activos: 1 });
  });

  it('plan and max_celulares changed by the operator show in cliente', async () => {
    expectOk(await admin('PATCH', `/admin/clientes/${B.clienteId}`, { plan: 'ilimitado', max_celulares: 4 }));
    const r = await api(s.url, 'GET', '/api/info.php', { key: B.celularKey });
    expect(r.body.cliente).toMatchObject({ plan: 'ilimitado', max_celulares: 4 });
  });
});

describe('GET /api/saldo.php', () => {
  it('a celular key names its line', async () => {
    const r = await api(s.url, 'GET', '/api/saldo.php', { key: A.celularKey });
    expectOk(r);
    expect(r.body).toEqual(
      expect.objectContaining({
        cliente_id: A.clienteId,
        celular_id: A.celularId,
        saldo_global: 380,
        saldo_celular: 11,
        plan: 'medido',
        ilimitado: false,
        consumo_mes: 0,
        saldo: 11,
      }),
    );
  });

  it('a client key alone names no line (celular_id and saldo_celular null)', async () => {
    const r = await api(s.url, 'GET', '/api/saldo.php', { key: A.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({
      cliente_id: A.clienteId,
      celular_id: null,
      saldo_celular: null,
      saldo_global: 380,
      plan: 'medido',
      ilimitado: false,
      consumo_mes: 0,
    });
  });

  it('a client key with ?celular_id names one of its lines', async () => {
    expectOk(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, celular_id: a2, monto: 3 }));
    const r = await api(s.url, 'GET', `/api/saldo.php?celular_id=${a2}`, { key: A.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ cliente_id: A.clienteId, celular_id: a2, saldo_celular: 3, saldo_global: 380, saldo: 3 });
  });

  it('?celular_id of another client: 404; not an integer: 400', async () => {
    expectError(await api(s.url, 'GET', `/api/saldo.php?celular_id=${B.celularId}`, { key: A.clientKey }), 404, 600);
    expectError(await api(s.url, 'GET', '/api/saldo.php?celular_id=abc', { key: A.clientKey }), 400, 100);
    expectError(await api(s.url, 'GET', '/api/saldo.php?celular_id=0', { key: A.clientKey }), 400, 100);
  });

  it('ilimitado plan: plan and ilimitado fields', async () => {
    const r = await api(s.url, 'GET', '/api/saldo.php', { key: B.gatewayToken });
    expectOk(r);
    expect(r.body).toMatchObject({
      cliente_id: B.clienteId,
      celular_id: B.celularId,
      saldo_global: 7,
      saldo_celular: 0,
      plan: 'ilimitado',
      ilimitado: true,
      consumo_mes: 0,
    });
  });

  it('an operator balance added to a celular shows in saldo_actual everywhere', async () => {
    const add = await admin('POST', '/admin/saldo', { cliente_id: B.clienteId, celular_id: B.celularId, monto: 25, motivo: 'regalo' });
    expectOk(add);
    expect(add.body).toMatchObject({ cliente_id: B.clienteId, celular_id: B.celularId, saldo_celular: 25, saldo_global: 7, saldo: 25 });
    const one = await api(s.url, 'GET', `/api/celular.php?id=${B.celularId}`, { key: B.clientKey });
    expect(one.body.celular.saldo_actual).toBe(25);
    expect(one.body.saldo).toBe(25);
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: B.clientKey });
    expect(list.body.celulares[0].saldo_actual).toBe(25);
    const saldo = await api(s.url, 'GET', '/api/saldo.php', { key: B.celularKey });
    expect(saldo.body).toMatchObject({ saldo_celular: 25, saldo_global: 7 });
  });

  // A parameter naming another client's line is never answered for (docs/decisions.md
  // D-17): a celular key asking for another line's balance gets 404, not its own.
  it("a celular key asking for another client's ?celular_id gets 404, not its own balance", async () => {
    const r = await api(s.url, 'GET', `/api/saldo.php?celular_id=${B.celularId}`, { key: A.celularKey });
    expectError(r, 404, 600);
  });
});

describe('GET /api/celulares.php', () => {
  it("lists the client's celulares with every field and the defaults (docs/design.md §4) of a new line", async () => {
    const fresh = await seedClient(s, { numero: numeroNuevo() });
    const r = await api(s.url, 'GET', '/api/celulares.php', { key: fresh.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ cliente_id: fresh.clienteId, total: 1 });
    expect(r.body.celulares).toHaveLength(1);
    const c = r.body.celulares[0];
    for (const f of CELULAR_FIELDS) expect(c, f).toHaveProperty(f);
    expect(c).toMatchObject({
      id: fresh.celularId,
      numero: fresh.numero,
      nombre_interno: null,
      estado: 'desconectado',
      saldo_actual: 0,
      max_envios_por_minuto: 12,
      max_envios_por_hora: 500,
      max_envios_por_dia: null,
      hora_inicio_permitido: '00:00',
      hora_fin_permitido: '23:59',
      gateway_instancia: `pasarela-${fresh.celularId}`,
      tiene_gateway_token: true,
      tiene_token_legacy: false,
      last_status_check: null,
      last_status: null,
    });
    expect(c.numero).toMatch(/^[0-9]+$/);
  });

  it("lists only the caller's client, in id order, for client and celular keys alike", async () => {
    for (const key of [A.clientKey, A.celularKey, A.gatewayToken]) {
      const r = await api(s.url, 'GET', '/api/celulares.php', { key });
      expectOk(r);
      expect(r.body.cliente_id).toBe(A.clienteId);
      expect(r.body.total).toBe(2);
      expect(r.body.celulares.map((c: { id: number }) => c.id)).toEqual([A.celularId, a2]);
      expect(r.body.celulares.every((c: { cliente_id?: number }) => c.cliente_id === undefined || c.cliente_id === A.clienteId)).toBe(true);
    }
    const rb = await api(s.url, 'GET', '/api/celulares.php', { key: B.clientKey });
    expect(rb.body.celulares.map((c: { id: number }) => c.id)).toEqual([B.celularId]);
  });

  it('the session status shows on the connected line', async () => {
    const r = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    const c = r.body.celulares.find((x: { id: number }) => x.id === a2);
    expect(c).toMatchObject({ estado: 'activo', last_status: 'connected', gateway_instancia: expect.any(String), saldo_actual: 3 });
    expect(c.last_status_check).toMatch(ISO);
  });
});
