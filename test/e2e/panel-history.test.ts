import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { admin, linkedLine, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';
import { startReceiver, type Receiver } from '../server/webhook-helpers.js';

/**
 * The panel's history, inbox and webhook pages in a real Chromium (issue 27,
 * Done when): the client sets a webhook on a local receiver, sends a test
 * event and sees the delivery appear without a reload, then redelivers it;
 * history filters narrow the table and both exports hold exactly the
 * filtered rows; a bad filter shows the API's error beside its field.
 */

let s: TestServer;
let R: Receiver;
let L: Line;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const dest = numeroNuevo();

beforeAll(async () => {
  R = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true, simDeliveryMs: 10, simReadMs: 20, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  L = await linkedLine(s);
  for (const [to, text] of [
    [dest, '=1+1, "hola"\nsegunda línea'],
    [dest, 'otro para el mismo'],
    [numeroNuevo(), 'para alguien más'],
  ] as const) {
    const r = await send(s, L, TEXT, { destinatario: to, mensaje: text, directo: 1 });
    expect(r.status, r.text).toBe(200);
  }
  const inbound = await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto: 'Hola, ¿a qué hora abren?' });
  expect(inbound.status, inbound.text).toBe(200);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await R?.close();
  await s?.stop();
});
beforeEach(async () => {
  context = await browser.newContext({ acceptDownloads: true });
  page = await context.newPage();
});
afterEach(async () => {
  await context.close();
});

const rows = () => page.locator('main table tbody tr');

/** The API's answer to the same filter: the rows the panel must show and export. */
async function apiHistory(query: string): Promise<string[]> {
  const r = await api(s.url, 'GET', `/api/historial_listar.php?por_pagina=500&${query}`, { key: L.clientKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.mensajes as Array<{ msg_id: string }>).map((m) => m.msg_id);
}

async function download(name: string): Promise<{ file: string; text: string }> {
  const [d] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name, exact: true }).click()]);
  return { file: d.suggestedFilename(), text: readFileSync(await d.path(), 'utf8') };
}

it('history: the filters narrow the table and both exports hold exactly the filtered rows', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial`);
  await expect.poll(() => rows().count()).toBe(3);
  await screenshots(page, 'historial');
  // On a phone each message is a stacked card: no column is out of sight to the right.
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });

  await page.getByLabel('Destinatario').fill(dest);
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect.poll(() => rows().count()).toBe(2);
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('2 messages');
  const want = await apiHistory(`destinatario=${dest}`);

  const csv = await download('CSV');
  expect(csv.file).toMatch(/^historial-\d+-\d{4}-\d{2}-\d{2}\.csv$/);
  const [header, ...records] = parseCsv(csv.text);
  expect(records.map((r) => r[header!.indexOf('msg_id')])).toEqual(want);
  expect(records.map((r) => r[header!.indexOf('texto')])).toContain('\'=1+1, "hola"\nsegunda línea');

  const nd = await download('NDJSON');
  expect(nd.file).toMatch(/\.ndjson$/);
  const lines = nd.text
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg_id: string; destinatario: string });
  expect(lines.map((m) => m.msg_id)).toEqual(want);
  expect(new Set(lines.map((m) => m.destinatario))).toEqual(new Set([dest]));
});

it("history: a bad filter value shows the API's error beside its field", async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial`);
  await page.getByLabel('From (desde)').fill('2026-13-45');
  await page.getByRole('button', { name: 'Filter' }).click();
  const error = page.locator('#f-desde-error');
  await expect.poll(() => error.textContent()).toContain('2026-13-45');
  expect(await error.textContent()).toContain('api_codigo 100');
  expect(await page.getByLabel('From (desde)').getAttribute('aria-invalid')).toBe('true');
  // What was typed stays in the field.
  expect(await page.getByLabel('From (desde)').inputValue()).toBe('2026-13-45');
  await screenshots(page, 'historial-error');
  // At 390 px the tag PARAMETROS_INVALIDOS is on one line, never cut mid-word: its letters' boxes sit on one line.
  await page.setViewportSize({ width: 390, height: 900 });
  const tagLines = await page.evaluate<number>(`(() => {
    const code = document.querySelector('#f-desde-error .code');
    const text = code.firstChild;
    const at = text.textContent.indexOf('PARAMETROS_INVALIDOS');
    const range = document.createRange();
    range.setStart(text, at);
    range.setEnd(text, at + 'PARAMETROS_INVALIDOS'.length);
    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
  })()`);
  expect(tagLines).toBe(1);
});

it('history: pages to the last page and back from past the end; a bad hasta in words; times in UTC', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?por_pagina=1`);
  await page.getByRole('link', { name: 'Last page', exact: true }).click();
  await expect.poll(() => page.locator('.pager .off', { hasText: 'Next page' }).count()).toBe(1);
  expect(await page.locator('td[data-label="created_at"] time').first().textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  await screenshots(page, 'historial-paginas');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?por_pagina=1&page=9999`);
  await expect.poll(() => page.locator('p.empty').textContent()).toContain('No messages on this page');
  await screenshots(page, 'historial-fin');
  await page.getByRole('link', { name: /^Go to the last page/ }).click();
  await expect.poll(() => page.locator('td[data-label="created_at"]').count()).toBe(1);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?desde=2026-11-28T22:19:00Z&hasta=ayer`);
  await expect
    .poll(() => page.locator('#f-hasta-error').textContent())
    .toContain('hasta: expected a calendar date YYYY-MM-DD or an RFC 3339 instant with its offset, such as 2026-11-26T10:00:00Z');
});

it('inbox: lists what the line received', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial`);
  await page.getByRole('link', { name: 'Inbox' }).click();
  await expect.poll(() => rows().count()).toBe(1);
  expect(await rows().first().textContent()).toContain('¿a qué hora abren?');
  await screenshots(page, 'recibidos');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
});

it('webhook: set with a secret shown once, a test event appears without a reload, and is redelivered', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/webhook`);
  await expect.poll(() => page.getByText('No webhook yet').count()).toBe(1);
  await page.getByLabel('URL').fill(`${R.url}/e2e`);
  await page.getByLabel('Signing secret').selectOption('generar');
  await page.getByRole('button', { name: 'Save webhook' }).click();
  const secret = page.locator('#new-key');
  await expect.poll(() => secret.textContent()).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const shown = (await secret.textContent())!;
  await screenshots(page, 'webhook-secret');
  // Shown once, on its own page (D-90): back to the webhook.
  await page.getByRole('link', { name: 'Back to the webhook' }).click();

  // Sent through the form, the test event is listed once delivered.
  await page.getByRole('button', { name: 'Send a test event' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Test event queued');
  expect(await page.content()).not.toContain(shown);
  const entregas = page.locator('#entregas tbody tr');
  await expect.poll(() => entregas.first().textContent(), { timeout: 15_000 }).toContain('HTTP 200');
  expect(await entregas.first().textContent()).toContain('webhook.test');

  // A second one, queued while the page stays open, appears in place: the page is not reloaded.
  await page.evaluate(() => ((globalThis as unknown as { stayed: boolean }).stayed = true));
  const probe = await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
  expect(probe.status, probe.text).toBe(200);
  const id = probe.body.id as string;
  const row = page.locator('#entregas tbody tr', { hasText: id });
  await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('HTTP 200');
  expect(await page.evaluate(() => (globalThis as unknown as { stayed?: boolean }).stayed)).toBe(true);
  await screenshots(page, 'webhook');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });

  await row.getByRole('button', { name: 'Redeliver' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Delivery queued again');
  await expect.poll(() => R.of(id).length).toBe(2);
  // The intentos column counts the second attempt once it is made (the page polls it in).
  await expect.poll(() => page.locator('#entregas tbody tr', { hasText: id }).locator('td.num').textContent(), { timeout: 15_000 }).toBe('2');
});
