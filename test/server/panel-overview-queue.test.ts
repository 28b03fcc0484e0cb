import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, send, TEXT, uniqueText, type Line } from './send-helpers.js';

/**
 * The overview's queue by line: each line with queued messages, its kept
 * pending count and its oldest message's wait, most pending first. The
 * lines are held by their hours (the clock is outside them), so nothing
 * leaves the queue while the page is read.
 */

const at = (h: number, m = 0) => Date.UTC(2026, 3, 1, h, m);
let s: TestServer;
let A: Line;
let B: Line;
let cookie: string;

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', clock: new ManualClock(at(12)), queue: { gapMinMs: 0, gapMaxMs: 0 } }, { inject: true });
  A = await linkedLine(s);
  B = await linkedLine(s);
  for (const L of [A, B]) expect((await editCelular(s, L, { hora_inicio_permitido: '13:00', hora_fin_permitido: '14:00' })).status).toBe(200);
  const login = await s.app.inject({
    method: 'POST',
    url: '/panel/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ credencial: s.adminToken }).toString(),
  });
  expect(login.statusCode).toBe(303);
  cookie = `pasarela_panel=${login.cookies.find((c) => c.name === 'pasarela_panel')!.value}`;
});
afterAll(async () => {
  await s?.stop();
});

const figures = async () => {
  const r = await s.app.inject({ method: 'GET', url: '/panel/resumen', headers: { cookie } });
  expect(r.statusCode).toBe(200);
  return r.payload.replace(/\s+/g, ' ');
};

it('says no line has a queue, then lists each line with its pending count and oldest wait, most pending first', async () => {
  expect(await figures()).toContain('No line has a queued message.');
  for (let i = 0; i < 3; i += 1) expect((await send(s, A, TEXT, { destinatario: '525598765432', mensaje: uniqueText() })).status).toBe(200);
  (s.clock as ManualClock).set(at(12, 5));
  expect((await send(s, B, TEXT, { destinatario: '525598765432', mensaje: uniqueText() })).status).toBe(200);
  (s.clock as ManualClock).set(at(12, 10));
  await s.stepQueue();
  // The store's kept counters: what the page must show.
  expect(await s.core.store.queueSizes([A.celularId, B.celularId])).toEqual([
    { celular_id: A.celularId, pendientes: 3 },
    { celular_id: B.celularId, pendientes: 1 },
  ]);
  const page = await figures();
  const row = (L: Line) =>
    new RegExp(
      `cola\\?celular_id=${L.celularId}">line ${L.celularId}</a>.*?<td class="num" data-label="Pending">(\\d+)</td> ?<td class="nowrap" data-label="Oldest waits">([^<]+)</td>`,
    );
  expect(row(A).exec(page)?.slice(1)).toEqual(['3', '10 min']);
  expect(row(B).exec(page)?.slice(1)).toEqual(['1', '5 min']);
  // Most pending first.
  expect(page.indexOf(`line ${A.celularId}<`)).toBeLessThan(page.indexOf(`line ${B.celularId}<`));
});
