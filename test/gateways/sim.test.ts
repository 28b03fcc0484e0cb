import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { GatewayFailure, type GatewayEvent } from '../../src/core/ports/gateway.js';
import { SimConflict, SimGateway } from '../../src/gateways/sim.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { until } from '../helpers/poll.js';

describe('sim gateway', () => {
  let store: SqliteStore;
  let clock: ManualClock;
  let sim: SimGateway;
  let events: GatewayEvent[];
  beforeEach(() => {
    store = openSqliteStore(':memory:');
    clock = new ManualClock(0);
    sim = new SimGateway(store, clock, { qrRotateMs: 1000, deliveryMs: 5, readMs: 10 });
    events = [];
    sim.onEvent((e) => {
      events.push(e);
    });
  });
  afterEach(async () => {
    await sim.close();
    await store.close();
  });

  it('issues a QR that rotates, and connects only when scanned', async () => {
    expect(await sim.status('i1')).toBe('unknown');
    const a = await sim.connect('i1', '525512345678');
    expect(a.status).toBe('need_scan');
    expect(a.qr).toMatch(/^2@[^,]+,[^,]+,[^,]+,1$/);
    expect((await sim.connect('i1', '525512345678')).qr).toBe(a.qr);
    clock.advance(1000);
    const b = await sim.connect('i1', '525512345678');
    expect(b.qr).not.toBe(a.qr);
    await expect(sim.scan('i1', a.qr)).rejects.toBeInstanceOf(SimConflict);
    await sim.scan('i1', b.qr);
    expect(await sim.status('i1')).toBe('connected');
    expect(await sim.connect('i1', '525512345678')).toEqual({ status: 'connected', qr: '' });
    expect(events.map((e) => e.type === 'session' && e.status)).toEqual(['need_scan', 'connected']);
  });

  it('refuses a scan with no QR showing and a receive while offline', async () => {
    await expect(sim.scan('nope')).rejects.toBeInstanceOf(SimConflict);
    await expect(sim.receive('nope', '14155552671', 'hola')).rejects.toBeInstanceOf(SimConflict);
  });

  it('sends only while connected, fails numbers on demand, and sends receipts', async () => {
    await expect(sim.send('i1', { msgId: 'm0', tipo: 'texto', destinatario: '14155552671', texto: 'x' })).rejects.toMatchObject({ permanent: false });
    await sim.connect('i1', '525512345678');
    await sim.scan('i1');
    const { gatewayMsgId } = await sim.send('i1', { msgId: 'm1', tipo: 'texto', destinatario: '14155552671', texto: 'x' });
    expect(gatewayMsgId).toMatch(/^3EB0[0-9A-F]{20}$/);
    await sim.failNumber('14155552671', 'not on the network');
    const err = await sim.send('i1', { msgId: 'm2', tipo: 'texto', destinatario: '14155552671', texto: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayFailure);
    expect(err).toMatchObject({ permanent: true, message: 'not on the network' });
    expect(await sim.clearFail('14155552671')).toBe(true);
    // The receipts come on the simulator's own timers (5 and 10 ms).
    await until(() => events.filter((e) => e.type === 'receipt').length >= 2, { what: 'two receipts' });
    const receipts = events.filter((e) => e.type === 'receipt');
    expect(receipts.map((e) => e.type === 'receipt' && [e.gatewayMsgId, e.estado])).toEqual([
      [gatewayMsgId, 'entregado'],
      [gatewayMsgId, 'leido'],
    ]);
  });

  it('keeps sessions across a restart (state is in the store)', async () => {
    await sim.connect('i1', '525512345678');
    await sim.scan('i1');
    const again = new SimGateway(store, clock, { qrRotateMs: 1000, deliveryMs: 5, readMs: 10 });
    expect(await again.status('i1')).toBe('connected');
    await again.phoneLogout('i1');
    expect(await sim.status('i1')).toBe('logged_out');
    const fresh = await sim.connect('i1', '525512345678');
    expect(fresh.status).toBe('need_scan');
    await again.close();
  });

  it('owes its receipts across a restart: the ones due go out when the network starts again', async () => {
    const slow = new SimGateway(store, clock, { qrRotateMs: 1000, deliveryMs: 60_000, readMs: 120_000 });
    await slow.connect('i2', '525512345678');
    await slow.scan('i2');
    const { gatewayMsgId } = await slow.send('i2', { msgId: 'm-owed', tipo: 'texto', destinatario: '14155552671', texto: 'x' });
    await slow.close(); // the process stops before any receipt is due
    clock.advance(90_000); // the delivery receipt is overdue when it starts again; the read one is not
    const again = new SimGateway(store, clock, { qrRotateMs: 1000, deliveryMs: 60_000, readMs: 120_000 });
    const seen: string[] = [];
    again.onEvent((e) => {
      if (e.type === 'receipt' && e.gatewayMsgId === gatewayMsgId) seen.push(e.estado);
    });
    await again.start();
    await until(() => seen.length > 0, { what: 'the overdue receipt', timeoutMs: 3000, stepMs: 5 });
    expect(seen).toEqual(['entregado']);
    // Forgotten once handled (its removal commits right after the receipt is recorded).
    const owed = async () => (await store.kvList<{ estado: string }>('sim.receipts')).map((o) => o.value.estado);
    await until(async () => (await owed()).length <= 1, { what: 'the handled receipt forgotten', timeoutMs: 3000, stepMs: 5 });
    expect(await owed()).toEqual(['leido']);
    await again.close();
  });
});
