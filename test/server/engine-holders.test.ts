import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../src/core/context.js';
import { engineHolderOf, engineHolders, HolderReports } from '../../src/core/engine/engine-holders.js';
import type { SessionHolderEvent } from '../../src/core/events/events.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * Which node holds each engine line, as people see it (D-137), on the
 * SQLite store of a simulator server: its engine holds kept in memory are
 * driven directly, and the core is shown as the engine's (`gateway.name`
 * baileys) where the rule asks. A hold by a node the store does not know,
 * a free line and a line with no row answer as such; a change of holder is
 * published at once and audited in order; a line with no celular row is
 * published but not audited; a failing audit is reported and the next
 * still written.
 */
let s: TestServer;
let A: Seeded;
let engine: Core;
let me: { id: string; label: string };

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  A = await seedClient(s);
  engine = { ...s.core, gateway: { ...s.core.gateway, name: 'baileys' } };
  const [node] = await s.core.store.nodes(s.core.clock.now());
  me = { id: node!.id, label: node!.label };
});
afterAll(async () => {
  await s?.stop();
});

describe("a line's engine holder", () => {
  it('with any other gateway there is none to show: absent from the API, undefined from core', async () => {
    expect(await engineHolders(s.core)).toBeUndefined();
    expect(await engineHolderOf(s.core, 'pasarela-1')).toBeUndefined();
    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey });
    expect(st.status, st.text).toBe(200);
    expect(st.body).not.toHaveProperty('motor_nodo');
    const op = await api(s.url, 'GET', `/admin/clientes/${A.clienteId}`, { key: s.adminToken });
    expect(op.body.celulares[0]).toHaveProperty('servidor');
    expect(op.body.celulares[0]).not.toHaveProperty('motor_nodo');
    // Nor in the panel: the line page, the lines page, the overview.
    const login = await api(s.url, 'POST', '/panel/login', { form: { credencial: s.adminToken } });
    expect(login.status, login.text).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const page = async (path: string) => {
      const r = await api(s.url, 'GET', path, { headers: { cookie } });
      expect(r.status, r.text).toBe(200);
      return r.text;
    };
    expect(await page(`/panel/c/${A.clienteId}/celulares/${A.celularId}`)).not.toContain('Engine node');
    expect(await page(`/panel/c/${A.clienteId}/celulares`)).not.toContain('engine node');
    expect(await page('/panel/')).not.toContain('Engine sessions');
  });

  it('names the holder by its label, a node the store no longer knows by its id alone, and nobody for a free line or one without a row', async () => {
    const store = s.core.store;
    const now = s.core.clock.now();
    await store.holdTake(me.id, ['h-mine', 'h-free'], now);
    await store.holdTake('node-left', ['h-left'], now);
    await store.holdGive(me.id, ['h-free']);

    expect(await engineHolderOf(engine, 'h-mine')).toEqual({ id: me.id, etiqueta: me.label, presente: true });
    expect(me.label).toMatch(/^pasarela serve pid \d+ on /);
    expect(await engineHolderOf(engine, 'h-left')).toEqual({ id: 'node-left', etiqueta: null, presente: true });
    expect(await engineHolderOf(engine, 'h-free')).toBeNull();
    expect(await engineHolderOf(engine, 'h-none')).toBeNull();
    expect(await engineHolderOf(engine, null)).toBeNull();
    expect(await engineHolderOf(engine, '')).toBeNull();

    const all = (await engineHolders(engine))!;
    expect(all.of('h-mine')).toEqual({ id: me.id, etiqueta: me.label, presente: true });
    expect(all.of('h-free')).toBeNull();
    expect(all.of(null)).toBeNull();
    await store.holdTake(me.id, ['h-mine-2'], now);
    const summary = (await engineHolders(engine))!.summary();
    // Most lines first; the free line is counted apart.
    expect(summary.nodos).toEqual([
      { id: me.id, etiqueta: me.label, presente: true, lineas: 2 },
      { id: 'node-left', etiqueta: null, presente: true, lineas: 1 },
    ]);
    expect(summary.libres).toBe(1);
    for (const i of ['h-mine', 'h-free', 'h-left', 'h-mine-2']) await store.holdForget(i);
  });
});

describe('a change of holder', () => {
  const audited = async () =>
    (await api(s.url, 'GET', `/admin/auditoria?accion=celular.motor_nodo&cliente_id=${A.clienteId}`, { key: s.adminToken })).body.registros;

  it('is published at once, then audited in order under the line and its client, by the system, naming the nodes', async () => {
    const seen: SessionHolderEvent[] = [];
    const off = s.core.bus.subscribe('session.holder', (e) => void seen.push(e));
    const errors: unknown[] = [];
    const reports = new HolderReports(s.core, (err) => errors.push(err));
    reports.report({ instancia: 'pasarela-x', celularId: A.celularId, from: null, to: me.id, reason: 'free' });
    // Published before anything is written: the metrics and the log do not wait on the store.
    expect(seen).toEqual([
      { gateway_instancia: 'pasarela-x', celular_id: A.celularId, nodo_anterior: null, nodo: me.id, motivo: 'free', fecha: expect.any(String) },
    ]);
    reports.report({ instancia: 'pasarela-x', celularId: A.celularId, from: me.id, to: null, reason: 'balance' });
    reports.report({ instancia: 'pasarela-x', celularId: A.celularId, from: 'node-left', to: me.id, reason: 'gone' });
    await reports.idle();
    off();
    expect(errors).toEqual([]);
    expect(seen.map((e) => e.motivo)).toEqual(['free', 'balance', 'gone']);
    const rows = await audited();
    // Newest first.
    expect(rows.map((r: { detalle: { motivo: string } }) => r.detalle.motivo)).toEqual(['gone', 'balance', 'free']);
    expect(rows[2]).toMatchObject({
      actor: 'sistema',
      accion: 'celular.motor_nodo',
      objeto_tipo: 'celular',
      objeto_id: A.celularId,
      cliente_id: A.clienteId,
      detalle: { antes: { nodo: null, nodo_id: null }, despues: { nodo: me.label, nodo_id: me.id }, motivo: 'free' },
    });
    // A node the store no longer knows is named by its id.
    expect(rows[0].detalle.antes).toEqual({ nodo: 'node-left', nodo_id: 'node-left' });
  });

  it('of a line found by its instance when the keeper did not know its celular yet; one with no celular row is published, not audited', async () => {
    const line = await seedClient(s);
    await s.core.store.updateCelular(line.celularId, { gateway_instancia: `pasarela-${line.celularId}` }, s.core.clock.now());
    const seen: SessionHolderEvent[] = [];
    const off = s.core.bus.subscribe('session.holder', (e) => void seen.push(e));
    const reports = new HolderReports(s.core, (err) => {
      throw err;
    });
    reports.report({ instancia: `pasarela-${line.celularId}`, celularId: null, from: null, to: me.id, reason: 'free' });
    reports.report({ instancia: 'pasarela-999999', celularId: null, from: me.id, to: null, reason: 'stop' });
    await reports.idle();
    off();
    expect(seen.map((e) => e.gateway_instancia)).toEqual([`pasarela-${line.celularId}`, 'pasarela-999999']);
    const rows = (await api(s.url, 'GET', `/admin/auditoria?accion=celular.motor_nodo&cliente_id=${line.clienteId}`, { key: s.adminToken })).body.registros;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ objeto_id: line.celularId, detalle: { motivo: 'free' } });
    const all = (await api(s.url, 'GET', '/admin/auditoria?accion=celular.motor_nodo&limit=100', { key: s.adminToken })).body.registros;
    expect(all.some((r: { detalle: { motivo: string } }) => r.detalle.motivo === 'stop')).toBe(false);
  });

  it('whose audit fails is reported, and the next change is still written', async () => {
    const errors: unknown[] = [];
    let fail = true;
    const store = new Proxy(s.core.store, {
      get: (t, k, r) =>
        k === 'audit' && fail
          ? () => {
              fail = false;
              return Promise.reject(new Error('disk full'));
            }
          : Reflect.get(t, k, r),
    });
    const before = (await audited()).length;
    const reports = new HolderReports({ ...s.core, store }, (err) => errors.push(err));
    reports.report({ instancia: 'pasarela-x', celularId: A.celularId, from: me.id, to: null, reason: 'stop' });
    reports.report({ instancia: 'pasarela-x', celularId: A.celularId, from: null, to: me.id, reason: 'free' });
    await reports.idle();
    expect(errors.map((e) => (e as Error).message)).toEqual(['disk full']);
    const rows = await audited();
    expect(rows).toHaveLength(before + 1);
    expect(rows[0].detalle.motivo).toBe('free');
  });
});
