import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Estadisticas } from '../../src/core/charts/charts.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * GET /admin/estadisticas and the chart pages in process: the bars equal
 * the messages the store holds (by creation minute and estado now), the
 * samples show the node's webhook attempts and queue, and every bad query
 * is the API's clear refusal (beside its field on the pages).
 */

let s: TestServer;
let a: Seeded;
let b: Seeded;
let cookie: string;

const get = (url: string, headers: Record<string, string> = { cookie }) => s.app.inject({ method: 'GET', url, headers });
const stats = async (q = '') => {
  const r = await api(s.url, 'GET', `/admin/estadisticas${q}`, { key: s.adminToken });
  expect(r.status, r.text).toBe(200);
  return r.body as Estadisticas & { api_codigo: number };
};

async function send(who: Seeded, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
      key: who.celularKey,
      json: { destinatario: '5215512345678', mensaje: `hola ${i}` },
    });
    expect([200, 201], r.text).toContain(r.status);
    ids.push(r.body.msg_id);
  }
  return ids;
}

/** The store's own answer: messages of `clienteId` (all when undefined) created in each minute, by estado. */
async function fromStore(clientes: number[], celularId?: number): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>();
  for (const cliente_id of clientes) {
    const { rows } = await s.core.store.listMensajes({ cliente_id, celular_id: celularId, page: 1, por_pagina: 500 });
    for (const m of rows) {
      const at = new Date(Math.floor(m.created_at / 60_000) * 60_000).toISOString();
      const bar = out.get(at) ?? {};
      bar[m.estado] = (bar[m.estado] ?? 0) + 1;
      out.set(at, bar);
    }
  }
  return out;
}

function fromChart(e: Estadisticas): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  for (const bar of e.envios) {
    if (bar.total === 0) continue;
    const { desde, total: _t, ...estados } = bar;
    out.set(desde, Object.fromEntries(Object.entries(estados).filter(([, n]) => n > 0)));
  }
  return out;
}

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  a = await seedClient(s, { saldo: 100 });
  b = await seedClient(s, { saldo: 100 });
  const now = s.clock.now();
  for (const x of [a, b]) await s.core.store.updateCelular(x.celularId, { estado: 'activo', last_status: 'connected', vinculado: 1 }, now);
  const login = await s.app.inject({
    method: 'POST',
    url: '/panel/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ credencial: s.adminToken }).toString(),
  });
  cookie = `pasarela_panel=${login.cookies.find((c) => c.name === 'pasarela_panel')!.value}`;
  // Sends over three minutes, then their lives: sent, delivered, failed; the lines suspended so the worker leaves the rest be.
  const ids = await send(a, 3);
  (s.clock as unknown as { advance(ms: number): void }).advance(61_000);
  ids.push(...(await send(a, 2)), ...(await send(b, 4)));
  (s.clock as unknown as { advance(ms: number): void }).advance(61_000);
  for (const x of [a, b]) await s.core.store.updateCelular(x.celularId, { estado: 'suspendido' }, s.clock.now());
  const t = s.clock.now();
  await s.core.store.markSent(ids[0]!, 'G-0', t);
  await s.core.store.markSent(ids[3]!, 'G-3', t);
  await s.core.store.receipt(a.celularId, 'G-3', 'entregado', t);
  await s.core.store.failMensaje(ids[6]!, 'refused', 'rechazado', t);
});
afterAll(async () => {
  await s?.stop();
});

describe('GET /admin/estadisticas', () => {
  it("answers everyone's, a client's and a line's bars as the store counts its messages", async () => {
    const all = await stats();
    expect(all).toMatchObject({ api_codigo: 0, rango: '1h', paso_s: 60, cliente_id: null, celular_id: null });
    expect(all.envios).toHaveLength(60);
    expect(fromChart(all)).toEqual(await fromStore([a.clienteId, b.clienteId]));
    expect(all.envios.reduce((x, y) => x + y.total, 0)).toBe(9);
    const one = await stats(`?cliente_id=${a.clienteId}`);
    expect(one).toMatchObject({ cliente_id: a.clienteId, muestras: null });
    expect(fromChart(one)).toEqual(await fromStore([a.clienteId]));
    const line = await stats(`?celular_id=${b.celularId}&rango=24h`);
    expect(line).toMatchObject({ cliente_id: b.clienteId, celular_id: b.celularId, paso_s: 900 });
    expect(line.envios).toHaveLength(96);
    expect(line.envios.reduce((x, y) => x + y.error, 0)).toBe(1);
    const week = await stats(`?rango=7d&cliente_id=${b.clienteId}`);
    expect(week.envios).toHaveLength(168);
    expect(week.envios.at(-1)!.total + week.envios.at(-2)!.total).toBe(4);
  });

  it("shows the node's webhook attempts and the queue once it has sampled them", async () => {
    const ev = { cliente_id: a.clienteId, evento: 'message.status', status: 200, error: null, intentos: 1, edad_ms: 1 };
    s.core.bus.publish('webhook.attempt', { ...ev, estado: 'entregado', duracion_ms: 30 });
    s.core.bus.publish('webhook.attempt', { ...ev, estado: 'entregado', duracion_ms: 30 });
    s.core.bus.publish('webhook.attempt', { ...ev, estado: 'pendiente', status: 503, duracion_ms: 3000 });
    await s.charts.run();
    const last = (await stats()).muestras!.at(-1)!;
    // Six messages are still pendiente and queued: the queue's reading.
    expect((await s.core.store.queueDepth()).pending).toBe(6);
    expect(last).toMatchObject({ cola: 6, entregas_ok: 2, entregas_fallidas: 1, latencia_p50_ms: 50, latencia_p95_ms: 5000 });
    expect(last.mas_antiguo_s).toBeGreaterThanOrEqual(122);
  });

  it('refuses a bad range or id with the API error, an unknown client or line with 404, and anyone but the operator', async () => {
    const bad = await api(s.url, 'GET', '/admin/estadisticas?rango=2h', { key: s.adminToken });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ api_codigo: 100 });
    expect(bad.text).toContain('rango');
    expect((await api(s.url, 'GET', '/admin/estadisticas?cliente_id=abc', { key: s.adminToken })).status).toBe(400);
    expect((await api(s.url, 'GET', '/admin/estadisticas?celular_id=0', { key: s.adminToken })).status).toBe(400);
    const none = await api(s.url, 'GET', '/admin/estadisticas?cliente_id=999999', { key: s.adminToken });
    expect(none.status).toBe(404);
    expect(none.body).toMatchObject({ api_codigo: 601 });
    const other = await api(s.url, 'GET', `/admin/estadisticas?cliente_id=${a.clienteId}&celular_id=${b.celularId}`, { key: s.adminToken });
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ api_codigo: 600 });
    expect((await api(s.url, 'GET', '/admin/estadisticas')).status).toBe(401);
    expect([401, 403]).toContain((await api(s.url, 'GET', '/admin/estadisticas', { key: a.clientKey })).status);
  });
});

describe('the chart pages', () => {
  it("draws the operator's charts as SVG with the numbers in tables", async () => {
    const r = await get('/panel/graficas');
    expect(r.statusCode).toBe(200);
    expect(r.payload).toMatch(/<svg viewBox="0 0 640 220" role="img" aria-labelledby="c-envios-t c-envios-d"/);
    expect(r.payload).toContain('<div id="t-envios">');
    expect(r.payload).toContain('<div id="t-muestras">');
    expect(r.payload).not.toMatch(/style=/);
    const empty = await get(`/panel/graficas?rango=7d&cliente_id=${a.clienteId}&celular_id=`);
    expect(empty.statusCode).toBe(200);
    expect(empty.payload).not.toContain('t-muestras');
  });

  it('puts a refusal beside its field, with the status the API gives', async () => {
    const bad = await get('/panel/graficas?rango=2h');
    expect(bad.statusCode).toBe(400);
    expect(bad.payload).toMatch(/<p id="f-rango-error" class="field-error" role="alert">/);
    const none = await get('/panel/graficas?celular_id=999999');
    expect(none.statusCode).toBe(404);
    expect(none.payload).toMatch(/<p id="f-celular_id-error" class="field-error" role="alert">celular_id 999999: no such line/);
  });

  it("shows a client its own lines only, and nothing of another's", async () => {
    const login = await s.app.inject({
      method: 'POST',
      url: '/panel/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ credencial: a.clientKey }).toString(),
    });
    const mine = `pasarela_panel=${login.cookies.find((c) => c.name === 'pasarela_panel')!.value}`;
    const own = await get(`/panel/c/${a.clienteId}/graficas?celular_id=${a.celularId}`, { cookie: mine });
    expect(own.statusCode).toBe(200);
    expect(own.payload).toContain(`Line ${a.celularId}`);
    expect((await get(`/panel/c/${a.clienteId}/graficas?celular_id=${b.celularId}`, { cookie: mine })).statusCode).toBe(404);
    expect((await get(`/panel/c/${b.clienteId}/graficas`, { cookie: mine })).statusCode).toBe(404);
    expect((await get('/panel/graficas', { cookie: mine })).statusCode).toBe(403);
  });
});
