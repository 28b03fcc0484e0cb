import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import type { MessagesReceivedEvent, SessionStatusEvent } from '../../src/core/events/events.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, expectOk, numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';

/**
 * The linking session (QR, scan, logout, status), the simulator controls and
 * the events they publish on the internal bus (docs/design.md §2, §6).
 */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let s: TestServer;
let A: Seeded;
const clock = () => s.clock as ManualClock;
const op = (path: string, json?: unknown) => api(s.url, 'POST', path, { key: s.adminToken, json });
const celular = async (id: number, key: string) => (await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key })).body.celular;

let sessionEvents: SessionStatusEvent[] = [];
let received: MessagesReceivedEvent[] = [];
const unsub: Array<() => void> = [];

beforeAll(async () => {
  s = await startTestServer();
  A = await seedClient(s, { numero: numeroNuevo() });
  unsub.push(s.core.bus.subscribe('session.status', (e) => sessionEvents.push(e)));
  unsub.push(s.core.bus.subscribe('messages.received', (e) => received.push(e)));
});
afterAll(async () => {
  for (const u of unsub) u();
  await s?.stop();
});
afterEach(() => {
  sessionEvents = [];
  received = [];
});

async function newCelular(): Promise<{ id: number; key: string; numero: string }> {
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
  expect(r.status, r.text).toBe(201);
  return { id: r.body.celular_id, key: r.body.api_key, numero: r.body.celular.numero };
}

describe('session flow', () => {
  it('qr -> need_scan, scan -> connected/activo, logout -> logged_out/desconectado, one event per change', async () => {
    const c = await newCelular();
    const mine = () => sessionEvents.filter((e) => e.celular_id === c.id);

    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key });
    expectOk(qr);
    expect(qr.body).toMatchObject({ celular_id: c.id, status: 'need_scan', estado: 'desconectado' });
    const instancia = qr.body.gateway_instancia as string;
    expect(instancia).toMatch(/\S/);
    await until(() => mine().length >= 1);
    expect((await celular(c.id, c.key)).estado).toBe('desconectado');

    // Asking again while need_scan changes nothing and publishes nothing.
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key }));
    const st0 = await api(s.url, 'GET', `/api/celular_status.php?id=${c.id}`, { key: c.key });
    expect(st0.body).toMatchObject({ status: 'need_scan', status_actualizado_desde_gateway: true, estado: 'desconectado' });

    const scan = await op('/admin/sim/scan', { celular_id: c.id });
    expectOk(scan);
    expect(scan.body).toMatchObject({ celular_id: c.id, status: 'connected' });
    await until(() => mine().length >= 2);

    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${c.id}`, { key: c.key });
    expectOk(st);
    expect(st.body).toMatchObject({
      celular_id: c.id,
      gateway_instancia: instancia,
      status: 'connected',
      estado: 'activo',
      status_actualizado_desde_gateway: true,
    });
    expect(st.body.ultimo_check).toMatch(ISO);
    expect(await celular(c.id, c.key)).toMatchObject({ estado: 'activo', last_status: 'connected', gateway_instancia: instancia });

    // QR of a connected line: connected, empty QR, no event.
    const qr2 = await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key });
    expectOk(qr2);
    expect(qr2.body).toMatchObject({ status: 'connected', qr: '', estado: 'activo' });

    const out = await op('/admin/sim/logout', { celular_id: c.id });
    expectOk(out);
    expect(out.body).toMatchObject({ celular_id: c.id, status: 'logged_out' });
    await until(() => mine().length >= 3);
    const st2 = await api(s.url, 'GET', `/api/celular_status.php?id=${c.id}`, { key: c.key });
    expect(st2.body).toMatchObject({ status: 'logged_out', estado: 'desconectado', status_actualizado_desde_gateway: true });
    expect((await celular(c.id, c.key)).estado).toBe('desconectado');

    // A new QR after logout starts a new link attempt.
    const qr3 = await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key });
    expect(qr3.body).toMatchObject({ status: 'need_scan', estado: 'desconectado' });
    expect(qr3.body.qr).not.toBe(qr.body.qr);
    await until(() => mine().length >= 4);
    // One more round trip so that any duplicate would have arrived.
    await api(s.url, 'GET', `/api/celular_status.php?id=${c.id}`, { key: c.key });

    const evs = mine();
    expect(evs.map((e) => [e.status_anterior, e.status, e.estado])).toEqual([
      [null, 'need_scan', 'desconectado'],
      ['need_scan', 'connected', 'activo'],
      ['connected', 'logged_out', 'desconectado'],
      ['logged_out', 'need_scan', 'desconectado'],
    ]);
    for (const e of evs) {
      expect(e).toMatchObject({ celular_id: c.id, cliente_id: A.clienteId, gateway_instancia: instancia });
      expect(e.fecha).toMatch(ISO);
    }
  });

  it('the QR changes after the rotation period (20 s) while need_scan; only the current one scans', async () => {
    const c = await newCelular();
    const q1 = (await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key })).body.qr as string;
    clock().advance(5_000);
    const same = (await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key })).body;
    expect(same).toMatchObject({ status: 'need_scan', qr: q1 });
    clock().advance(16_000);
    const next = (await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key })).body;
    expect(next.status).toBe('need_scan');
    expect(next.qr).toMatch(/^2@/);
    expect(next.qr).not.toBe(q1);
    clock().advance(21_000);
    const third = (await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key })).body.qr;
    expect(third).not.toBe(next.qr);
    expect(third).not.toBe(q1);

    const stale = await op('/admin/sim/scan', { celular_id: c.id, qr: q1 });
    expectError(stale, 409, 604);
    expect((await celular(c.id, c.key)).estado).toBe('desconectado');
    const ok = await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, form: { celular_id: String(c.id), qr: third } });
    expectOk(ok);
    expect(ok.body.status).toBe('connected');
    await until(() => sessionEvents.some((e) => e.celular_id === c.id && e.status === 'connected'));
    expect((await celular(c.id, c.key)).estado).toBe('activo');
    // The rotations themselves published nothing: need_scan then connected.
    expect(sessionEvents.filter((e) => e.celular_id === c.id).map((e) => e.status)).toEqual(['need_scan', 'connected']);
  });

  it('a suspendido celular stays suspendido when connected and when logged out', async () => {
    const c = await newCelular();
    expectOk(await api(s.url, 'POST', `/api/celular_editar.php?id=${c.id}`, { key: A.clientKey, json: { estado: 'suspendido' } }));
    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key });
    expect(qr.body).toMatchObject({ status: 'need_scan', estado: 'suspendido' });
    expectOk(await op('/admin/sim/scan', { celular_id: c.id }));
    await until(() => sessionEvents.some((e) => e.celular_id === c.id && e.status === 'connected'));
    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${c.id}`, { key: c.key });
    expect(st.body).toMatchObject({ status: 'connected', estado: 'suspendido' });
    expect(await celular(c.id, c.key)).toMatchObject({ estado: 'suspendido', last_status: 'connected' });
    expect(sessionEvents.find((e) => e.celular_id === c.id && e.status === 'connected')?.estado).toBe('suspendido');
    expectOk(await op('/admin/sim/logout', { celular_id: c.id }));
    await until(() => sessionEvents.some((e) => e.celular_id === c.id && e.status === 'logged_out'));
    expect((await celular(c.id, c.key)).estado).toBe('suspendido');
  });

  it('scan without a QR requested: 409; on an unknown celular: 404; when already connected: 409', async () => {
    const c = await newCelular();
    const r = await op('/admin/sim/scan', { celular_id: c.id });
    expectError(r, 409, 604);
    expect(r.body.api_texto).toBe('CONFLICTO');
    expectError(await op('/admin/sim/scan', { celular_id: 987654 }), 404, 600);
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key }));
    expectOk(await op('/admin/sim/scan', { celular_id: c.id }));
    expectError(await op('/admin/sim/scan', { celular_id: c.id }), 409, 604);
    expect((await celular(c.id, c.key)).estado).toBe('activo');
  });

  it('logout and receive need a connected session (409)', async () => {
    const c = await newCelular();
    expectError(await op('/admin/sim/logout', { celular_id: c.id }), 409, 604);
    expectError(await op('/admin/sim/receive', { celular_id: c.id, de: '5215511112222', texto: 'hola' }), 409, 604);
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key }));
    expectError(await op('/admin/sim/logout', { celular_id: c.id }), 409, 604);
    expectError(await op('/admin/sim/receive', { celular_id: c.id, de: '5215511112222', texto: 'hola' }), 409, 604);
    expect(received).toHaveLength(0);
  });

  it('validation of the simulator bodies: 400 api_codigo 100', async () => {
    for (const json of [{}, { celular_id: 'x' }, { celular_id: 0 }]) {
      expectError(await op('/admin/sim/scan', json), 400, 100);
      expectError(await op('/admin/sim/logout', json), 400, 100);
    }
    expectError(await op('/admin/sim/receive', { celular_id: A.celularId, texto: 'sin remitente' }), 400, 100);
    expectError(await op('/admin/sim/receive', { celular_id: A.celularId, de: '5215511112222' }), 400, 100);
    expectError(await op('/admin/sim/receive', { celular_id: A.celularId, de: 'nadie', texto: 'x' }), 400, 100);
    expectError(await op('/admin/sim/fail', {}), 400, 100);
    expectError(await op('/admin/sim/fail', { numero: 'abc' }), 400, 100);
  });

  it('simulator controls need the operator token', async () => {
    for (const key of [undefined, A.clientKey, A.celularKey, 'wrong-operator-token-xxxxxxxx']) {
      expectError(await api(s.url, 'POST', '/admin/sim/scan', { key, json: { celular_id: A.celularId } }), 401, 200);
      expectError(await api(s.url, 'POST', '/admin/sim/receive', { key, json: { celular_id: A.celularId, de: '5215511112222', texto: 'x' } }), 401, 200);
      expectError(await api(s.url, 'GET', '/admin/sim/fail', { key }), 401, 200);
    }
  });
});

describe('POST /admin/sim/receive', () => {
  it('fires messages.received with the docs/design.md §6 fields (JSON and form)', async () => {
    const c = await newCelular();
    expectOk(await api(s.url, 'POST', `/api/celular_qr.php?id=${c.id}`, { key: c.key }));
    expectOk(await op('/admin/sim/scan', { celular_id: c.id }));
    const r = await op('/admin/sim/receive', { celular_id: c.id, de: '+52 1 55 3333 4444', texto: 'Hola, ¿tienen envío?' });
    expectOk(r);
    expect(r.body).toMatchObject({ celular_id: c.id, de: '525533334444', gateway_msg_id: expect.stringMatching(/\S/) });
    await until(() => received.length >= 1);
    expect(received[0]).toMatchObject({
      celular_id: c.id,
      cliente_id: A.clienteId,
      de: '525533334444',
      tipo: 'texto',
      texto: 'Hola, ¿tienen envío?',
      media: null,
      gateway_msg_id: r.body.gateway_msg_id,
    });
    expect(received[0]!.fecha).toMatch(ISO);
    expect(new Date(received[0]!.fecha).getTime()).toBe(s.clock.now());

    const f = await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, form: { celular_id: String(c.id), de: '14155552671', texto: 'segundo' } });
    expectOk(f);
    expect(f.body.gateway_msg_id).not.toBe(r.body.gateway_msg_id);
    await until(() => received.length >= 2);
    expect(received[1]).toMatchObject({ celular_id: c.id, de: '14155552671', texto: 'segundo', gateway_msg_id: f.body.gateway_msg_id });
    await api(s.url, 'GET', '/health');
    expect(received).toHaveLength(2);
  });
});

describe('/admin/sim/fail', () => {
  it('sets, lists and clears failure rules (JSON and form)', async () => {
    const a = await op('/admin/sim/fail', { numero: '+52 1 55 7777 8888' });
    expectOk(a);
    expect(a.body).toMatchObject({ numero: '525577778888', activo: true, motivo: expect.stringMatching(/\S/) });
    const c = await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, form: { numero: '34612345678', motivo: 'no existe' } });
    expectOk(c);
    expect(c.body).toMatchObject({ numero: '34612345678', motivo: 'no existe', activo: true });

    let list = await api(s.url, 'GET', '/admin/sim/fail', { key: s.adminToken });
    expectOk(list);
    expect(list.body.reglas).toEqual(
      expect.arrayContaining([
        { numero: '525577778888', motivo: a.body.motivo },
        { numero: '34612345678', motivo: 'no existe' },
      ]),
    );

    const off = await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, form: { numero: '525577778888', activo: 'false' } });
    expectOk(off);
    expect(off.body).toMatchObject({ numero: '525577778888', activo: false });
    list = await api(s.url, 'GET', '/admin/sim/fail', { key: s.adminToken });
    expect(list.body.reglas.map((x: { numero: string }) => x.numero)).not.toContain('525577778888');
    expect(list.body.reglas.map((x: { numero: string }) => x.numero)).toContain('34612345678');
    expectOk(await op('/admin/sim/fail', { numero: '34612345678', activo: false }));
    list = await api(s.url, 'GET', '/admin/sim/fail', { key: s.adminToken });
    expect(list.body.reglas.map((x: { numero: string }) => x.numero)).not.toContain('34612345678');
  });
});

describe('a linked session survives a restart of the server', () => {
  it('connected before the restart, connected and activo after it', async () => {
    const dataDir = tempDir('pasarela-restart-');
    let first: TestServer | undefined;
    let second: TestServer | undefined;
    try {
      first = await startTestServer({ dataDir });
      const seeded = await seedClient(first, { numero: numeroNuevo() });
      const other = await api(first.url, 'POST', '/api/celular_crear.php', { key: seeded.clientKey, json: { numero: numeroNuevo() } });
      const qr = await api(first.url, 'POST', `/api/celular_qr.php?id=${seeded.celularId}`, { key: seeded.celularKey });
      expectOk(qr);
      const pendingQr = await api(first.url, 'POST', `/api/celular_qr.php?id=${other.body.celular_id}`, { key: seeded.clientKey });
      expectOk(await api(first.url, 'POST', '/admin/sim/scan', { key: first.adminToken, json: { celular_id: seeded.celularId } }));
      const before = await api(first.url, 'GET', `/api/celular_status.php?id=${seeded.celularId}`, { key: seeded.celularKey });
      expect(before.body).toMatchObject({ status: 'connected', estado: 'activo' });
      await first.stop();
      first = undefined;

      second = await startTestServer({ dataDir });
      const events: SessionStatusEvent[] = [];
      const off = second.core.bus.subscribe('session.status', (e) => events.push(e));
      const st = await api(second.url, 'GET', `/api/celular_status.php?id=${seeded.celularId}`, { key: seeded.celularKey });
      expectOk(st);
      expect(st.body).toMatchObject({
        celular_id: seeded.celularId,
        status: 'connected',
        estado: 'activo',
        status_actualizado_desde_gateway: true,
        gateway_instancia: qr.body.gateway_instancia,
      });
      // Keys and tokens survive too; the pending link attempt is still pending.
      expectOk(await api(second.url, 'GET', '/api/info.php', { key: seeded.gatewayToken }));
      const pend = await api(second.url, 'GET', `/api/celular_status.php?id=${other.body.celular_id}`, { key: seeded.clientKey });
      expect(pend.body.status).toBe('need_scan');
      const again = await api(second.url, 'POST', `/api/celular_qr.php?id=${other.body.celular_id}`, { key: seeded.clientKey });
      expect(again.body).toMatchObject({ status: 'need_scan', gateway_instancia: pendingQr.body.gateway_instancia });
      // The live session can still receive and log out.
      expectOk(
        await api(second.url, 'POST', '/admin/sim/receive', {
          key: second.adminToken,
          json: { celular_id: seeded.celularId, de: '5215512340000', texto: 'sigo aquí' },
        }),
      );
      expectOk(await api(second.url, 'POST', '/admin/sim/logout', { key: second.adminToken, json: { celular_id: seeded.celularId } }));
      await until(() => events.some((e) => e.status === 'logged_out'));
      // The restart itself published nothing for the connected line.
      expect(events.filter((e) => e.celular_id === seeded.celularId).map((e) => e.status)).toEqual(['logged_out']);
      off();
    } finally {
      await first?.stop();
      await second?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
