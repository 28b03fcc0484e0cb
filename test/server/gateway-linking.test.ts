import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import type { SessionStatusEvent } from '../../src/core/events/events.js';
import type { Gateway, InstanceSpec } from '../../src/core/ports/gateway.js';
import type { SimGateway } from '../../src/gateways/sim.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';

/**
 * Linking a line through the Gateway port against the simulator: the
 * instance named and created with the celular, the pairing code (the
 * alternative to the QR), the one-step vincular endpoints, and what the
 * client gets when the gateway is unreachable right after a number was
 * registered (its key, and a notice to ask again).
 */

const CODE = /^[A-Z0-9]{4}-[A-Z0-9]{4}$/;

let s: TestServer;
let A: Seeded;
let B: Seeded;
const sim = () => s.core.gateway as SimGateway;
const clock = () => s.clock as ManualClock;
const op = (path: string, json?: unknown) => api(s.url, 'POST', path, { key: s.adminToken, json });
const celular = async (id: number) => (await s.core.store.getCelular(id))!;

let sessionEvents: SessionStatusEvent[] = [];
let unsub: () => void = () => {};

beforeAll(async () => {
  s = await startTestServer();
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
  unsub = s.core.bus.subscribe('session.status', (e) => sessionEvents.push(e));
});
afterAll(async () => {
  unsub();
  await s?.stop();
});
afterEach(() => {
  sim().setOutage(false);
  vi.restoreAllMocks();
  sessionEvents = [];
});

async function newCelular(key = A.clientKey): Promise<{ id: number; key: string; numero: string; token: string; instancia: string }> {
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key, json: { numero: numeroNuevo() } });
  expect(r.status, r.text).toBe(201);
  return {
    id: r.body.celular_id,
    key: r.body.api_key,
    numero: r.body.celular.numero,
    token: r.body.gateway_token,
    instancia: r.body.celular.gateway_instancia,
  };
}

const codigo = (id: number, key: string) => api(s.url, 'POST', `/api/celular_codigo.php?id=${id}`, { key });

describe('instance at creation', () => {
  it('names the instance pasarela-<id> and asks the gateway for it with the line number and its gateway token', async () => {
    const calls: Array<[string, InstanceSpec]> = [];
    const orig = sim().ensureInstance.bind(sim());
    vi.spyOn(sim() as Gateway, 'ensureInstance').mockImplementation(async (instancia: string, spec: InstanceSpec) => {
      calls.push([instancia, spec]);
      return orig();
    });
    const c = await newCelular();
    expect(c.instancia).toBe(`pasarela-${c.id}`);
    expect((await celular(c.id)).gateway_instancia).toBe(`pasarela-${c.id}`);
    expect(calls).toEqual([[`pasarela-${c.id}`, { numero: c.numero, token: c.token }]]);
    // The creation answers before any link attempt: nothing is pending at the network.
    expect(await s.core.store.kvGet('sim.sessions', c.instancia)).toBeNull();
  });

  it('a gateway that is down at creation does not stop the creation; the failure is logged', async () => {
    sim().setOutage(true);
    const c = await newCelular();
    expect(c.instancia).toBe(`pasarela-${c.id}`);
    expect(await celular(c.id)).toMatchObject({ estado: 'desconectado', gateway_instancia: c.instancia });
    await until(() => s.logs.some((l) => l.includes('gateway instance creation failed')), { what: 'the logged gateway failure' });
    sim().setOutage(false);
    // Linking later creates what is missing.
    const q = await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key });
    expectOk(q);
    expect(q.body).toMatchObject({ status: 'need_scan', gateway_instancia: c.instancia });
  });
});

describe('POST /api/celular_codigo.php', () => {
  it('answers a pairing code XXXX-XXXX with status need_scan, the same one until the line is linked', async () => {
    const c = await newCelular();
    const first = await codigo(c.id, c.key);
    expectOk(first);
    expect(first.body).toMatchObject({ celular_id: c.id, gateway_instancia: c.instancia, status: 'need_scan', estado: 'desconectado' });
    expect(first.body.codigo).toMatch(CODE);
    await until(() => sessionEvents.some((e) => e.celular_id === c.id && e.status === 'need_scan'), { what: 'session.status need_scan' });

    // Asked again (by the client key too), and after a QR rotation period: the same code.
    clock().advance(25_000);
    const again = await codigo(c.id, A.clientKey);
    expectOk(again);
    expect(again.body).toMatchObject({ status: 'need_scan', codigo: first.body.codigo });
    // A QR asked for in between belongs to the same link attempt: the code stays.
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key }));
    expect((await codigo(c.id, c.key)).body.codigo).toBe(first.body.codigo);

    expectOk(await op('/admin/sim/scan', { celular_id: c.id, codigo: first.body.codigo }));
    const linked = await codigo(c.id, c.key);
    expectOk(linked);
    expect(linked.body).toMatchObject({ status: 'connected', codigo: '', estado: 'activo' });

    // After the phone logs out, a new link attempt has a new code.
    expectOk(await op('/admin/sim/logout', { celular_id: c.id }));
    const fresh = await codigo(c.id, c.key);
    expect(fresh.body.status).toBe('need_scan');
    expect(fresh.body.codigo).toMatch(CODE);
    expect(fresh.body.codigo).not.toBe(first.body.codigo);
  });

  it('scan with the right codigo connects: celular activo and one session.status event; a wrong one is refused with 409', async () => {
    const c = await newCelular();
    const code = (await codigo(c.id, c.key)).body.codigo as string;
    const wrong = code.startsWith('A') ? `B${code.slice(1)}` : `A${code.slice(1)}`;

    const bad = await op('/admin/sim/scan', { celular_id: c.id, codigo: wrong });
    expectError(bad, 409, 604);
    expect(bad.body.error).toMatch(/pairing code/);
    expect(await celular(c.id)).toMatchObject({ estado: 'desconectado', last_status: 'need_scan' });
    expectError(await op('/admin/sim/scan', { celular_id: c.id, codigo: '' }), 409, 604);

    // Typed as a person would: lower case, without the dash.
    const ok = await op('/admin/sim/scan', { celular_id: c.id, codigo: code.replace('-', '').toLowerCase() });
    expectOk(ok);
    expect(ok.body).toMatchObject({ celular_id: c.id, status: 'connected' });
    await until(async () => (await celular(c.id)).estado === 'activo', { what: 'celular activo' });
    expect(await celular(c.id)).toMatchObject({ estado: 'activo', last_status: 'connected' });
    await until(() => sessionEvents.some((e) => e.celular_id === c.id && e.status === 'connected'), { what: 'session.status connected' });
    // One more round trip so that a duplicate would have arrived.
    await api(s.url, 'GET', `/api/celular_status.php?id=${c.id}`, { key: c.key });
    expect(sessionEvents.filter((e) => e.celular_id === c.id).map((e) => [e.status_anterior, e.status, e.estado])).toEqual([
      [null, 'need_scan', 'desconectado'],
      ['need_scan', 'connected', 'activo'],
    ]);
    // Nothing is waiting any more.
    expectError(await op('/admin/sim/scan', { celular_id: c.id, codigo: code }), 409, 604);
  });

  it("another client's celular: 404; no credential: 401", async () => {
    const c = await newCelular();
    expectError(await codigo(c.id, B.clientKey), 404, 600);
    expectError(await api(s.url, 'POST', `/api/celular_codigo.php?id=${c.id}`), 401, 200);
  });
});

describe('POST /api/celular_vincular_codigo.php', () => {
  it('registers a new number (creado, api_key, gateway_token, codigo), then reuses it (creado false, same code)', async () => {
    const numero = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.clientKey, json: { numero, nombre: 'Ventas' } });
    expectOk(r);
    expect(r.body).toMatchObject({ numero, creado: true, status: 'need_scan', estado: 'desconectado' });
    expect(r.body.codigo).toMatch(CODE);
    expect(r.body.api_key).toMatch(new RegExp(`^WA_${r.body.celular_id}_`));
    expect(r.body.gateway_token).toMatch(/^[0-9a-f]{64}$/);
    expect(r.body.gateway_instancia).toBe(`pasarela-${r.body.celular_id}`);
    expect(r.body).not.toHaveProperty('aviso');
    // The key works, and the line is the client's.
    const own = await api(s.url, 'GET', `/api/celular.php?id=${r.body.celular_id}`, { key: r.body.api_key });
    expectOk(own);
    expect(own.body.celular).toMatchObject({ numero, nombre_interno: 'Ventas', cliente_id: A.clienteId });

    // The hyphenated alias, with the number written differently: the same line, no new key.
    const again = await api(s.url, 'POST', '/api/celular-vincular-codigo.php', {
      key: A.clientKey,
      form: { numero: `+${numero.slice(0, 2)} ${numero.slice(2)}` },
    });
    expectOk(again);
    expect(again.body).toMatchObject({ numero, creado: false, celular_id: r.body.celular_id, status: 'need_scan', codigo: r.body.codigo });
    expect(again.body).not.toHaveProperty('api_key');
    expect(again.body).not.toHaveProperty('gateway_token');

    expectOk(await op('/admin/sim/scan', { celular_id: r.body.celular_id, codigo: r.body.codigo }));
    await until(async () => (await celular(r.body.celular_id)).estado === 'activo', { what: 'celular activo' });
    const linked = await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.clientKey, json: { numero } });
    expect(linked.body).toMatchObject({ creado: false, status: 'connected', codigo: '', estado: 'activo' });
  });

  it("a celular key may not call it (403); another client's number: 409", async () => {
    const r = await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.celularKey, json: { numero: numeroNuevo() } });
    expectError(r, 403, 201);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.celularKey, json: { numero: A.numero } }), 403, 201);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.clientKey, json: { numero: B.numero } }), 409, 602);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero: B.numero } }), 409, 602);
    expectError(await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.clientKey, json: { numero: 'abc' } }), 400, 100);
    // B's line was not touched.
    expect((await celular(B.celularId)).last_status).toBeNull();
  });
});

describe('the gateway is unreachable', () => {
  it('celular_vincular_qr for a new number still answers 200 with creado, api_key and an aviso; celular_qr then 502; the QR works once it is back', async () => {
    sim().setOutage(true);
    const numero = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero } });
    expectOk(r);
    expect(r.body).toMatchObject({ numero, creado: true, status: 'unknown', qr: '', estado: 'desconectado' });
    expect(r.body.api_key).toMatch(/^WA_\d+_/);
    expect(r.body.gateway_token).toMatch(/^[0-9a-f]{64}$/);
    expect(r.body.aviso).toMatch(/registered/);
    expect(r.body.aviso).toMatch(/QR/);
    const id = r.body.celular_id as number;
    expect(r.body.gateway_instancia).toBe(`pasarela-${id}`);
    expect(await celular(id)).toMatchObject({ numero, estado: 'desconectado', gateway_instancia: `pasarela-${id}` });

    // The key it answered works; the QR does not while the gateway is down.
    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: r.body.api_key });
    expectError(qr, 502, 700);
    // A second vincular of the same number is no creation: it fails as the QR does.
    expectError(await api(s.url, 'POST', '/api/celular_vincular_qr.php', { key: A.clientKey, json: { numero } }), 502, 700);
    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${id}`, { key: r.body.api_key });
    expectOk(st);
    expect(st.body.status_actualizado_desde_gateway).toBe(false);

    sim().setOutage(false);
    const back = await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: r.body.api_key });
    expectOk(back);
    expect(back.body).toMatchObject({ celular_id: id, status: 'need_scan', gateway_instancia: `pasarela-${id}` });
    expect(back.body.qr).toMatch(/^2@/);
    expectOk(await op('/admin/sim/scan', { celular_id: id, qr: back.body.qr }));
    await until(async () => (await celular(id)).estado === 'activo', { what: 'celular activo' });
  });

  it('celular_vincular_codigo for a new number: the same, with an empty codigo', async () => {
    sim().setOutage(true);
    const numero = numeroNuevo();
    const r = await api(s.url, 'POST', '/api/celular_vincular_codigo.php', { key: A.clientKey, json: { numero } });
    expectOk(r);
    expect(r.body).toMatchObject({ numero, creado: true, status: 'unknown', codigo: '' });
    expect(r.body.api_key).toMatch(/^WA_\d+_/);
    expect(r.body.aviso).toMatch(/pairing code/);
    expectError(await codigo(r.body.celular_id, r.body.api_key), 502, 700);
    sim().setOutage(false);
    const back = await codigo(r.body.celular_id, r.body.api_key);
    expectOk(back);
    expect(back.body.codigo).toMatch(CODE);
  });
});
