import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { admin, linkedLine, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';

/**
 * The movements page in a real Chromium (issue 36, item 7, Done when): the
 * account page links to it and shows this month's consumption per line; the
 * page lists charges, a refund and the operator's additions with who made
 * each; the filters narrow it, both exports hold exactly the filtered rows,
 * a bad filter shows the API's error beside its field; the operator reaches
 * it from the client's page.
 */

let s: TestServer;
let L: Line;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  L = await linkedLine(s, { saldo: 10 });
  expect(
    (await admin(s, 'POST', '/admin/saldo', { cliente_id: L.clienteId, celular_id: L.celularId, monto: 3, motivo: 'promoción de =noviembre' })).status,
  ).toBe(200);
  for (let i = 0; i < 4; i++) {
    const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: `hola ${i}`, directo: 1 });
    expect(r.status, r.text).toBe(200);
  }
  const dead = numeroNuevo();
  await admin(s, 'POST', '/admin/sim/fail', { numero: dead, motivo: 'no existe' });
  expect((await send(s, L, TEXT, { destinatario: dead, mensaje: 'falla', directo: 1 })).status).toBe(502);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});
beforeEach(async () => {
  context = await browser.newContext({ acceptDownloads: true });
  page = await context.newPage();
});
afterEach(async () => {
  await context.close();
});

const movementRows = () => page.locator('main table tbody tr');

async function apiIds(query: string): Promise<number[]> {
  const r = await api(s.url, 'GET', `/api/movimientos.php?por_pagina=500&${query}`, { key: L.clientKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.movimientos as Array<{ id: number }>).map((m) => m.id);
}

async function download(name: string): Promise<{ file: string; text: string }> {
  const [d] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name, exact: true }).click()]);
  return { file: d.suggestedFilename(), text: readFileSync(await d.path(), 'utf8') };
}

it("the account page shows this month's consumption per line and links to the movements", async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/`);
  const consumo = page.getByRole('table', { name: /Consumption in \d{4}-\d{2}, per line/ });
  await expect.poll(() => consumo.locator('tbody tr').count()).toBe(1);
  // Five sends, one failed and refunded: four messages, four credits.
  expect((await consumo.locator('tbody tr td').allTextContents()).map((t) => t.trim())).toEqual([L.numero, '4', '4']);
  await screenshots(page, 'cuenta-consumo');
  expect((await overflowAtPhoneWidth(page)).page).toBe(0);
  await page.getByRole('link', { name: 'Balance movements' }).click();
  await expect.poll(() => page.url()).toContain(`/panel/c/${L.clienteId}/movimientos`);
});

it('the movements page: charges, the refund and additions with who made them; filters and both exports', async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/movimientos`);
  // Opening credit, the line's addition, 5 charges, 1 refund.
  await expect.poll(() => movementRows().count()).toBe(8);
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('8 movements');
  const first = (await movementRows().first().textContent())!;
  expect(first).toContain('reembolso');
  expect(first).toContain('sistema');
  expect(await page.locator('main').textContent()).toMatch(/operator/);
  // The refund's msg_id opens the message's page; its motivo (not an addition's) is a dash, not an empty cell.
  const refund = movementRows().first();
  expect(await refund.locator('td[data-label="motivo"]').textContent()).toBe('—');
  const link = refund.locator('td[data-label="msg_id"] a');
  expect(await link.getAttribute('href')).toMatch(new RegExp(`^/panel/c/${L.clienteId}/mensajes/[0-9a-f-]{36}$`));
  await screenshots(page, 'movimientos');
  // On a phone each movement is a stacked card: no column is out of sight to the right.
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });

  await page.getByLabel('Tipo').selectOption('manual');
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect.poll(() => movementRows().count()).toBe(2);
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('2 movements');
  const want = await apiIds('tipo=manual');
  expect(want).toHaveLength(2);

  const csv = await download('CSV');
  expect(csv.file).toMatch(/^movimientos-\d+-\d{4}-\d{2}-\d{2}\.csv$/);
  const [header, ...records] = parseCsv(csv.text);
  expect(header).toEqual(['id', 'fecha', 'tipo', 'monto', 'saldo_despues', 'celular_id', 'msg_id', 'motivo', 'actor']);
  expect(records.map((r) => Number(r[0]))).toEqual(want);
  expect(records.map((r) => r[7])).toContain('promoción de =noviembre');
  expect(records.map((r) => r[8])).toEqual(['operator', 'operator']);

  const nd = await download('NDJSON');
  expect(nd.file).toMatch(/\.ndjson$/);
  const lines = nd.text
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: number; tipo: string });
  expect(lines.map((m) => m.id)).toEqual(want);
  expect(new Set(lines.map((m) => m.tipo))).toEqual(new Set(['manual']));

  // Paged three at a time, the pager walks to the end.
  await page.goto(`${s.url}/panel/c/${L.clienteId}/movimientos?por_pagina=3`);
  await expect.poll(() => movementRows().count()).toBe(3);
  await page.getByRole('link', { name: 'Next page' }).click();
  await page.getByRole('link', { name: 'Next page' }).click();
  await expect.poll(() => movementRows().count()).toBe(2);
  expect(await page.getByRole('status').first().textContent()).toContain('page 3 of 3');
  // Past the end: no rows, and a way back to the last page.
  await page.goto(`${s.url}/panel/c/${L.clienteId}/movimientos?por_pagina=3&page=99`);
  await page.getByRole('link', { name: 'Go to the last page (3)' }).click();
  await expect.poll(() => movementRows().count()).toBe(2);
});

it("a bad filter shows the API's error beside its field", async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/movimientos`);
  await page.getByLabel('From (desde)').fill('2026-02-30');
  await page.getByRole('button', { name: 'Filter' }).click();
  const error = page.locator('#f-desde-error');
  await expect.poll(() => error.textContent()).toContain('2026-02-30');
  expect(await error.textContent()).toContain('api_codigo 100');
  expect(await page.getByLabel('From (desde)').inputValue()).toBe('2026-02-30');
  await screenshots(page, 'movimientos-error');
});

it("a line's session sees its own line's balance only; the operator reaches the page from the client's", async () => {
  await signIn(page, s.url, L.celularKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/movimientos`);
  // The line's addition and its 3 charges paid from its own balance (the rest were the global balance's).
  await expect.poll(() => movementRows().count()).toBe(4);
  expect(await page.getByLabel('Line (celular_id)').count()).toBe(0);
  await context.clearCookies();

  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/clientes/${L.clienteId}`);
  await page.getByRole('link', { name: 'Balance movements' }).click();
  await expect.poll(() => movementRows().count()).toBe(8);
});
