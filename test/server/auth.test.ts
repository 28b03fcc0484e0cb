import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';

/**
 * Credentials and authority (docs/design.md §3): where a key may be presented, which
 * keys are refused with 401, and the 403-versus-404 scoping between two clients.
 */

let s: TestServer;
let A: Seeded;
let B: Seeded;
let a2: { id: number; key: string; token: string };
let legacy: string;

beforeAll(async () => {
  // Many refused credentials on purpose: keep the address throttle out of the way.
  s = await startTestServer({ authMaxFailures: 100_000 }, { inject: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo(), nombre_interno: 'hermana' } });
  expect(r.status, r.text).toBe(201);
  a2 = { id: r.body.celular_id, key: r.body.api_key, token: r.body.gateway_token };
  legacy = `legacy-${A.celularId}-abcdefghijklmnop`;
  const l = await api(s.url, 'POST', `/admin/celulares/${A.celularId}/token-legacy`, { key: s.adminToken, json: { token: legacy } });
  expect(l.status, l.text).toBe(200);
});
afterAll(async () => {
  await s?.stop();
});

describe('where a key is accepted', () => {
  it('as Authorization: Bearer', async () => {
    const r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expectOk(r);
    expect(r.body.cliente.id).toBe(A.clienteId);
  });

  it('as ?key= in the query string', async () => {
    const r = await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(A.celularKey)}`);
    expectOk(r);
    expect(r.body).toMatchObject({ cliente_id: A.clienteId, celular_id: A.celularId });
  });

  it('as the body field key (JSON)', async () => {
    const r = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { json: { key: A.celularKey } });
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: A.celularId, status: 'need_scan' });
  });

  it('as the body field key (form-encoded)', async () => {
    const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, { form: { key: A.clientKey, nombre_interno: 'por formulario' } });
    expectOk(r);
    expect(r.body.celular).toMatchObject({ id: A.celularId, nombre_interno: 'por formulario' });
  });

  it('the same key in header and body is fine', async () => {
    const r = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.celularKey, json: { key: A.celularKey } });
    expectOk(r);
  });

  it('a client key plus one of its own celular keys acts as that celular', async () => {
    const r = await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(A.celularKey)}`, { key: A.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ cliente_id: A.clienteId, celular_id: A.celularId });
  });
});

describe('401: missing or unknown credentials', () => {
  const cases: Array<{ label: string; key: () => string | undefined }> = [
    { label: 'no key', key: () => undefined },
    { label: 'garbage key', key: () => 'this-is-not-a-key-at-all' },
    { label: 'short garbage', key: () => 'x' },
    { label: 'WA_ key with a wrong secret', key: () => `WA_${A.celularId}_${'A'.repeat(43)}` },
    { label: 'WA_ key of an id that does not exist', key: () => `WA_987654321_${A.celularKey.split('_').slice(2).join('_')}` },
    { label: 'WAC_ key with a wrong secret', key: () => `WAC_${A.clienteId}_${'B'.repeat(43)}` },
    { label: 'WAC_ key naming another client with a valid secret', key: () => `WAC_${B.clienteId}_${A.clientKey.split('_').slice(2).join('_')}` },
    { label: 'celular secret presented as a client key', key: () => `WAC_${A.clienteId}_${A.celularKey.split('_').slice(2).join('_')}` },
    { label: '64 hex that is no gateway token', key: () => 'f'.repeat(64) },
    { label: 'the operator token', key: () => s.adminToken },
  ];
  for (const c of cases) {
    it(`GET /api/info.php: ${c.label}`, async () => {
      const r = await api(s.url, 'GET', '/api/info.php', { key: c.key() });
      expectError(r, 401, 200);
      expect(r.body.api_texto).toBe('NO_AUTORIZADO');
      expect(r.body.saldo).toBeNull();
    });
  }

  it('every client endpoint refuses a missing key', async () => {
    const calls: Array<[string, string]> = [
      ['GET', '/api/info.php'],
      ['GET', '/api/saldo.php'],
      ['GET', '/api/celulares.php'],
      ['GET', `/api/celular.php?id=${A.celularId}`],
      ['GET', `/api/celular_status.php?id=${A.celularId}`],
      ['POST', '/api/celular_crear.php'],
      ['POST', '/api/celular-crear.php'],
      ['POST', '/api/admin-celular-crear.php'],
      ['POST', `/api/celular_editar.php?id=${A.celularId}`],
      ['POST', `/api/celular_eliminar.php?id=${A.celularId}`],
      ['POST', `/api/celular_qr.php?id=${A.celularId}`],
      ['POST', '/api/celular_vincular_qr.php'],
      ['POST', '/api/celular-vincular-qr.php'],
    ];
    for (const [method, path] of calls) {
      const r = await api(s.url, method, path, method === 'POST' ? { json: { numero: numeroNuevo(), nombre_interno: 'x' } } : {});
      expectError(r, 401, 200);
    }
    // Nothing was created by the refused calls.
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    expect(list.body.total).toBe(2);
  });

  it('a wrong key in the body is refused like one in the header', async () => {
    const r = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { form: { key: `WA_${A.celularId}_${'z'.repeat(43)}` } });
    expectError(r, 401, 200);
  });

  it('header key and body key naming different lines of the same client: 401', async () => {
    const r = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.celularKey, json: { key: a2.key } });
    expectError(r, 401, 200);
  });

  it('header key and ?key= naming different clients: 401', async () => {
    const r = await api(s.url, 'GET', `/api/info.php?key=${encodeURIComponent(B.celularKey)}`, { key: A.celularKey });
    expectError(r, 401, 200);
  });

  it("a client key plus another client's celular key: 401", async () => {
    const r = await api(s.url, 'POST', `/api/celular_qr.php?id=${B.celularId}`, { key: A.clientKey, json: { key: B.celularKey } });
    expectError(r, 401, 200);
  });

  it('a celular key plus its gateway token (same line) is accepted', async () => {
    const r = await api(s.url, 'GET', `/api/saldo.php?key=${A.gatewayToken}`, { key: A.celularKey });
    expectOk(r);
    expect(r.body.celular_id).toBe(A.celularId);
  });

  it('the keys and tokens of a deleted celular are unknown', async () => {
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, json: { numero: numeroNuevo() } });
    expect(c.status, c.text).toBe(201);
    const { celular_id: id, api_key: key, gateway_token: token } = c.body;
    const legacyTok = `legacy-del-${id}-0123456789abcdef`;
    expect((await api(s.url, 'POST', `/admin/celulares/${id}/token-legacy`, { key: s.adminToken, json: { token: legacyTok } })).status).toBe(200);
    expectOk(await api(s.url, 'GET', '/api/info.php', { key }));
    expectOk(await api(s.url, 'GET', '/api/info.php', { key: token }));
    const del = await api(s.url, 'POST', `/api/celular_eliminar.php?id=${id}`, { key: B.clientKey });
    expectOk(del);
    for (const k of [key, token, legacyTok]) {
      expectError(await api(s.url, 'GET', '/api/info.php', { key: k }), 401, 200);
      expectError(await api(s.url, 'GET', `/api/celular.php?id=${id}&key=${encodeURIComponent(k)}`), 401, 200);
    }
  });
});

describe('403 versus 404 between two clients', () => {
  const onCelular = (id: () => number): Array<[string, string, unknown]> => [
    ['GET', `/api/celular.php?id=${id()}`, undefined],
    ['GET', `/api/celular_status.php?id=${id()}`, undefined],
    ['POST', `/api/celular_qr.php?id=${id()}`, {}],
    ['POST', `/api/celular_editar.php?id=${id()}`, { nombre_interno: 'intruso' }],
    ['POST', `/api/celular_eliminar.php?id=${id()}`, {}],
  ];

  it("client A's key on client B's celular: 404, the same answer as a missing id", async () => {
    for (const [method, path, json] of onCelular(() => B.celularId)) {
      const r = await api(s.url, method, path, { key: A.clientKey, json });
      expectError(r, 404, 600);
      const missing = await api(s.url, method, path.replace(`id=${B.celularId}`, 'id=99999999'), { key: A.clientKey, json });
      expectError(missing, 404, 600);
      expect(r.body.api_texto).toBe(missing.body.api_texto);
    }
    const saldo = await api(s.url, 'GET', `/api/saldo.php?celular_id=${B.celularId}`, { key: A.clientKey });
    expectError(saldo, 404, 600);
    // B's celular is untouched.
    const own = await api(s.url, 'GET', `/api/celular.php?id=${B.celularId}`, { key: B.clientKey });
    expectOk(own);
    expect(own.body.celular.nombre_interno).not.toBe('intruso');
  });

  it("a celular key of client A on client B's celular: 404", async () => {
    for (const [method, path, json] of onCelular(() => B.celularId)) {
      expectError(await api(s.url, method, path, { key: A.celularKey, json }), 404, 600);
    }
  });

  it('a celular key on a sibling celular of the same client: 403', async () => {
    for (const [method, path, json] of onCelular(() => a2.id)) {
      const r = await api(s.url, method, path, { key: A.celularKey, json });
      expectError(r, 403, 201);
      expect(r.body.api_texto).toBe('PROHIBIDO');
    }
    const still = await api(s.url, 'GET', `/api/celular.php?id=${a2.id}`, { key: A.clientKey });
    expect(still.body.celular.nombre_interno).toBe('hermana');
  });

  it('a celular key may edit its own caps, hours and nombre_interno', async () => {
    const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${a2.id}`, {
      key: a2.key,
      json: {
        nombre_interno: 'propia',
        max_envios_por_minuto: 20,
        max_envios_por_hora: 900,
        max_envios_por_dia: 5000,
        hora_inicio_permitido: '08:00',
        hora_fin_permitido: '20:30',
      },
    });
    expectOk(r);
    expect(r.body.celular).toMatchObject({
      id: a2.id,
      nombre_interno: 'propia',
      max_envios_por_minuto: 20,
      max_envios_por_hora: 900,
      max_envios_por_dia: 5000,
      hora_inicio_permitido: '08:00',
      hora_fin_permitido: '20:30',
    });
  });

  it('a celular key may not change estado (403), even of its own line', async () => {
    const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${a2.id}`, { key: a2.key, json: { estado: 'suspendido' } });
    expectError(r, 403, 201);
    const g = await api(s.url, 'GET', `/api/celular.php?id=${a2.id}`, { key: A.clientKey });
    expect(g.body.celular.estado).toBe('desconectado');
    // The whole edit is refused, not half applied.
    const mixed = await api(s.url, 'POST', `/api/celular_editar.php?id=${a2.id}`, { key: a2.key, json: { estado: 'activo', nombre_interno: 'no' } });
    expectError(mixed, 403, 201);
    const g2 = await api(s.url, 'GET', `/api/celular.php?id=${a2.id}`, { key: a2.key });
    expect(g2.body.celular).toMatchObject({ estado: 'desconectado', nombre_interno: 'propia' });
  });

  it('a celular key may not create, delete or vincular (403)', async () => {
    for (const path of ['/api/celular_crear.php', '/api/celular-crear.php', '/api/admin-celular-crear.php']) {
      expectError(await api(s.url, 'POST', path, { key: A.celularKey, json: { numero: numeroNuevo() } }), 403, 201);
    }
    expectError(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${A.celularId}`, { key: A.celularKey }), 403, 201);
    for (const path of ['/api/celular_vincular_qr.php', '/api/celular-vincular-qr.php']) {
      expectError(await api(s.url, 'POST', path, { key: A.celularKey, json: { numero: numeroNuevo() } }), 403, 201);
    }
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    expect(list.body.total).toBe(2);
  });

  it('a celular key reads info, saldo and the list of its client', async () => {
    const info = await api(s.url, 'GET', '/api/info.php', { key: A.celularKey });
    expectOk(info);
    expect(info.body.cliente.id).toBe(A.clienteId);
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.celularKey });
    expectOk(list);
    expect(list.body.celulares.map((c: { id: number }) => c.id).sort()).toEqual([A.celularId, a2.id].sort());
  });

  it('the operator token on /api is 401; client and celular keys on /admin are 401', async () => {
    expectError(await api(s.url, 'GET', '/api/celulares.php', { key: s.adminToken }), 401, 200);
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: s.adminToken, json: { numero: numeroNuevo() } }), 401, 200);
    for (const k of [A.clientKey, A.celularKey, A.gatewayToken, legacy]) {
      expectError(await api(s.url, 'GET', '/admin/clientes', { key: k }), 401, 200);
      expectError(await api(s.url, 'POST', '/admin/saldo', { key: k, json: { cliente_id: A.clienteId, monto: 1000 } }), 401, 200);
      expectError(await api(s.url, 'POST', '/admin/sim/scan', { key: k, json: { celular_id: A.celularId } }), 401, 200);
    }
    expectError(await api(s.url, 'GET', '/admin/clientes'), 401, 200);
    const info = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(info.body.saldo_global).toBe(0);
  });
});

describe('gateway token and legacy token as Bearer (celular scope)', () => {
  it('the gateway token is 64 lowercase hex', () => {
    expect(A.gatewayToken).toMatch(/^[0-9a-f]{64}$/);
    expect(a2.token).toMatch(/^[0-9a-f]{64}$/);
  });

  for (const which of ['gateway', 'legacy'] as const) {
    const tok = () => (which === 'gateway' ? A.gatewayToken : legacy);
    it(`${which} token: reads its client and names its line`, async () => {
      const info = await api(s.url, 'GET', '/api/info.php', { key: tok() });
      expectOk(info);
      expect(info.body.cliente.id).toBe(A.clienteId);
      const saldo = await api(s.url, 'GET', '/api/saldo.php', { key: tok() });
      expectOk(saldo);
      expect(saldo.body).toMatchObject({ cliente_id: A.clienteId, celular_id: A.celularId });
      const q = await api(s.url, 'GET', `/api/saldo.php?key=${encodeURIComponent(tok())}`);
      expectOk(q);
      expect(q.body.celular_id).toBe(A.celularId);
      const own = await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: tok() });
      expectOk(own);
      expect(own.body.celular).toMatchObject({ id: A.celularId, tiene_gateway_token: true, tiene_token_legacy: true });
      const st = await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: tok() });
      expectOk(st);
      const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { json: { key: tok() } });
      expectOk(qr);
    });

    it(`${which} token: sibling 403, other client 404, no create/delete/vincular/estado`, async () => {
      expectError(await api(s.url, 'GET', `/api/celular.php?id=${a2.id}`, { key: tok() }), 403, 201);
      expectError(await api(s.url, 'GET', `/api/celular.php?id=${B.celularId}`, { key: tok() }), 404, 600);
      expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: tok(), json: { numero: numeroNuevo() } }), 403, 201);
      expectError(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${A.celularId}`, { key: tok() }), 403, 201);
      expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: tok(), json: { numero: numeroNuevo() } }), 403, 201);
      expectError(await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, { key: tok(), json: { estado: 'suspendido' } }), 403, 201);
      const edit = await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, { key: tok(), json: { max_envios_por_minuto: 30 } });
      expectOk(edit);
      expect(edit.body.celular.max_envios_por_minuto).toBe(30);
    });
  }

  it('a replaced legacy token stops working; the new one works', async () => {
    const next = `legacy-next-${A.celularId}-qrstuvwxyz`;
    const r = await api(s.url, 'POST', `/admin/celulares/${A.celularId}/token-legacy`, { key: s.adminToken, json: { token: next } });
    expectOk(r);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: legacy }), 401, 200);
    const ok = await api(s.url, 'GET', '/api/saldo.php', { key: next });
    expectOk(ok);
    expect(ok.body.celular_id).toBe(A.celularId);
    legacy = next;
  });
});
