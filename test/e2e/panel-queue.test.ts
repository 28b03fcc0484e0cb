import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, mensaje, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';

/**
 * The panel's queue page in a real Chromium (issue 36): a line's queue with
 * why each message waits, cancel a selection, cancel all of the line after
 * typing its numero, retry a cancelled message from the history, and
 * redeliver every failed webhook delivery; each answered by a notice.
 */

let s: TestServer;
let L: Line;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const ids: string[] = [];

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', allowPrivateUrls: true, clock: new ManualClock(Date.UTC(2026, 3, 1, 12)), queue: { gapMinMs: 0, gapMaxMs: 0 } });
  L = await linkedLine(s, { saldo: 20 });
  // Closed hours: what is queued stays queued while the page is looked at.
  await editCelular(s, L, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
  for (let i = 0; i < 4; i++) {
    const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: `en cola ${i}` });
    expect(r.status, r.text).toBe(200);
    ids.push(r.body.msg_id as string);
  }
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});
beforeEach(async () => {
  context = await browser.newContext();
  page = await context.newPage();
});
afterEach(async () => {
  await context.close();
});

const rows = () => page.locator('main table tbody tr');
const notice = () => page.locator('body').textContent();

it('the queue page lists the line in order with why each waits; a selection is cancelled and refunded', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/celulares/${L.celularId}`);
  await page.getByRole('link', { name: 'Queue of this line' }).click();
  await expect.poll(() => rows().count()).toBe(4);
  await expect.poll(() => rows().first().textContent()).toContain('outside the allowed hours');
  await expect.poll(() => rows().nth(1).textContent()).toContain('behind older messages');
  await screenshots(page, 'cola');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });

  await page.getByLabel(`Select ${ids[0]}`).check();
  await page.getByLabel(`Select ${ids[1]}`).check();
  await page.getByRole('button', { name: 'Cancel the selected messages' }).click();
  await expect.poll(notice).toContain('2 messages cancelled, 2 credits refunded.');
  await expect.poll(() => rows().count()).toBe(2);
  expect((await mensaje(s, ids[0]!)).error_clase).toBe('cancelado');
  await screenshots(page, 'cola-cancelada');
});

it('cancel all of the line needs its numero typed; then the queue is empty', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/cola?celular_id=${L.celularId}`);
  const button = page.getByRole('button', { name: 'Cancel all of this line' });
  await expect.poll(() => button.isDisabled()).toBe(true);
  await page.getByLabel(/Type the line's numero/).fill('not it');
  expect(await button.isDisabled()).toBe(true);
  await page.getByLabel(/Type the line's numero/).fill(L.numero);
  await button.click();
  await expect.poll(notice).toContain('2 messages cancelled');
  await expect.poll(() => page.getByText('Nothing waits in this queue.').count()).toBe(1);
  // A bad line id in the address is the API's words on the page, not a fault.
  const bad = await page.goto(`${s.url}/panel/c/${L.clienteId}/cola?celular_id=abc`);
  expect(bad?.status()).toBe(400);
  expect(await notice()).toContain('celular_id');
});

it('the history offers Retry on a cancelled message: a new send linked to it', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?celular_id=${L.celularId}`);
  const retry = page.getByRole('button', { name: `Retry ${ids[3]}` });
  await expect.poll(() => retry.count()).toBe(1);
  await screenshots(page, 'historial-reintentar');
  await retry.click();
  await expect.poll(notice).toContain('Retried: the new message is');
  const text = (await notice()) ?? '';
  const nuevo = /new message is ([0-9a-f-]{36})/.exec(text)![1]!;
  expect((await mensaje(s, nuevo)).reintento_de).toBe(ids[3]);
  // The retry lands on the new message's page (its story), not on the history.
  expect(new URL(page.url()).pathname).toBe(`/panel/c/${L.clienteId}/mensajes/${nuevo}`);
  // The new message's page names the one it retries, linked.
  await page.goto(`${s.url}/panel/c/${L.clienteId}/mensajes/${nuevo}`);
  await expect.poll(() => page.locator(`a[href="/panel/c/${L.clienteId}/mensajes/${ids[3]}"]`).count()).toBe(1);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?celular_id=${L.celularId}`);
  // Retried again: the same new message, said again (nothing sent twice).
  await page.getByRole('button', { name: `Retry ${ids[3]}` }).click();
  await expect.poll(notice).toContain(nuevo);
});

it('the webhook page redelivers every failed delivery at once', async () => {
  const r = await api(s.url, 'POST', '/api/webhook.php', { key: L.clientKey, json: { url: 'http://127.0.0.1:9/hook' } });
  expect(r.status, r.text).toBe(200);
  for (let i = 0; i < 2; i++) await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
  // Once the dispatcher has tried each (and let go of it), they are marked failed, as after their last retry.
  await expect
    .poll(async () => {
      const e = await api(s.url, 'GET', '/api/webhook_entregas.php', { key: L.clientKey });
      return (e.body.entregas as Array<{ intentos: number; evento: string }>).filter((x) => x.evento === 'webhook.test' && x.intentos > 0).length;
    })
    .toBe(2);
  (s.core.store as unknown as SqliteStore).db
    .prepare("UPDATE eventos SET entrega = 'fallido', reclamo = NULL, reclamo_hasta = NULL WHERE cliente_id = ? AND entrega IS NOT NULL")
    .run(L.clienteId);
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  await page.getByRole('button', { name: 'Redeliver all failed' }).click();
  await expect.poll(notice).toContain('failed deliveries queued again.');
  await screenshots(page, 'webhook-reenviar-fallidas');
});
