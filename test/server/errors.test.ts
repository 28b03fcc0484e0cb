import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, numeroNuevo } from '../helpers/expect.js';

/**
 * Refusals in the docs/design.md §4 error shape: unknown paths, bodies that are
 * malformed, too large or of the wrong type, validation errors; never a 500
 * and never a stack trace.
 */

const STACK = /\n\s+at |\bat [\w.<>]+ \(|\.ts:\d+|\.js:\d+|node_modules|Error: /;

let s: TestServer;
let A: Seeded;

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  A = await seedClient(s, { numero: numeroNuevo() });
});
afterAll(async () => {
  await s?.stop();
});

/** Every POST route, with the credential it needs. */
const postRoutes = (): Array<[string, string]> => [
  ['/api/celular_crear.php', A.clientKey],
  ['/api/celular-crear.php', A.clientKey],
  ['/api/admin-celular-crear.php', A.clientKey],
  [`/api/celular_editar.php?id=${A.celularId}`, A.clientKey],
  [`/api/celular_eliminar.php?id=${A.celularId}`, A.clientKey],
  [`/api/celular_qr.php?id=${A.celularId}`, A.clientKey],
  ['/api/celular_vincular_qr.php', A.clientKey],
  ['/api/celular-vincular-qr.php', A.clientKey],
  ['/admin/clientes', s.adminToken],
  [`/admin/clientes/${A.clienteId}`, s.adminToken],
  [`/admin/clientes/${A.clienteId}/rotar-key`, s.adminToken],
  ['/admin/saldo', s.adminToken],
  [`/admin/celulares/${A.celularId}/token-legacy`, s.adminToken],
  [`/admin/celulares/${A.celularId}/rotar-key`, s.adminToken],
  ['/admin/sim/scan', s.adminToken],
  ['/admin/sim/logout', s.adminToken],
  ['/admin/sim/receive', s.adminToken],
  ['/admin/sim/fail', s.adminToken],
];

describe('404 for unknown paths', () => {
  it('answers the JSON error with api_codigo 104, with or without credentials', async () => {
    const calls: Array<[string, string, string | undefined]> = [
      ['GET', '/', undefined],
      ['GET', '/nope', undefined],
      ['GET', '/api/nope.php', A.clientKey],
      ['POST', '/api/mensaje_inexistente.php', A.clientKey],
      ['GET', '/api/celular_crear.php', A.clientKey],
      ['DELETE', `/api/celular.php?id=${A.celularId}`, A.clientKey],
      ['PUT', '/admin/clientes', s.adminToken],
      ['GET', '/admin/nada', s.adminToken],
      ['GET', '/admin/nada', undefined],
      ['OPTIONS', '/api/info.php', undefined],
      ['GET', '/api/info.php/extra', A.clientKey],
    ];
    for (const [method, path, key] of calls) {
      const r = await api(s.url, method, path, { key });
      expectError(r, 404, 104);
      expect(r.body.api_texto).toBe('RUTA_NO_ENCONTRADA');
      expect(r.body.saldo).toBeNull();
    }
  });

  it('does not echo a ?key= query back', async () => {
    const r = await api(s.url, 'GET', `/nope?key=${encodeURIComponent(A.clientKey)}`);
    expectError(r, 404, 104);
    expect(r.text).not.toContain(A.clientKey);
  });

  // Fastify's own errors (a broken percent-escape in the path) are answered in our error shape
  // (ok:false, api_codigo), never Fastify's.
  it('a path with a malformed percent-escape is answered in the error shape', async () => {
    const r = await api(s.url, 'GET', '/api/%E0%A4%A', { key: A.clientKey });
    expect([400, 404]).toContain(r.status);
    expectError(r, r.status);
  });
});

describe('400 for malformed bodies (api_codigo 101)', () => {
  it('malformed JSON on every POST route', async () => {
    for (const [path, key] of postRoutes()) {
      const r = await api(s.url, 'POST', path, { key, raw: '{"numero": "5255', contentType: 'application/json' });
      expectError(r, 400, 101);
      expect(r.body.api_texto).toBe('CUERPO_INVALIDO');
    }
  });

  it('a prototype-poisoning body, concatenated JSON, single quotes, and bytes that are not UTF-8', async () => {
    const bodies: Array<string | Buffer> = [
      '{"__proto__": {"admin": true}, "numero": "525512345678"}',
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      '{"a":1}{"b":2}',
      "{'numero': '1'}",
    ];
    for (const raw of bodies) {
      const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, raw, contentType: 'application/json' });
      expectError(r, 400, 101);
    }
    // A constructor.prototype key is harmless data: it is read, and numero is then missing.
    const c = await api(s.url, 'POST', '/api/celular_crear.php', {
      key: A.clientKey,
      raw: '{"constructor": {"prototype": {"x": 1}}}',
      contentType: 'application/json',
    });
    expectError(c, 400);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    expect(list.body.total).toBe(1);
  });
});

describe('413 for bodies over 1 MB (api_codigo 102)', () => {
  const big = () => JSON.stringify({ numero: numeroNuevo(), nombre_interno: 'x'.repeat(1.2 * 1024 * 1024) });

  it('a 1.2 MB JSON body on client and operator routes', async () => {
    for (const [path, key] of [
      ['/api/celular_crear.php', A.clientKey],
      [`/api/celular_editar.php?id=${A.celularId}`, A.clientKey],
      ['/api/celular_vincular_qr.php', A.clientKey],
      ['/admin/clientes', s.adminToken],
      ['/admin/sim/receive', s.adminToken],
    ] as const) {
      const r = await api(s.url, 'POST', path, { key, raw: big(), contentType: 'application/json' });
      expectError(r, 413, 102);
      expect(r.body.api_texto).toBe('CUERPO_DEMASIADO_GRANDE');
    }
  });

  it('a 1.2 MB form-encoded body', async () => {
    const r = await api(s.url, 'POST', '/api/celular_crear.php', {
      key: A.clientKey,
      form: { numero: numeroNuevo(), nombre_interno: 'y'.repeat(1.2 * 1024 * 1024) },
    });
    expectError(r, 413, 102);
  });

  it('is refused before authentication, and a body just under the limit is read (then validated)', async () => {
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { raw: big(), contentType: 'application/json' }), 413, 102);
    const under = await api(s.url, 'POST', '/api/celular_crear.php', {
      key: A.clientKey,
      json: { numero: numeroNuevo(), nombre_interno: 'z'.repeat(900 * 1024) },
    });
    expectError(under, 400, 100);
    expect(under.text.length).toBeLessThan(2000);
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    expect(list.body.total).toBe(1);
  });
});

describe('415 for bodies that are neither JSON nor form-encoded (api_codigo 103)', () => {
  it('XML, multipart, octet-stream and a vendor JSON type', async () => {
    for (const contentType of ['application/xml', 'multipart/form-data; boundary=x', 'application/octet-stream', 'application/vnd.api+json', 'image/png']) {
      const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, raw: '--x\r\nnumero=525512345678', contentType });
      expectError(r, 415, 103);
      expect(r.body.api_texto).toBe('TIPO_DE_CUERPO_NO_SOPORTADO');
    }
    expectError(await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, raw: '<cliente/>', contentType: 'text/xml' }), 415, 103);
  });

  // Every endpoint takes JSON or form bodies only (docs/decisions.md D-20): Fastify's built-in
  // text/plain parser is removed, so such a body is 415 on every route, with or without a body
  // schema.
  it('a text/plain body on a POST is refused with 415', async () => {
    for (const [path, key] of postRoutes()) {
      const r = await api(s.url, 'POST', path, { key, raw: 'numero=525512345678', contentType: 'text/plain' });
      expectError(r, 415, 103);
    }
  });
});

describe('validation errors: 400 with api_codigo 100', () => {
  it('on query, params and body, client and operator routes alike', async () => {
    const calls: Array<[string, string, string, unknown]> = [
      ['GET', '/api/celular.php?id=abc', A.clientKey, undefined],
      ['GET', '/api/celular.php', A.clientKey, undefined],
      ['GET', '/api/saldo.php?celular_id=-1', A.clientKey, undefined],
      ['POST', '/api/celular_crear.php', A.clientKey, { numero: 'no' }],
      ['POST', '/api/celular_crear.php', A.clientKey, ['525512345678']],
      ['POST', `/api/celular_editar.php?id=${A.celularId}`, A.clientKey, { max_envios_por_hora: 0 }],
      ['POST', '/admin/clientes', s.adminToken, { nombre: 'x' }],
      ['GET', '/admin/clientes/x', s.adminToken, undefined],
      ['POST', '/admin/saldo', s.adminToken, { cliente_id: A.clienteId, monto: 0 }],
      ['POST', '/admin/sim/scan', s.adminToken, { celular_id: 'uno' }],
      ['GET', '/admin/auditoria?limit=0', s.adminToken, undefined],
    ];
    for (const [method, path, key, json] of calls) {
      const r = await api(s.url, method, path, { key, json });
      expectError(r, 400, 100);
      expect(r.body.api_texto).toBe('PARAMETROS_INVALIDOS');
      expect(r.body.error.length).toBeGreaterThan(3);
      expect(r.body.api_descripcion).toBe(r.body.error);
    }
  });
});

describe('never a 500, never a stack trace', () => {
  it('odd but well-formed HTTP gets a 4xx in the error shape', async () => {
    const k = A.clientKey;
    const calls: Array<[string, string, Parameters<typeof api>[3]]> = [
      ['GET', '/api/celular.php?id=99999999999999999999999', { key: k }],
      ['GET', '/api/celular.php?id=1&id=2', { key: k }],
      ['GET', '/api/celular.php?id=%00', { key: k }],
      ['GET', `/api/info.php?key=${'x'.repeat(5000)}`, {}],
      ['GET', '/api/info.php', { key: `WA_99999999999999999_${'a'.repeat(128)}` }],
      ['GET', '/api/info.php', { key: `WA_1_${'a'.repeat(500)}` }],
      ['GET', '/api/info.php', { key: 'x'.repeat(6000) }],
      ['GET', '/api/info.php', { headers: { authorization: 'Basic dXNlcjpwYXNz' } }],
      ['GET', '/api/info.php', { headers: { authorization: 'Bearer ' } }],
      ['POST', '/api/celular_crear.php', { key: k, json: { numero: { $gt: '' } } }],
      ['POST', '/api/celular_crear.php', { key: k, json: { numero: null } }],
      ['POST', '/api/celular_crear.php', { key: k, raw: 'null', contentType: 'application/json' }],
      ['POST', '/api/celular_crear.php', { key: k, raw: '"texto"', contentType: 'application/json' }],
      ['POST', '/api/celular_crear.php', { key: k, raw: '%%%=%%%&numero', contentType: 'application/x-www-form-urlencoded' }],
      ['POST', '/api/celular_crear.php', { key: k, form: { numero: ['525512345678', '525512345679'] } }],
      ['POST', `/api/celular_editar.php?id=${A.celularId}`, { key: k, json: { hora_inicio_permitido: ['08:00', '09:00'] } }],
      ['POST', `/api/celular_editar.php?id=${A.celularId}`, { key: k, raw: 'null', contentType: 'application/json' }],
      ['POST', `/api/celular_editar.php?id=99999999999999999999`, { key: k, json: { nombre_interno: 'x' } }],
      ['POST', '/api/celular_qr.php?id=0', { key: k }],
      ['POST', '/api/celular_eliminar.php?id=1e3', { key: k }],
      ['POST', '/api/celular_vincular_qr.php', { key: k, json: { numero: '\u0000\u0001' } }],
      ['POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'x'.repeat(201), email: 'a@b.co' } }],
      ['POST', '/admin/clientes', { key: s.adminToken, json: ['x'] }],
      ['POST', '/admin/saldo', { key: s.adminToken, json: { cliente_id: 1e300, monto: 1 } }],
      ['POST', '/admin/saldo', { key: s.adminToken, json: { cliente_id: A.clienteId, monto: 1e12 } }],
      ['PATCH', '/admin/clientes/99999999999999999999', { key: s.adminToken, json: { nombre: 'x' } }],
      ['POST', '/admin/celulares/1/token-legacy', { key: s.adminToken, json: [1] }],
      ['POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: A.celularId, de: '5215512345678', texto: 'x'.repeat(5000) } }],
      ['POST', '/admin/sim/fail', { key: s.adminToken, json: { numero: '5215512345678', activo: 'quizas' } }],
    ];
    for (const [method, path, opts] of calls) {
      const r = await api(s.url, method, path, opts);
      expect(r.status, `${method} ${path} -> ${r.status} ${r.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${method} ${path}`).toBeLessThan(500);
      expectError(r, r.status);
      expect(r.text, `${method} ${path}`).not.toMatch(STACK);
    }
    // Deeply nested JSON is parsed or refused, never a crash.
    const deep = await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, {
      key: k,
      raw: '['.repeat(100_000) + ']'.repeat(100_000),
      contentType: 'application/json',
    });
    expectError(deep, 400);
    expect(deep.text).not.toMatch(STACK);
    const h = await api(s.url, 'GET', '/health');
    expect(h.status).toBe(200);
    expect(s.logs.some((l) => l.includes('"level":50'))).toBe(false);
  });

  // An initial saldo has the same bound as a balance movement: larger values would be stored as
  // REAL and stop changing exactly.
  it('an initial saldo is refused when too large, or kept exact', async () => {
    const r = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'Grande', email: 'g@example.com', saldo: 1e20 } });
    if (r.status === 400) return expectError(r, 400, 100);
    expect(r.status).toBe(201);
    const after = await api(s.url, 'POST', '/admin/saldo', { key: s.adminToken, json: { cliente_id: r.body.cliente.id, monto: -1 } });
    expect(after.status).toBe(200);
    expect(Number.isSafeInteger(after.body.saldo_global)).toBe(true);
  });
});
