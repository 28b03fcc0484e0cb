import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';

/** The operator API (/admin/*): clients, balances, legacy tokens, key rotation, audit. */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let s: TestServer;
let A: Seeded;
let B: Seeded;
const admin = (method: string, path: string, json?: unknown) => api(s.url, method, path, { key: s.adminToken, json });
const adminForm = (method: string, path: string, form: Record<string, string>) => api(s.url, method, path, { key: s.adminToken, form });

beforeAll(async () => {
  s = await startTestServer({ authMaxFailures: 100_000 }, { inject: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
});
afterAll(async () => {
  await s?.stop();
});

describe('operator token', () => {
  it('every /admin endpoint refuses a missing or wrong token with 401', async () => {
    const calls: Array<[string, string, unknown]> = [
      ['POST', '/admin/clientes', { nombre: 'x', email: 'x@example.com' }],
      ['GET', '/admin/clientes', undefined],
      ['GET', `/admin/clientes/${A.clienteId}`, undefined],
      ['PATCH', `/admin/clientes/${A.clienteId}`, { nombre: 'hack' }],
      ['POST', `/admin/clientes/${A.clienteId}`, { nombre: 'hack' }],
      ['POST', `/admin/clientes/${A.clienteId}/rotar-key`, {}],
      ['POST', '/admin/saldo', { cliente_id: A.clienteId, monto: 10 }],
      ['POST', `/admin/celulares/${A.celularId}/token-legacy`, {}],
      ['POST', `/admin/celulares/${A.celularId}/rotar-key`, {}],
      ['GET', '/admin/auditoria', undefined],
      ['POST', '/admin/sim/scan', { celular_id: A.celularId }],
      ['POST', '/admin/sim/logout', { celular_id: A.celularId }],
      ['POST', '/admin/sim/receive', { celular_id: A.celularId, de: '5215512345678', texto: 'x' }],
      ['POST', '/admin/sim/fail', { numero: '5215512345678' }],
      ['GET', '/admin/sim/fail', undefined],
    ];
    for (const [method, path, json] of calls) {
      for (const key of [undefined, `${s.adminToken}x`, 'Bearer', A.clientKey]) {
        const r = await api(s.url, method, path, { key, json });
        expectError(r, 401, 200);
      }
    }
    // Nothing changed.
    const c = await admin('GET', `/admin/clientes/${A.clienteId}`);
    expect(c.body.cliente.nombre).not.toBe('hack');
    expect(c.body.saldo_global).toBe(0);
  });
});

describe('clients', () => {
  it('POST /admin/clientes (JSON): 201 with the summary and a WAC_ key that works', async () => {
    const r = await admin('POST', '/admin/clientes', { nombre: 'Tienda Sol', email: 'sol@example.com', plan: 'ilimitado', max_celulares: 3, saldo: 150 });
    expectOk(r, 201);
    expect(r.body.cliente).toMatchObject({
      nombre: 'Tienda Sol',
      email: 'sol@example.com',
      estado: 'activo',
      plan: 'ilimitado',
      max_celulares: 3,
      consumo_mes_actual: 0,
    });
    expect(r.body.cliente.created_at).toMatch(ISO);
    expect(r.body).toMatchObject({ saldo_global: 150, num_celulares: 0, num_celulares_activos: 0, mensajes_30d: 0 });
    expect(r.body.api_key).toMatch(new RegExp(`^WAC_${r.body.cliente.id}_[A-Za-z0-9_-]{43}$`));
    const info = await api(s.url, 'GET', '/api/info.php', { key: r.body.api_key });
    expectOk(info);
    expect(info.body).toMatchObject({ saldo_global: 150, cliente: { id: r.body.cliente.id, plan: 'ilimitado' } });
  });

  it('POST /admin/clientes (form-encoded): numbers read from strings; defaults medido, no cap', async () => {
    const r = await adminForm('POST', '/admin/clientes', { nombre: 'Forma', email: 'forma@example.com', saldo: '12' });
    expectOk(r, 201);
    expect(r.body.cliente).toMatchObject({ nombre: 'Forma', plan: 'medido', estado: 'activo', max_celulares: null });
    expect(r.body.saldo_global).toBe(12);
    const f2 = await adminForm('POST', '/admin/clientes', { nombre: 'Forma2', email: 'forma2@example.com', plan: 'ilimitado', max_celulares: '2' });
    expectOk(f2, 201);
    expect(f2.body.cliente).toMatchObject({ plan: 'ilimitado', max_celulares: 2 });
    expect(f2.body.saldo_global).toBe(0);
  });

  it('POST /admin/clientes: 400 api_codigo 100 for missing or invalid fields', async () => {
    const bad: unknown[] = [
      {},
      { nombre: 'sin email' },
      { email: 'sin@nombre.com' },
      { nombre: '', email: 'x@example.com' },
      { nombre: 'x', email: 'no-es-email' },
      { nombre: 'x', email: 'x@example.com', plan: 'gratis' },
      { nombre: 'x', email: 'x@example.com', estado: 'borrado' },
      { nombre: 'x', email: 'x@example.com', saldo: -1 },
      { nombre: 'x', email: 'x@example.com', saldo: 1.5 },
      { nombre: 'x', email: 'x@example.com', max_celulares: -1 },
    ];
    const before = (await admin('GET', '/admin/clientes')).body.total;
    for (const json of bad) expectError(await admin('POST', '/admin/clientes', json), 400, 100);
    expect((await admin('GET', '/admin/clientes')).body.total).toBe(before);
  });

  it('GET /admin/clientes lists every client with its summary', async () => {
    const r = await admin('GET', '/admin/clientes');
    expectOk(r);
    expect(r.body.total).toBe(r.body.clientes.length);
    expect(r.body.total).toBeGreaterThanOrEqual(5);
    const a = r.body.clientes.find((c: { cliente: { id: number } }) => c.cliente.id === A.clienteId);
    expect(a).toMatchObject({
      saldo_global: 0,
      num_celulares: 1,
      num_celulares_activos: 0,
      mensajes_30d: 0,
      cliente: { id: A.clienteId, estado: 'activo', plan: 'medido' },
    });
    expect(a).not.toHaveProperty('api_key');
    expect(a.cliente).not.toHaveProperty('key_hash');
    const ids = r.body.clientes.map((c: { cliente: { id: number } }) => c.cliente.id);
    expect(ids).toEqual([...ids].sort((x: number, y: number) => x - y));
  });

  it('GET /admin/clientes/:id shows one client with its celulares; 404 / 400 otherwise', async () => {
    const r = await admin('GET', `/admin/clientes/${A.clienteId}`);
    expectOk(r);
    expect(r.body.cliente.id).toBe(A.clienteId);
    expect(r.body.num_celulares).toBe(1);
    expect(r.body.celulares).toHaveLength(1);
    expect(r.body.celulares[0]).toMatchObject({ id: A.celularId, numero: A.numero, estado: 'desconectado', tiene_gateway_token: true });
    const nf = await admin('GET', '/admin/clientes/987654');
    expectError(nf, 404, 601);
    expect(nf.body.api_texto).toBe('CLIENTE_NO_ENCONTRADO');
    expectError(await admin('GET', '/admin/clientes/abc'), 400, 100);
    expectError(await admin('GET', '/admin/clientes/0'), 400, 100);
  });

  it('PATCH /admin/clientes/:id edits; POST is the same edit (form-encoded here)', async () => {
    const r = await admin('PATCH', `/admin/clientes/${B.clienteId}`, { nombre: 'B renombrado', plan: 'ilimitado', max_celulares: 5 });
    expectOk(r);
    expect(r.body.cliente).toMatchObject({ id: B.clienteId, nombre: 'B renombrado', plan: 'ilimitado', max_celulares: 5 });
    const p = await adminForm('POST', `/admin/clientes/${B.clienteId}`, { email: 'nuevo@example.com', plan: 'medido' });
    expectOk(p);
    expect(p.body.cliente).toMatchObject({ nombre: 'B renombrado', email: 'nuevo@example.com', plan: 'medido', max_celulares: 5 });
    const nul = await admin('PATCH', `/admin/clientes/${B.clienteId}`, { max_celulares: null });
    expectOk(nul);
    expect(nul.body.cliente.max_celulares).toBeNull();
    const info = await api(s.url, 'GET', '/api/info.php', { key: B.clientKey });
    expect(info.body.cliente).toMatchObject({ nombre: 'B renombrado', email: 'nuevo@example.com', plan: 'medido', max_celulares: null });
  });

  it('PATCH /admin/clientes/:id: 400 for empty, unknown or invalid fields; 404 for an unknown client', async () => {
    for (const json of [{}, { saldo_global: 10 }, { nombre: 'x', key_hash: 'abc' }, { plan: 'gratis' }, { estado: 'x' }, { email: 'no' }]) {
      expectError(await admin('PATCH', `/admin/clientes/${B.clienteId}`, json), 400, 100);
    }
    expectError(await admin('PATCH', `/admin/clientes/${B.clienteId}`), 400, 100);
    expectError(await admin('PATCH', '/admin/clientes/987654', { nombre: 'x' }), 404, 601);
    expectError(await admin('POST', '/admin/clientes/987654', { nombre: 'x' }), 404, 601);
  });

  it("estado suspendido blocks the client's writes (403, 302); activo restores them", async () => {
    const c = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await admin('PATCH', `/admin/clientes/${c.clienteId}`, { estado: 'suspendido' }));
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 403, 302);
    expectOk(await api(s.url, 'GET', '/api/celulares.php', { key: c.clientKey }));
    expectOk(await admin('PATCH', `/admin/clientes/${c.clienteId}`, { estado: 'baja' }));
    expectError(await api(s.url, 'POST', `/api/celular_editar.php?id=${c.celularId}`, { key: c.celularKey, json: { max_envios_por_minuto: 3 } }), 403, 302);
    expectOk(await admin('PATCH', `/admin/clientes/${c.clienteId}`, { estado: 'activo' }));
    expectOk(await api(s.url, 'POST', '/api/celular_crear.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 201);
  });

  it('POST /admin/clientes/:id/rotar-key: a new key works, the old one is refused', async () => {
    const c = await seedClient(s, { numero: numeroNuevo() });
    const r = await admin('POST', `/admin/clientes/${c.clienteId}/rotar-key`);
    expectOk(r);
    expect(r.body.cliente_id).toBe(c.clienteId);
    expect(r.body.api_key).toMatch(new RegExp(`^WAC_${c.clienteId}_[A-Za-z0-9_-]{43}$`));
    expect(r.body.api_key).not.toBe(c.clientKey);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: c.clientKey }), 401, 200);
    const ok = await api(s.url, 'GET', '/api/info.php', { key: r.body.api_key });
    expectOk(ok);
    expect(ok.body.cliente.id).toBe(c.clienteId);
    // Celular credentials of the client are untouched.
    expectOk(await api(s.url, 'GET', '/api/info.php', { key: c.celularKey }));
    expectError(await admin('POST', '/admin/clientes/987654/rotar-key'), 404, 601);
  });
});

describe('POST /admin/saldo', () => {
  it('adds to the global balance (JSON) and to a celular (form-encoded)', async () => {
    const g = await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: 100, motivo: 'recarga' });
    expectOk(g);
    expect(g.body).toMatchObject({
      cliente_id: A.clienteId,
      celular_id: null,
      saldo_global: 100,
      saldo_celular: null,
      movimiento_id: expect.any(Number),
      saldo: null,
    });
    const c = await adminForm('POST', '/admin/saldo', { cliente_id: String(A.clienteId), celular_id: String(A.celularId), monto: '30' });
    expectOk(c);
    expect(c.body).toMatchObject({ cliente_id: A.clienteId, celular_id: A.celularId, saldo_global: 100, saldo_celular: 30, saldo: 30 });
    expect(c.body.movimiento_id).toBeGreaterThan(g.body.movimiento_id);
    const cel = await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: A.celularKey });
    expect(cel.body.celular.saldo_actual).toBe(30);
    const saldo = await api(s.url, 'GET', '/api/saldo.php', { key: A.celularKey });
    expect(saldo.body).toMatchObject({ saldo_global: 100, saldo_celular: 30 });
  });

  it('removes credit, never below zero (409 api_codigo 604)', async () => {
    const r = await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: -40 });
    expectOk(r);
    expect(r.body.saldo_global).toBe(60);
    expectError(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: -61 }), 409, 604);
    expectError(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, celular_id: A.celularId, monto: -31 }), 409, 604);
    const ok = await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, celular_id: A.celularId, monto: -30 });
    expectOk(ok);
    expect(ok.body.saldo_celular).toBe(0);
    const info = await api(s.url, 'GET', '/api/saldo.php', { key: A.celularKey });
    expect(info.body).toMatchObject({ saldo_global: 60, saldo_celular: 0 });
    expectError(await admin('POST', '/admin/saldo', { cliente_id: B.clienteId, monto: -1 }), 409, 604);
  });

  it('400 for a zero, fractional, missing or non-numeric monto; 404 for unknown client or a celular of another client', async () => {
    for (const json of [
      { cliente_id: A.clienteId, monto: 0 },
      { cliente_id: A.clienteId, monto: 1.5 },
      { cliente_id: A.clienteId },
      { monto: 5 },
      { cliente_id: A.clienteId, monto: 'mucho' },
      { cliente_id: 'uno', monto: 5 },
      { cliente_id: A.clienteId, monto: 5, motivo: 'x'.repeat(201) },
    ]) {
      expectError(await admin('POST', '/admin/saldo', json), 400, 100);
    }
    expectError(await admin('POST', '/admin/saldo', { cliente_id: 987654, monto: 5 }), 404, 601);
    expectError(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, celular_id: B.celularId, monto: 5 }), 404, 600);
    expectError(await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, celular_id: 987654, monto: 5 }), 404, 600);
    const b = await api(s.url, 'GET', '/api/saldo.php', { key: B.celularKey });
    expect(b.body.saldo_celular).toBe(0);
  });
});

describe('POST /admin/celulares/:id/token-legacy', () => {
  it('sets a given token (JSON); it authenticates with celular scope; tiene_token_legacy true', async () => {
    const token = 'mi-token-legado-0001';
    const r = await admin('POST', `/admin/celulares/${A.celularId}/token-legacy`, { token });
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: A.celularId, token_legacy: token, generado: false });
    const me = await api(s.url, 'GET', '/api/saldo.php', { key: token });
    expectOk(me);
    expect(me.body.celular_id).toBe(A.celularId);
    const c = await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: token });
    expect(c.body.celular.tiene_token_legacy).toBe(true);
  });

  it('makes one when none is given (no body; form with no token); the previous one stops working', async () => {
    const r = await admin('POST', `/admin/celulares/${A.celularId}/token-legacy`);
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: A.celularId, generado: true });
    expect(r.body.token_legacy).toMatch(/^[0-9a-f]{64}$/);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: 'mi-token-legado-0001' }), 401, 200);
    expectOk(await api(s.url, 'GET', '/api/info.php', { key: r.body.token_legacy }));
    const f = await adminForm('POST', `/admin/celulares/${B.celularId}/token-legacy`, { token: 'token-de-formulario-b' });
    expectOk(f);
    expect(f.body).toMatchObject({ celular_id: B.celularId, token_legacy: 'token-de-formulario-b', generado: false });
    const j = await admin('POST', `/admin/celulares/${B.celularId}/token-legacy`, {});
    expectOk(j);
    expect(j.body.generado).toBe(true);
    expect(j.body.token_legacy).not.toBe(r.body.token_legacy);
  });

  it('409 for a token held by another celular (legacy or gateway token); 400 for bad tokens; 404 for an unknown celular', async () => {
    await admin('POST', `/admin/celulares/${A.celularId}/token-legacy`, { token: 'compartido-por-nadie-1' });
    expectError(await admin('POST', `/admin/celulares/${B.celularId}/token-legacy`, { token: 'compartido-por-nadie-1' }), 409, 604);
    expectError(await admin('POST', `/admin/celulares/${B.celularId}/token-legacy`, { token: A.gatewayToken }), 409, 604);
    for (const token of ['corto', 'con espacios en medio!', 'x'.repeat(129), 'acentuado-ñññññññññññ']) {
      expectError(await admin('POST', `/admin/celulares/${B.celularId}/token-legacy`, { token }), 400, 100);
    }
    expectError(await admin('POST', '/admin/celulares/987654/token-legacy', { token: 'valido-pero-sin-celular' }), 404, 600);
    // A's token still names A.
    const me = await api(s.url, 'GET', '/api/saldo.php', { key: 'compartido-por-nadie-1' });
    expect(me.body.celular_id).toBe(A.celularId);
  });

  // Whatever legacy token the operator's API accepts must authenticate: a value shaped like a
  // WA_/WAC_ key must not be stored only to be routed to the key check and fail there.
  it('a legacy token accepted by the operator authenticates, even one shaped like a key', async () => {
    const token = `WA_${B.celularId}_legacyLooksLikeAKey01`;
    const r = await admin('POST', `/admin/celulares/${B.celularId}/token-legacy`, { token });
    if (r.status === 400) {
      // Refusing such a token is an acceptable fix too.
      expectError(r, 400, 100);
      return;
    }
    expectOk(r);
    const me = await api(s.url, 'GET', '/api/saldo.php', { key: token });
    expectOk(me);
    expect(me.body.celular_id).toBe(B.celularId);
  });
});

describe('POST /admin/celulares/:id/rotar-key', () => {
  it('issues a new celular key; the old one is refused; the gateway token keeps working', async () => {
    const c = await seedClient(s, { numero: numeroNuevo() });
    const r = await admin('POST', `/admin/celulares/${c.celularId}/rotar-key`);
    expectOk(r);
    expect(r.body.celular_id).toBe(c.celularId);
    expect(r.body.api_key).toMatch(new RegExp(`^WA_${c.celularId}_[A-Za-z0-9_-]{43}$`));
    expect(r.body.api_key).not.toBe(c.celularKey);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: c.celularKey }), 401, 200);
    const ok = await api(s.url, 'GET', '/api/saldo.php', { key: r.body.api_key });
    expectOk(ok);
    expect(ok.body.celular_id).toBe(c.celularId);
    expectOk(await api(s.url, 'GET', '/api/info.php', { key: c.gatewayToken }));
    expectError(await admin('POST', '/admin/celulares/987654/rotar-key'), 404, 600);
    expectError(await admin('POST', '/admin/celulares/abc/rotar-key'), 400, 100);
  });
});

describe('GET /admin/auditoria', () => {
  it('lists records newest first, filtered by client and limited', async () => {
    const r = await admin('GET', '/admin/auditoria');
    expectOk(r);
    const regs = r.body.registros as Array<{
      id: number;
      fecha: string;
      actor: string;
      accion: string;
      objeto_tipo: string;
      objeto_id: number | null;
      cliente_id: number | null;
      detalle: Record<string, unknown>;
    }>;
    expect(regs.length).toBeGreaterThan(5);
    expect(regs.map((x) => x.id)).toEqual([...regs.map((x) => x.id)].sort((a, b) => b - a));
    for (const x of regs) {
      expect(x.fecha).toMatch(ISO);
      expect(typeof x.actor).toBe('string');
      expect(typeof x.detalle).toBe('object');
    }
    const acciones = new Set(regs.map((x) => x.accion));
    for (const a of ['cliente.crear', 'cliente.editar', 'cliente.rotar_key', 'celular.crear', 'celular.token_legacy', 'celular.rotar_key'])
      expect(acciones, a).toContain(a);
    const crear = regs.find((x) => x.accion === 'celular.crear' && x.objeto_id === A.celularId);
    expect(crear).toMatchObject({ actor: `cliente:${A.clienteId}`, objeto_tipo: 'celular', cliente_id: A.clienteId, detalle: { numero: A.numero } });

    const onlyA = await admin('GET', `/admin/auditoria?cliente_id=${A.clienteId}`);
    expectOk(onlyA);
    expect(onlyA.body.registros.length).toBeGreaterThan(0);
    expect(onlyA.body.registros.every((x: { cliente_id: number }) => x.cliente_id === A.clienteId)).toBe(true);
    const one = await admin('GET', '/admin/auditoria?limit=1');
    expect(one.body.registros).toHaveLength(1);
    expect(one.body.registros[0].id).toBe(regs[0]!.id);
    for (const q of ['?limit=0', '?limit=1001', '?limit=x', '?cliente_id=0']) expectError(await admin('GET', `/admin/auditoria${q}`), 400, 100);
  });
});
