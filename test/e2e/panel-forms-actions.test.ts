import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { launchBrowser, postTwice, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';

/**
 * The newer POST forms of the panel sent twice (issue 36, D-90): a double
 * submit 40 ms apart acts once and both answers go to the same page, and a
 * reload after a POST (the browser is on the page the redirect named)
 * acts not again. Queue cancel (a selection, all of a line), retry, session
 * restart and logout, webhook restore, redeliver all failed; each counted
 * in the store: refunds, audit rows, the webhook's state.
 */

let s: TestServer;
let L: Line;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', allowPrivateUrls: true, clock: new ManualClock(Date.UTC(2026, 3, 1, 12)), queue: { gapMinMs: 0, gapMaxMs: 0 } });
  L = await linkedLine(s, { saldo: 50 });
  // Closed hours: what is queued stays queued.
  await editCelular(s, L, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});
beforeEach(async () => {
  context = await browser.newContext();
  page = await context.newPage();
  await signIn(page, s.url, L.clientKey);
});
afterEach(async () => {
  await context.close();
});

const notice = () => page.locator('body').textContent();
const queue = async (n: number) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: `en cola ${i}` });
    expect(r.status, r.text).toBe(200);
    ids.push(r.body.msg_id as string);
  }
  return ids;
};
const refunds = async () => (await api(s.url, 'GET', '/api/movimientos.php?tipo=reembolso', { key: L.clientKey })).body.total as number;
const audits = async (accion: string) => {
  const r = await api(s.url, 'GET', `/admin/auditoria?cliente_id=${L.clienteId}&por_pagina=500`, { key: s.adminToken });
  expect(r.status, r.text).toBe(200);
  return JSON.stringify(r.body).split(`"${accion}"`).length - 1;
};
/** Both answers redirect to the same page; the second says it was the form sent again. */
const actedOnce = (one: { status(): number; headers(): Record<string, string> }, two: { status(): number; headers(): Record<string, string> }) => {
  expect([one.status(), two.status()]).toEqual([303, 303]);
  expect(two.headers().location).toBe(one.headers().location);
  expect(decodeURIComponent(two.headers()['set-cookie'] ?? '')).toContain('it acted once');
};
/** A reload of the page the POST led to: a GET, so nothing acts again. */
const reload = async () => {
  expect(new URL(page.url()).pathname).not.toMatch(/\/(cancelar|cancelar-todo|reintentar|reiniciar|logout|restaurar|reenviar-fallidas)$/);
  await page.reload();
};

it('queue cancel (a selection): a double submit refunds once; a reload after the POST refunds nothing more', async () => {
  const ids = await queue(2);
  const before = await refunds();
  const action = `/panel/c/${L.clienteId}/cola/cancelar`;
  await page.goto(`${s.url}/panel/c/${L.clienteId}/cola?celular_id=${L.celularId}`);
  const [one, two] = await postTwice(page, s.url, action, { celular_id: String(L.celularId), msg_ids: ids[0]! });
  actedOnce(one, two);
  expect(await refunds()).toBe(before + 1);

  await page.goto(`${s.url}/panel/c/${L.clienteId}/cola?celular_id=${L.celularId}`);
  await page.getByLabel(`Select ${ids[1]}`).check();
  await page.getByRole('button', { name: 'Cancel the selected messages' }).click();
  await expect.poll(notice).toContain('1 message cancelled, 1 credit refunded.');
  await reload();
  expect(await refunds()).toBe(before + 2);
});

it('queue cancel all of a line: a double submit refunds each once; a reload refunds nothing more', async () => {
  await queue(2);
  const before = await refunds();
  await page.goto(`${s.url}/panel/c/${L.clienteId}/cola?celular_id=${L.celularId}`);
  const [one, two] = await postTwice(page, s.url, `/panel/c/${L.clienteId}/cola/cancelar-todo`, { celular_id: String(L.celularId), confirmacion: L.numero });
  actedOnce(one, two);
  expect(await refunds()).toBe(before + 2);

  await queue(1);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/cola?celular_id=${L.celularId}`);
  await page.getByLabel(/Type the line's numero/).fill(L.numero);
  await page.getByRole('button', { name: 'Cancel all of this line' }).click();
  await expect.poll(notice).toContain('1 message cancelled');
  await reload();
  expect(await refunds()).toBe(before + 3);
});

it('retry: a double submit makes one new message (one audit row); a reload retries nothing more', async () => {
  const [a, b] = await queue(2);
  const c = await api(s.url, 'POST', '/api/cola_cancelar.php', { key: L.clientKey, json: { msg_ids: [a, b] } });
  expect(c.status, c.text).toBe(200);
  const before = await audits('mensaje.reintentar');
  const action = `/panel/c/${L.clienteId}/historial/reintentar`;
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?celular_id=${L.celularId}`);
  const form = page.locator(`form[action="${action}"]`).filter({ has: page.locator(`input[name="msg_id"][value="${a}"]`) });
  const [one, two] = await postTwice(page, s.url, action, { msg_id: a!, celular_id: String(L.celularId) }, form);
  actedOnce(one, two);
  expect(await audits('mensaje.reintentar')).toBe(before + 1);

  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?celular_id=${L.celularId}`);
  await page.getByRole('button', { name: `Retry ${b}` }).click();
  await expect.poll(notice).toContain('Retried: the new message is');
  await reload();
  expect(await audits('mensaje.reintentar')).toBe(before + 2);
});

it('session restart and logout: a double submit acts once each (one audit row); a reload acts not', async () => {
  const linePage = `/panel/c/${L.clienteId}/celulares/${L.celularId}`;
  await page.goto(`${s.url}${linePage}`);
  const [r1, r2] = await postTwice(page, s.url, `${linePage}/reiniciar`, {});
  actedOnce(r1, r2);
  expect(await audits('celular.reiniciar')).toBe(1);
  await page.goto(`${s.url}${linePage}`);
  await page.getByRole('button', { name: 'Restart session' }).click();
  await expect.poll(notice).toContain('restarting');
  await reload();
  expect(await audits('celular.reiniciar')).toBe(2);

  await page.goto(`${s.url}${linePage}`);
  const [l1, l2] = await postTwice(page, s.url, `${linePage}/logout`, { confirmar: '1' });
  actedOnce(l1, l2);
  expect(await audits('celular.logout')).toBe(1);
  await page.goto(`${s.url}${l1.headers().location}`);
  await reload();
  expect(await audits('celular.logout')).toBe(1);
});

it('webhook restore: a double submit restores once (a second would step back again); a reload restores nothing', async () => {
  for (const url of ['http://127.0.0.1:9/primero', 'http://127.0.0.1:9/segundo'])
    expect((await api(s.url, 'POST', '/api/webhook.php', { key: L.clientKey, json: { url } })).status).toBe(200);
  const url = async () => (await api(s.url, 'GET', '/api/webhook.php', { key: L.clientKey })).body.url as string;
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  const [one, two] = await postTwice(page, s.url, `/panel/c/${L.clienteId}/webhook/restaurar`, {});
  actedOnce(one, two);
  expect(await url()).toBe('http://127.0.0.1:9/primero');
  expect(await audits('webhook.restaurar')).toBe(1);

  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  await page.getByRole('button', { name: 'Restore the previous configuration' }).click();
  await expect.poll(notice).toContain('Webhook restored');
  await reload();
  // One step further back (before the first, no webhook), not two.
  expect(await url()).toBe('');
  expect(await audits('webhook.restaurar')).toBe(2);
});

it('redeliver all failed: a double submit queues each failed delivery again once; a reload queues nothing', async () => {
  expect((await api(s.url, 'POST', '/api/webhook.php', { key: L.clientKey, json: { url: 'http://127.0.0.1:9/hook' } })).status).toBe(200);
  for (let i = 0; i < 2; i++) expect((await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey })).status).toBe(200);
  const db = (s.core.store as unknown as SqliteStore).db;
  const failAll = () =>
    db.prepare("UPDATE eventos SET entrega = 'fallido', reclamo = NULL, reclamo_hasta = NULL WHERE cliente_id = ? AND entrega IS NOT NULL").run(L.clienteId)
      .changes;
  const pending = () => (db.prepare("SELECT COUNT(*) AS n FROM eventos WHERE cliente_id = ? AND entrega = 'pendiente'").get(L.clienteId) as { n: number }).n;
  const failed = failAll();
  expect(failed).toBeGreaterThanOrEqual(2);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  const [one, two] = await postTwice(page, s.url, `/panel/c/${L.clienteId}/webhook/reenviar-fallidas`, {});
  actedOnce(one, two);
  // The first answer said how many went again: all of them, once (the second did not run, so said nothing of its own).
  expect(decodeURIComponent(one.headers()['set-cookie'] ?? '')).toContain(`${failed} failed deliveries queued again.`);
  expect(pending()).toBe(failed);

  failAll();
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  await page.getByRole('button', { name: 'Redeliver all failed' }).click();
  await expect.poll(notice).toContain('failed deliveries queued again.');
  failAll();
  await reload();
  // Marked failed again after the POST: a reload is a GET, so they stay failed.
  expect(pending()).toBe(0);
});
