import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/poll.js';
import { admin, link, linkedLine, numeroNuevo, send, TEXT, waitEstado, type Line } from '../server/send-helpers.js';
import { setWebhook, startReceiver, type Hit, type Receiver } from '../server/webhook-helpers.js';

/**
 * A message's page in a real Chromium (issue 36, its story): reached from
 * its history row, its record and timeline (accepted to read, the claim's
 * node, each webhook attempt with its answer) readable at 1280 and 390 px;
 * a refused send's refund; the history's find box, an id not found said
 * beside the field; a sibling line's session refused.
 */

let s: TestServer;
let R: Receiver;
let L: Line;
let sibling: Line;
let sent: string;
let failed: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  let first = true;
  // The receiver refuses the first request (500), then takes every one: the first delivery is attempted twice.
  R = await startReceiver((_h: Hit) => (first ? ((first = false), 500) : 200));
  s = await startTestServer({
    allowPrivateUrls: true,
    webhookRetryMs: 20,
    clock: systemClock,
    simDeliveryMs: 10,
    simReadMs: 20,
    queue: { gapMinMs: 0, gapMaxMs: 0 },
  });
  L = await linkedLine(s);
  const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: L.clientKey, json: { numero: numeroNuevo() } });
  expect(sib.status, sib.text).toBe(201);
  sibling = { ...L, celularId: sib.body.celular_id, celularKey: sib.body.api_key, gatewayToken: sib.body.gateway_token, numero: sib.body.celular.numero };
  await link(s, sibling);
  expect((await setWebhook(s, L.clientKey, { url: `${R.url}/e2e`, eventos: ['message.status'] })).status).toBe(200);
  const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: 'hola, esta es su historia' });
  expect(r.status, r.text).toBe(200);
  sent = r.body.msg_id as string;
  await waitEstado(s, sent, 'leido');
  // Every event of the message taken by the receiver (the refused one on its retry).
  await until(() => R.hits.filter((h) => h.json?.data?.msg_id === sent).length >= 5, { what: 'five webhook requests for the message', timeoutMs: 20_000 });
  const dead = numeroNuevo();
  expect((await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'not on the network' })).status).toBe(200);
  const f = await send(s, L, TEXT, { destinatario: dead, mensaje: 'nunca llega' });
  failed = f.body.msg_id as string;
  await waitEstado(s, failed, 'error');
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await R?.close();
  await s?.stop();
});
beforeEach(async () => {
  context = await browser.newContext();
  page = await context.newPage();
});
afterEach(async () => {
  await context.close();
});

const steps = () => page.locator('main table tbody tr');
const stepNames = async () => (await steps().locator('td:nth-child(2)').allTextContents()).map((t) => t.trim());

it('from its history row to its page: the record and the timeline in order, each webhook attempt with its answer and node', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial`);
  await page.getByRole('link', { name: sent }).click();
  await page.waitForURL(`**/panel/c/${L.clienteId}/mensajes/${sent}`);
  await expect.poll(() => page.getByRole('heading', { name: 'Timeline' }).count()).toBe(1);
  expect(await page.locator('dl.facts').textContent()).toContain('hola, esta es su historia');
  const names = await stepNames();
  expect(names.filter((n) => n !== 'webhook')).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'entregado', 'leido']);
  expect(names.filter((n) => n === 'webhook')).toHaveLength(5);
  const claim = steps().filter({ hasText: 'reclamado' });
  expect((await claim.locator('td:nth-child(3)').textContent())!.trim()).toMatch(/^[0-9a-f-]{8}$/);
  const hooks = await steps().filter({ hasText: 'webhook' }).locator('td:nth-child(4)').allTextContents();
  expect(hooks.filter((h) => h.includes('HTTP 500'))).toHaveLength(1);
  expect(hooks.filter((h) => h.includes('HTTP 200'))).toHaveLength(4);
  // Times in the panel's one format.
  expect(await steps().first().locator('time').textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  await screenshots(page, 'mensaje');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
});

it('a refused send: the error with its class, then the refund', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/mensajes/${failed}`);
  expect((await stepNames()).filter((n) => n !== 'webhook')).toEqual(['aceptado', 'cobro', 'encolado', 'reclamado', 'error', 'reembolso']);
  expect(await steps().filter({ hasText: 'reembolso' }).textContent()).toMatch(/\+1 on the (celular|global) balance/);
  expect(await steps().filter({ hasText: 'rechazado' }).count()).toBe(1);
  await screenshots(page, 'mensaje-error');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
});

it("the history's find box: an unknown id said beside the field (404), an empty one too (400); a known one opens its page", async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial`);
  const box = () => page.getByLabel('Find a message (msg_id)');
  await box().fill('01a21b3d-2a89-7ea1-83be-22d9f67523ae');
  const [answer] = await Promise.all([page.waitForResponse((r) => r.url().includes('/mensajes/01a21b3d')), page.getByRole('button', { name: 'Find' }).click()]);
  expect(answer.status()).toBe(404);
  await expect.poll(() => page.locator('#f-msg_id-error').textContent()).toContain('api_codigo 611');
  expect(await box().inputValue()).toBe('01a21b3d-2a89-7ea1-83be-22d9f67523ae');
  expect(await box().getAttribute('aria-invalid')).toBe('true');
  await screenshots(page, 'mensaje-no-encontrado');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [] });

  await box().fill('   ');
  await page.getByRole('button', { name: 'Find' }).click();
  await expect.poll(() => page.locator('#f-msg_id-error').textContent()).toContain('msg_id');

  await box().fill(` ${sent} `);
  await page.getByRole('button', { name: 'Find' }).click();
  await page.waitForURL(`**/mensajes/${sent}`);
  await expect.poll(() => page.getByRole('heading', { name: 'Timeline' }).count()).toBe(1);
});

it("a line's session: its own messages' pages, not a sibling line's (403)", async () => {
  await signIn(page, s.url, sibling.celularKey);
  const other = await page.goto(`${s.url}/panel/c/${L.clienteId}/mensajes/${sent}`);
  expect(other!.status()).toBe(403);
  expect(await page.locator('main').textContent()).toContain('api_codigo 201');
  const mine = await send(s, sibling, TEXT, { destinatario: numeroNuevo(), mensaje: 'del hermano' });
  const own = await page.goto(`${s.url}/panel/c/${L.clienteId}/mensajes/${mine.body.msg_id as string}`);
  expect(own!.status()).toBe(200);
  expect(await stepNames()).toContain('aceptado');
});
