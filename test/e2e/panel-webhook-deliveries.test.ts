import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, afterEach, expect, it } from 'vitest';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, type Line } from '../server/send-helpers.js';
import { startReceiver, type Receiver } from '../server/webhook-helpers.js';

/**
 * The webhook page's deliveries (issue 36's walk, findings 3 and 7): a
 * receiver that fails on every attempt, more deliveries than a page holds.
 * The table fits the page at 1280 px (no sideways scroll) and is stacked at
 * 390; it pages with the shared pager (first, last, a page number, back from
 * past the end); the same failure repeated is one line with its count.
 */

let s: TestServer;
let L: Line;
let R: Receiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const TESTS = 23;

beforeAll(async () => {
  R = await startReceiver(500);
  s = await startTestServer({ allowPrivateUrls: true });
  L = await linkedLine(s);
  const set = await api(s.url, 'POST', '/api/webhook.php', {
    key: L.clientKey,
    json: { url: `${R.url}/a/rather/long/path/of/the/receiver?token=abcdefghijklmnopqrstuvwxyz0123456789` },
  });
  expect(set.status, set.text).toBe(200);
  for (let i = 0; i < TESTS; i++) expect((await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey })).status).toBe(200);
  // Each tried once by the dispatcher (HTTP 500); the test clock never reaches their retries.
  const deadline = Date.now() + 90_000;
  for (;;) {
    const e = await api(s.url, 'GET', '/api/webhook_entregas.php?limit=100', { key: L.clientKey });
    if ((e.body.entregas as Array<{ intentos: number }>).filter((x) => x.intentos > 0).length === TESTS) break;
    if (Date.now() > deadline) throw new Error(`the deliveries were not all tried: ${e.text}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  browser = await launchBrowser();
}, 120_000);
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

/** How far each table box on the page reaches past its width at 1280 px: 0 when nothing is clipped. */
async function overflowAtDesktop(p: Page): Promise<number[]> {
  await p.setViewportSize({ width: 1280, height: 900 });
  return p.evaluate<number[]>(`[...document.querySelectorAll('#entregas .table-wrap')].map((t) => t.scrollWidth - t.clientWidth)`);
}

it('fits at 1280 px and stacks at 390; pages with the shared pager; a repeated failure is one line with its count', async () => {
  // The newest delivery failed twice more the same way (as its retries would): three attempts, one answer.
  const newest = (await api(s.url, 'GET', '/api/webhook_entregas.php?limit=1', { key: L.clientKey })).body.entregas[0] as { id: string };
  const db = (s.core.store as unknown as SqliteStore).db;
  const first = db.prepare('SELECT fecha, status, duracion_ms, error FROM webhook_intentos WHERE entrega_id = ? AND n = 1').get(newest.id) as {
    fecha: number;
    status: number;
    duracion_ms: number;
    error: string | null;
  };
  for (const n of [2, 3])
    db.prepare('INSERT INTO webhook_intentos (entrega_id, n, fecha, status, duracion_ms, error) VALUES (?, ?, ?, ?, ?, ?)').run(
      newest.id,
      n,
      first.fecha + n * 60_000,
      first.status,
      first.duracion_ms,
      first.error,
    );

  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  const rows = page.locator('#entregas tbody tr');
  await expect.poll(() => rows.count()).toBe(20);
  const pager = page.locator('#entregas nav.pager');
  expect(await pager.textContent()).toContain('Page 1 of 2');
  const row = page.locator('#entregas tbody tr', { hasText: newest.id });
  expect(await row.locator('ol.attempts li').count()).toBe(1);
  expect(await row.locator('ol.attempts').textContent()).toContain('HTTP 500 × 3');
  await screenshots(page, 'webhook-entregas');
  expect(await overflowAtDesktop(page)).toEqual([0]);
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });

  // On a phone the first five of the page show, then a link shows the rest (the walk: 9,700 px tall at 390 px).
  await page.setViewportSize({ width: 390, height: 900 });
  const shown = () => page.locator('#entregas tbody tr:visible').count();
  expect(await shown()).toBe(5);
  const tall = await page.evaluate<number>('document.documentElement.scrollHeight');
  const more = page.getByRole('link', { name: 'Show all 20 deliveries of this page' });
  expect(await more.isVisible()).toBe(true);
  await more.click();
  await expect.poll(shown).toBe(20);
  expect(await more.isVisible()).toBe(false);
  expect(await page.evaluate<number>('document.documentElement.scrollHeight')).toBeGreaterThan(tall);
  // The section's refresh (every few seconds) asks for the whole page again.
  await page.waitForResponse((r) => r.url().includes('/webhook/entregas'), { timeout: 20_000 });
  await expect.poll(shown).toBe(20);
  await page.setViewportSize({ width: 1280, height: 900 });
  expect(await more.isVisible()).toBe(false);

  await pager.getByRole('link', { name: 'Next page' }).click();
  await page.waitForURL((u) => u.searchParams.get('page') === '2');
  await expect.poll(() => rows.count()).toBe(TESTS - 20);
  expect(await page.locator('#entregas nav.pager').textContent()).toContain('Page 2 of 2');
  await screenshots(page, 'webhook-entregas-2');

  // Past the end: the way back to the last page; a bad page number in words.
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook?page=9`);
  await page.getByRole('link', { name: 'Go to the last page (2)' }).click();
  await expect.poll(() => rows.count()).toBe(TESTS - 20);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook?page=cero`);
  expect(await page.locator('#entregas .error').textContent()).toContain('page: "cero": expected a whole number, 1 or more');
  await expect.poll(() => rows.count()).toBe(20);
});
