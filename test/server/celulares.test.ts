import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';

/** The celular endpoints: create (and aliases), show, edit, delete, QR, status, vincular. */

const used = new Set<string>();
/** National part of a fresh Mexican mobile (10 digits); the stored form is 52 + this. */
function nacional(): string {
  for (;;) {
    const n = `55${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
    if (!used.has(n)) {
      used.add(n);
      return n;
    }
  }
}
const numeroNuevo = () => `52${nacional()}`;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let s: TestServer;
let A: Seeded;
let B: Seeded;

const admin = (method: string, path: string, json?: unknown) => api(s.url, method, path, { key: s.adminToken, json });

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
});
afterAll(async () => {
  await s?.stop();
});

function expectCreated(r: ApiResponse, numero: string, nombre: string | null): void {
  expectOk(r, 201);
  const id = r.body.celular_id;
  expect(id).toEqual(expect.any(Number));
  expect(r.body.estado).toBe('desconectado');
  expect(r.body.celular).toMatchObject({
    id,
    numero,
    nombre_interno: nombre,
    estado: 'desconectado',
    saldo_actual: 0,
    max_envios_por_minuto: 12,
    max_envios_por_hora: 500,
    max_envios_por_dia: null,
    hora_inicio_permitido: '00:00',
    hora_fin_permitido: '23:59',
    tiene_gateway_token: true,
    tiene_token_legacy: false,
  });
  expect(r.body.api_key).toMatch(new RegExp(`^WA_${id}_[A-Za-z0-9_-]{43}$`));
  expect(r.body.gateway_token).toMatch(/^[0-9a-f]{64}$/);
  expect(r.body.saldo).toBe(0);
}

describe('POST /api/celular_crear.php and its aliases', () => {
  it('JSON: 201 with celular_id, estado, celular, api_key and gateway_token; the key works', async () => {
    const n = nacional();
    const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: `52${n}`, nombre_interno: 'Ventas' } });
    expectCreated(r, `52${n}`, 'Ventas');
    const me = await api(s.url, 'GET', '/api/saldo.php', { key: r.body.api_key });
    expectOk(me);
    expect(me.body).toMatchObject({ cliente_id: A.clienteId, celular_id: r.body.celular_id });
    const byToken = await api(s.url, 'GET', `/api/celular.php?id=${r.body.celular_id}`, { key: r.body.gateway_token });
    expectOk(byToken);
    expect(byToken.body.celular.nombre_interno).toBe('Ventas');
  });

  it('form-encoded, with the key in the body, on /api/celular-crear.php', async () => {
    const n = nacional();
    const r = await api(s.url, 'POST', '/api/celular-crear.php', {
      form: { key: A.clientKey, numero: `+52 1 ${n.slice(0, 2)} ${n.slice(2, 6)} ${n.slice(6)}`, nombre_interno: 'Soporte' },
    });
    expectCreated(r, `52${n}`, 'Soporte');
  });

  it('JSON on /api/admin-celular-crear.php; no nombre_interno gives null', async () => {
    const n = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/admin-celular-crear.php', { key: A.clientKey, json: { numero: n } });
    expectCreated(r, n, null);
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    expect(list.body.celulares.map((c: { numero: string }) => c.numero)).toContain(n);
  });

  it('other countries are stored with their country code, digits only', async () => {
    const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, json: { numero: '+1 (415) 555-2671' } });
    expectCreated(r, '14155552671', null);
  });

  it('409 for a number already registered, however it is written', async () => {
    const n = nacional();
    expectOk(await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: `52${n}` } }), 201);
    const forms = [
      `52${n}`,
      `+52${n}`,
      `+52 ${n.slice(0, 2)} ${n.slice(2, 6)} ${n.slice(6)}`,
      `521${n}`,
      `+52 1 ${n}`,
      `0052${n}`,
      `52-${n.slice(0, 2)}-${n.slice(2)}`,
    ];
    for (const numero of forms) {
      const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero } });
      expectError(r, 409, 602);
      expect(r.body.api_texto).toBe('NUMERO_YA_REGISTRADO');
    }
    // Also for another client, and through the form encoding.
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, form: { numero: `521${n}` } }), 409, 602);
    // The 52 1 form registered first blocks the bare 52 form too.
    const m = nacional();
    expectCreated(await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, json: { numero: `521${m}` } }), `52${m}`, null);
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: `52${m}` } }), 409, 602);
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, json: { numero: '14155552671' } }), 409, 602);
  });

  it('400 (api_codigo 100) for an invalid or missing numero, or a too long nombre_interno', async () => {
    const bad: unknown[] = [
      { numero: 'abc' },
      { numero: '123' },
      { numero: '52555' },
      { numero: '+99 1234 5678' },
      { numero: '1234567890123456789' },
      { numero: '' },
      { numero: '   ' },
      {},
      { nombre_interno: 'sin numero' },
      { numero: numeroNuevo(), nombre_interno: 'x'.repeat(81) },
    ];
    for (const json of bad) {
      const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json });
      expectError(r, 400, 100);
      expect(r.body.api_texto).toBe('PARAMETROS_INVALIDOS');
    }
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, form: { numero: 'no-es-numero' } }), 400, 100);
  });

  it('403 with api_codigo 603 when max_celulares is reached', async () => {
    const c = await seedClient(s, { numero: numeroNuevo(), max_celulares: 2 });
    expectOk(await api(s.url, 'POST', '/api/celular_crear.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 201);
    const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.clientKey, json: { numero: numeroNuevo() } });
    expectError(r, 403, 603);
    expect(r.body.api_texto).toBe('LIMITE_DE_CELULARES');
    // vincular of a new number hits the same cap.
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 403, 603);
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: c.clientKey });
    expect(list.body.total).toBe(2);
    // Raising the cap lets the next one in; max_celulares 0 refuses the first.
    expectOk(await admin('PATCH', `/admin/clientes/${c.clienteId}`, { max_celulares: 3 }));
    expectOk(await api(s.url, 'POST', '/api/celular_crear.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 201);
    const z = await admin('POST', '/admin/clientes', { nombre: 'Cero', email: 'cero@example.com', max_celulares: 0 });
    expect(z.status).toBe(201);
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: z.body.api_key, json: { numero: numeroNuevo() } }), 403, 603);
  });

  it('a suspended client may not create (403, api_codigo 302) but may still read', async () => {
    const c = await seedClient(s, { numero: numeroNuevo() });
    expectOk(await admin('PATCH', `/admin/clientes/${c.clienteId}`, { estado: 'suspendido' }));
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 403, 302);
    expectError(await api(s.url, 'POST', `/api/celular_editar.php?id=${c.celularId}`, { key: c.clientKey, json: { nombre_interno: 'x' } }), 403, 302);
    expectError(await api(s.url, 'POST', `/api/celular_qr.php?id=${c.celularId}`, { key: c.clientKey }), 403, 302);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: c.clientKey, json: { numero: numeroNuevo() } }), 403, 302);
    const info = await api(s.url, 'GET', '/api/info.php', { key: c.clientKey });
    expectOk(info);
    expect(info.body.cliente.estado).toBe('suspendido');
    expectOk(await api(s.url, 'GET', `/api/celular.php?id=${c.celularId}`, { key: c.celularKey }));
  });
});

describe('GET /api/celular.php', () => {
  it('answers the celular wrapper with saldo', async () => {
    const r = await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: A.clientKey });
    expectOk(r);
    expect(r.body.celular).toMatchObject({ id: A.celularId, numero: A.numero, estado: 'desconectado', saldo_actual: 0 });
    expect(r.body.celular.created_at).toMatch(ISO);
    expect(r.body.saldo).toBe(0);
  });

  it('400 without a usable id, 404 for an unknown one', async () => {
    for (const q of ['', '?id=', '?id=abc', '?id=0', '?id=-3', '?id=1.5']) {
      expectError(await api(s.url, 'GET', `/api/celular.php${q}`, { key: A.clientKey }), 400, 100);
    }
    const r = await api(s.url, 'GET', '/api/celular.php?id=424242', { key: A.clientKey });
    expectError(r, 404, 600);
    expect(r.body.api_texto).toBe('CELULAR_NO_ENCONTRADO');
  });
});

describe('POST /api/celular_editar.php', () => {
  let id: number;
  let key: string;
  beforeAll(async () => {
    const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo(), nombre_interno: 'editable' } });
    id = r.body.celular_id;
    key = r.body.api_key;
  });

  it('JSON: every field at once; the answer and a later read agree', async () => {
    const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, {
      key: A.clientKey,
      json: {
        estado: 'suspendido',
        nombre_interno: '  Recepción  ',
        max_envios_por_minuto: 1000,
        max_envios_por_hora: 50000,
        max_envios_por_dia: 100000,
        hora_inicio_permitido: '07:30:00',
        hora_fin_permitido: '22:15:45',
      },
    });
    expectOk(r);
    const want = {
      id,
      estado: 'suspendido',
      nombre_interno: 'Recepción',
      max_envios_por_minuto: 1000,
      max_envios_por_hora: 50000,
      max_envios_por_dia: 100000,
      hora_inicio_permitido: '07:30',
      hora_fin_permitido: '22:15:45',
    };
    expect(r.body.celular).toMatchObject(want);
    expect(r.body.saldo).toBe(0);
    const g = await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key });
    expect(g.body.celular).toMatchObject(want);
  });

  it('form-encoded: numbers are read from strings; the lower bounds are accepted', async () => {
    const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, {
      key: A.clientKey,
      form: {
        estado: 'activo',
        max_envios_por_minuto: '1',
        max_envios_por_hora: '1',
        max_envios_por_dia: '1',
        hora_inicio_permitido: '00:00',
        hora_fin_permitido: '23:59:59',
      },
    });
    expectOk(r);
    expect(r.body.celular).toMatchObject({
      estado: 'activo',
      max_envios_por_minuto: 1,
      max_envios_por_hora: 1,
      max_envios_por_dia: 1,
      hora_fin_permitido: '23:59:59',
    });
  });

  it('max_envios_por_dia null removes the daily cap; nombre_interno null or blank clears it', async () => {
    let r = await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, { key, json: { max_envios_por_dia: null, nombre_interno: null } });
    expectOk(r);
    expect(r.body.celular).toMatchObject({ max_envios_por_dia: null, nombre_interno: null });
    r = await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, { key, json: { nombre_interno: 'x'.repeat(80) } });
    expectOk(r);
    expect(r.body.celular.nombre_interno).toBe('x'.repeat(80));
    r = await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, { key, json: { nombre_interno: '   ' } });
    expectOk(r);
    expect(r.body.celular.nombre_interno).toBeNull();
  });

  it('the id may come in the body instead of the query', async () => {
    const r = await api(s.url, 'POST', '/api/celular_editar.php', { key, json: { id, max_envios_por_hora: 321 } });
    expectOk(r);
    expect(r.body.celular).toMatchObject({ id, max_envios_por_hora: 321 });
  });

  const invalid: Array<[string, Record<string, unknown>]> = [
    ['empty body', {}],
    ['unknown field', { foo: 1 }],
    ['unknown field beside a valid one', { nombre_interno: 'ok', color: 'rojo' }],
    ['numero is not editable', { numero: '525512345678' }],
    ['saldo_actual is not editable', { saldo_actual: 1000 }],
    ['estado outside the enum', { estado: 'borrado' }],
    ['nombre_interno of 81 characters', { nombre_interno: 'x'.repeat(81) }],
    ['max_envios_por_minuto 0', { max_envios_por_minuto: 0 }],
    ['max_envios_por_minuto 1001', { max_envios_por_minuto: 1001 }],
    ['max_envios_por_minuto 1.5', { max_envios_por_minuto: 1.5 }],
    ['max_envios_por_minuto null', { max_envios_por_minuto: null }],
    ['max_envios_por_minuto text', { max_envios_por_minuto: 'muchos' }],
    ['max_envios_por_hora 0', { max_envios_por_hora: 0 }],
    ['max_envios_por_hora 50001', { max_envios_por_hora: 50001 }],
    ['max_envios_por_dia 0', { max_envios_por_dia: 0 }],
    ['max_envios_por_dia 100001', { max_envios_por_dia: 100001 }],
    ['hora 24:00', { hora_inicio_permitido: '24:00' }],
    ['hora 7:00', { hora_inicio_permitido: '7:00' }],
    ['hora 12:60', { hora_fin_permitido: '12:60' }],
    ['hora 12:00:60', { hora_fin_permitido: '12:00:60' }],
    ['hora with text', { hora_fin_permitido: 'mediodia' }],
  ];
  for (const [label, json] of invalid) {
    it(`400 api_codigo 100: ${label}; nothing changes`, async () => {
      const before = await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key: A.clientKey });
      const r = await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, { key: A.clientKey, json });
      expectError(r, 400, 100);
      const after = await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key: A.clientKey });
      expect(after.body.celular).toEqual(before.body.celular);
    });
  }

  it('400 for an empty form body; 404 for an unknown id', async () => {
    expectError(await api(s.url, 'POST', `/api/celular_editar.php?id=${id}`, { key: A.clientKey, form: {} }), 400, 100);
    expectError(await api(s.url, 'POST', '/api/celular_editar.php?id=4242424', { key: A.clientKey, json: { nombre_interno: 'x' } }), 404, 600);
    expectError(await api(s.url, 'POST', '/api/celular_editar.php', { key: A.clientKey, json: { nombre_interno: 'x' } }), 400, 100);
  });

  it('edits are audited with the actor', async () => {
    const r = await admin('GET', `/admin/auditoria?cliente_id=${A.clienteId}&limit=50`);
    expectOk(r);
    const edits = r.body.registros.filter((x: { accion: string; objeto_id: number }) => x.accion === 'celular.editar' && x.objeto_id === id);
    expect(edits.length).toBeGreaterThanOrEqual(4);
    expect(edits.map((x: { actor: string }) => x.actor)).toEqual(expect.arrayContaining([`cliente:${A.clienteId}`, `celular:${id}(key)`]));
  });
});

describe('POST /api/celular_eliminar.php', () => {
  it('client key: hard delete, audited; the number may be registered again', async () => {
    const numero = numeroNuevo();
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero, nombre_interno: 'a borrar' } });
    expect(c.status).toBe(201);
    const id = c.body.celular_id;
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: A.clientKey }));

    expectError(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${id}`, { key: c.body.api_key }), 403, 201);
    expectError(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${id}`, { key: B.clientKey }), 404, 600);

    const r = await api(s.url, 'POST', `/api/celular_eliminar.php?id=${id}`, { key: A.clientKey });
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: id, numero, eliminado: true });

    expectError(await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key: A.clientKey }), 404, 600);
    expectError(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${id}`, { key: A.clientKey }), 404, 600);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: c.body.api_key }), 401, 200);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: c.body.gateway_token }), 401, 200);
    const list = await api(s.url, 'GET', '/api/celulares.php', { key: A.clientKey });
    expect(list.body.celulares.map((x: { id: number }) => x.id)).not.toContain(id);

    const audit = await admin('GET', '/admin/auditoria');
    expectOk(audit);
    const rec = audit.body.registros.find((x: { accion: string; objeto_id: number }) => x.accion === 'celular.eliminar' && x.objeto_id === id);
    expect(rec).toMatchObject({
      actor: `cliente:${A.clienteId}`,
      objeto_tipo: 'celular',
      cliente_id: A.clienteId,
      detalle: { numero, nombre_interno: 'a borrar' },
    });
    expect(rec.fecha).toMatch(ISO);

    const again = await api(s.url, 'POST', '/api/celular_crear.php', { key: B.clientKey, json: { numero } });
    expectOk(again, 201);
    expect(again.body.celular_id).not.toBe(id);
  });

  it('form-encoded, with the key and the id in the body', async () => {
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
    const r = await api(s.url, 'POST', '/api/celular_eliminar.php', { form: { key: A.clientKey, id: String(c.body.celular_id) } });
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: c.body.celular_id, eliminado: true });
  });

  it('400 without an id', async () => {
    expectError(await api(s.url, 'POST', '/api/celular_eliminar.php', { key: A.clientKey }), 400, 100);
    expectError(await api(s.url, 'POST', '/api/celular_eliminar.php?id=x', { key: A.clientKey }), 400, 100);
  });
});

describe('QR and session status', () => {
  it('status before any QR: the instance is named at creation; the gateway has no session for it yet', async () => {
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
    expect(c.body.celular.gateway_instancia).toBe(`pasarela-${c.body.celular_id}`);
    const r = await api(s.url, 'GET', `/api/celular_status.php?id=${c.body.celular_id}`, { key: c.body.api_key });
    expectOk(r);
    expect(r.body).toMatchObject({
      celular_id: c.body.celular_id,
      gateway_instancia: `pasarela-${c.body.celular_id}`,
      status: 'unknown',
      status_actualizado_desde_gateway: true,
      estado: 'desconectado',
    });
    expect(r.body.ultimo_check).toMatch(ISO);
  });

  it('POST /api/celular_qr.php: a QR string and need_scan (JSON and form)', async () => {
    const r = await api(s.url, 'POST', `/api/celular_qr.php?id=${B.celularId}`, { key: B.clientKey, json: {} });
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: B.celularId, status: 'need_scan', estado: 'desconectado', gateway_instancia: expect.stringMatching(/\S/) });
    expect(r.body.qr).toMatch(/^2@\S+,\S+,\S+,1$/);
    const f = await api(s.url, 'POST', `/api/celular_qr.php?id=${B.celularId}`, { form: { key: B.celularKey } });
    expectOk(f);
    expect(f.body).toMatchObject({ celular_id: B.celularId, status: 'need_scan', qr: r.body.qr, gateway_instancia: r.body.gateway_instancia });
    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${B.celularId}`, { key: B.gatewayToken });
    expectOk(st);
    expect(st.body).toMatchObject({
      celular_id: B.celularId,
      gateway_instancia: r.body.gateway_instancia,
      status: 'need_scan',
      status_actualizado_desde_gateway: true,
    });
    expect(st.body.ultimo_check).toMatch(ISO);
    expectError(await api(s.url, 'POST', '/api/celular_qr.php?id=999999', { key: B.clientKey }), 404, 600);
    expectError(await api(s.url, 'GET', '/api/celular_status.php', { key: B.clientKey }), 400, 100);
  });
});

describe('POST /api/celular_vincular_qr.php', () => {
  it('a new number: created (creado true, api_key, gateway_token) with its QR', async () => {
    const n = nacional();
    const r = await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: `+52 1 ${n}`, nombre: 'Caja 1' } });
    expectOk(r);
    expect(r.body).toMatchObject({
      creado: true,
      numero: `52${n}`,
      status: 'need_scan',
      estado: 'desconectado',
      gateway_instancia: expect.stringMatching(/\S/),
    });
    expect(r.body.qr).toMatch(/^2@/);
    expect(r.body.api_key).toMatch(new RegExp(`^WA_${r.body.celular_id}_`));
    expect(r.body.gateway_token).toMatch(/^[0-9a-f]{64}$/);
    const g = await api(s.url, 'GET', `/api/celular.php?id=${r.body.celular_id}`, { key: r.body.api_key });
    expectOk(g);
    expect(g.body.celular).toMatchObject({ numero: `52${n}`, nombre_interno: 'Caja 1', last_status: 'need_scan' });

    // The same number again (written differently): the client's own line is reused.
    const again = await api(s.url, 'POST', '/api/celular-vincular-qr.php', { form: { key: A.clientKey, numero: `52${n}` } });
    expectOk(again);
    expect(again.body).toMatchObject({ creado: false, celular_id: r.body.celular_id, numero: `52${n}`, status: 'need_scan', qr: r.body.qr });
    expect(again.body).not.toHaveProperty('api_key');
    expect(again.body).not.toHaveProperty('gateway_token');
  });

  it('reuses a connected line: status connected and an empty QR', async () => {
    const r = await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: A.numero } });
    expectOk(r);
    expect(r.body).toMatchObject({ creado: false, celular_id: A.celularId, status: 'need_scan' });
    expectOk(await admin('POST', '/admin/sim/scan', { celular_id: A.celularId }));
    const c = await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: A.numero } });
    expectOk(c);
    expect(c.body).toMatchObject({ creado: false, celular_id: A.celularId, status: 'connected', qr: '', estado: 'activo' });
  });

  it('form-encoded on the hyphenated alias creates too', async () => {
    const n = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/celular-vincular-qr.php', { key: B.clientKey, form: { numero: n, nombre: 'alias' } });
    expectOk(r);
    expect(r.body).toMatchObject({ creado: true, numero: n, status: 'need_scan' });
  });

  it("another client's number: 409; celular key: 403; bad numero: 400", async () => {
    const r = await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: B.numero } });
    expectError(r, 409, 602);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.celularKey, json: { numero: A.numero } }), 403, 201);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: '12' } }), 400, 100);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { nombre: 'sin numero' } }), 400, 100);
    // B's line did not move to A.
    const g = await api(s.url, 'GET', `/api/celular.php?id=${B.celularId}`, { key: B.clientKey });
    expectOk(g);
  });
});
