import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError } from '../helpers/expect.js';

/**
 * Failed authentication is slowed down with 429 (docs/decisions.md
 * D-15): per (address, credential) after 3
 * failures here, and per address after 10 x 3 for credentials not yet proven
 * from it. All requests of this file come from 127.0.0.1.
 */

function expectThrottled(r: ApiResponse, maxSeconds: number): number {
  expectError(r, 429, 202);
  expect(r.body.api_texto).toBe('DEMASIADOS_INTENTOS');
  expect(Number.isInteger(r.body.retry_after)).toBe(true);
  expect(r.body.retry_after).toBeGreaterThanOrEqual(1);
  expect(r.body.retry_after).toBeLessThanOrEqual(maxSeconds);
  expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
  return r.body.retry_after as number;
}

const MAX = 3;
const CEILING = 10 * MAX;
const WINDOW_MS = 60_000;
let s: TestServer;
let A: Seeded;
/** Seeded like A; its celular key is first used in the stale-key test, its gateway token in the spray test. */
let C: Seeded;
const clock = () => s.clock as ManualClock;
const info = (key: string) => api(s.url, 'GET', '/api/info.php', { key });
const admin = (key: string) => api(s.url, 'GET', '/admin/clientes', { key });
/** A client key with the right id and a wrong secret: the cron job whose key was rotated. */
const stale = (tag: string) => `WAC_${A.clienteId}_${tag.repeat(43).slice(0, 43)}`;
/** Every test starts with no failure window open. */
const freshWindow = () => clock().advance(WINDOW_MS + 1);

beforeAll(async () => {
  s = await startTestServer({ authMaxFailures: MAX, authWindowMs: WINDOW_MS });
  A = await seedClient(s, { numero: `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}` });
  C = await seedClient(s, { numero: `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}` });
});
afterAll(async () => {
  await s?.stop();
});

describe('auth throttling', () => {
  it('successful requests never count', async () => {
    for (let i = 0; i < 8; i++) expect((await info(A.clientKey)).status).toBe(200);
    expect((await admin(s.adminToken)).status).toBe(200);
  });

  it('a stale key is throttled after 3 failures; valid keys and the operator token from the same address keep working', async () => {
    freshWindow();
    for (let i = 0; i < MAX; i++) expectError(await info(stale('y')), 401, 200);
    expect(expectThrottled(await info(stale('y')), 60)).toBe(60);
    // The same credential anywhere in the request is the same credential.
    expectThrottled(await api(s.url, 'GET', `/api/saldo.php?key=${stale('y')}`), 60);
    // Only that pair is locked: another wrong secret on the same id is still checked.
    expectError(await info(stale('z')), 401, 200);
    const good = await info(A.clientKey);
    expect(good.status, good.text).toBe(200);
    expect(good.body.cliente.id).toBe(A.clienteId);
    expect((await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { form: { key: A.celularKey } })).status).toBe(200);
    expect((await api(s.url, 'GET', '/api/celulares.php', { key: A.gatewayToken })).status).toBe(200);
    expect((await admin(s.adminToken)).status).toBe(200);
    // Refused-unchecked requests do not count toward the address: far past the
    // address ceiling of stale attempts, a key never used from here still works.
    for (let i = 0; i < CEILING + 5; i++) expectThrottled(await info(stale('y')), 60);
    expect((await info(C.celularKey)).status).toBe(200);
    // Endpoints without credentials are not affected.
    const h = await api(s.url, 'GET', '/health');
    expect(h.status).toBe(200);
  });

  it('retry_after counts down with the clock', async () => {
    clock().advance(30_000);
    const retry = expectThrottled(await info(stale('y')), 30);
    expect(retry).toBeGreaterThanOrEqual(29);
    clock().advance(29_500);
    expect(expectThrottled(await info(stale('y')), 1)).toBe(1);
  });

  it('after the window the stale key is checked again (401), and its count starts over', async () => {
    clock().advance(600);
    expectError(await info(stale('y')), 401, 200);
    expectError(await info(stale('y')), 401, 200);
    expectError(await info(stale('y')), 401, 200);
    expectThrottled(await info(stale('y')), 60);
    expect((await info(A.clientKey)).status).toBe(200);
  });

  it('operator failures count on their own: a wrong operator token is locked, the right one and client keys are not', async () => {
    freshWindow();
    const wrong = `${s.adminToken}-wrong`;
    for (let i = 0; i < MAX; i++) expectError(await admin(wrong), 401, 200);
    expectThrottled(await admin(wrong), 60);
    expect((await admin(s.adminToken)).status).toBe(200);
    expect((await info(A.clientKey)).status).toBe(200);
    // A client credential presented to /admin counts as an operator failure, on its own pair.
    for (let i = 0; i < MAX; i++) expectError(await admin(A.clientKey), 401, 200);
    expectThrottled(await admin(A.clientKey), 60);
    expect((await info(A.clientKey)).status).toBe(200);
  });

  it('a spray of distinct invalid keys hits the address ceiling; proven keys and the operator token still work', async () => {
    freshWindow();
    for (let i = 0; i < CEILING; i++) expectError(await info(`not-a-real-key-${String(i).padStart(4, '0')}`), 401, 200);
    const next = expectThrottled(await info('not-a-real-key-9999'), 60);
    expect(next).toBe(60);
    // Unproven credentials are refused without being checked, valid or not: a
    // 200 for a right guess among 429s would tell the guesser it guessed right.
    expectThrottled(await info(C.gatewayToken), 60);
    expectThrottled(await api(s.url, 'GET', '/api/saldo.php', { key: `WA_${A.celularId}_${'q'.repeat(43)}` }), 60);
    // Credentials that authenticated from this address keep working.
    expect((await info(A.clientKey)).status).toBe(200);
    expect((await api(s.url, 'GET', '/api/celulares.php', { key: A.gatewayToken })).status).toBe(200);
    // The operator's failures are counted apart: the client ceiling does not touch it.
    expect((await admin(s.adminToken)).status).toBe(200);
    // After the window the address is checked again.
    freshWindow();
    expect((await info(C.gatewayToken)).status).toBe(200);
    expectError(await info('not-a-real-key-9999'), 401, 200);
  });

  it('an operator-token spray locks unproven operator tokens only, and never client keys', async () => {
    freshWindow();
    for (let i = 0; i < CEILING; i++) expectError(await admin(`guess-${i}-${'0'.repeat(40)}`), 401, 200);
    expectThrottled(await admin(`guess-x-${'0'.repeat(40)}`), 60);
    expect((await admin(s.adminToken)).status).toBe(200);
    expect((await info(C.clientKey)).status).toBe(200);
  });
});
