import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/clock.js';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError } from '../helpers/expect.js';

/** Repeated failed authentication from one address is slowed down with 429 (DESIGN §3, §4). */

function expectThrottled(r: ApiResponse, maxSeconds: number): number {
  expectError(r, 429, 202);
  expect(r.body.api_texto).toBe('DEMASIADOS_INTENTOS');
  expect(Number.isInteger(r.body.retry_after)).toBe(true);
  expect(r.body.retry_after).toBeGreaterThanOrEqual(1);
  expect(r.body.retry_after).toBeLessThanOrEqual(maxSeconds);
  expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
  return r.body.retry_after as number;
}

const WINDOW_MS = 60_000;
let s: TestServer;
let A: Seeded;
const clock = () => s.clock as ManualClock;

beforeAll(async () => {
  s = await startTestServer({ authMaxFailures: 3, authWindowMs: WINDOW_MS });
  A = await seedClient(s, { numero: `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}` });
});
afterAll(async () => {
  await s?.stop();
});

describe('auth throttling', () => {
  it('successful requests never count', async () => {
    for (let i = 0; i < 8; i++) {
      const r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
      expect(r.status).toBe(200);
    }
    expect((await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken })).status).toBe(200);
  });

  it('after 3 failures the 4th request gets 429 even with a good key, on /api and /admin alike', async () => {
    expectError(await api(s.url, 'GET', '/api/info.php', { key: 'garbage-garbage-garbage' }), 401, 200);
    expectError(await api(s.url, 'GET', `/api/saldo.php?key=WA_${A.celularId}_${'x'.repeat(43)}`), 401, 200);
    expectError(await api(s.url, 'GET', '/admin/clientes', { key: `${s.adminToken}-wrong` }), 401, 200);

    const good = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    const retry = expectThrottled(good, WINDOW_MS / 1000);
    expect(retry).toBe(60);
    expect(good.body).not.toHaveProperty('cliente');
    expectThrottled(await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken }), 60);
    expectThrottled(await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { form: { key: A.celularKey } }), 60);
    expectThrottled(await api(s.url, 'GET', '/api/celulares.php', { key: A.gatewayToken }), 60);
    // A bad key is throttled too, not answered 401.
    expectThrottled(await api(s.url, 'GET', '/api/info.php', { key: 'garbage-garbage-garbage' }), 60);
    // Endpoints without credentials are not affected.
    const h = await api(s.url, 'GET', '/health');
    expect(h.status).toBe(200);
    expect(h.body.ok).toBe(true);
  });

  it('retry_after counts down with the clock', async () => {
    clock().advance(30_000);
    const r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    const retry = expectThrottled(r, 30);
    expect(retry).toBeGreaterThanOrEqual(29);
    clock().advance(29_500);
    const last = expectThrottled(await api(s.url, 'GET', '/api/info.php', { key: A.clientKey }), 1);
    expect(last).toBe(1);
  });

  it('after the window the good key works again, and the count starts over', async () => {
    clock().advance(600);
    const r = await api(s.url, 'GET', '/api/info.php', { key: A.clientKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ ok: true, cliente: { id: A.clienteId } });
    expect((await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken })).status).toBe(200);

    expectError(await api(s.url, 'GET', '/api/info.php', { key: `WAC_${A.clienteId}_${'y'.repeat(43)}` }), 401, 200);
    expectError(await api(s.url, 'POST', '/api/celular_crear.php', { json: { key: 'not-a-real-key-000', numero: '525512345678' } }), 401, 200);
    expect((await api(s.url, 'GET', '/api/info.php', { key: A.clientKey })).status).toBe(200);
    expectError(await api(s.url, 'GET', '/api/info.php', { key: 'not-a-real-key-001' }), 401, 200);
    expectThrottled(await api(s.url, 'GET', '/api/info.php', { key: A.clientKey }), 60);
    clock().advance(WINDOW_MS + 1);
    expect((await api(s.url, 'GET', '/api/info.php', { key: A.clientKey })).status).toBe(200);
  });
});
