import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, waitEstado, type Line } from '../server/send-helpers.js';

/**
 * The charts in a real browser (D-100, D-101): after messages sent through
 * the simulator over three minutes (delivered, read, some refused by the
 * network), the chart's table of numbers says what the store holds, bar by
 * bar; the samples show the queue and the webhook attempts; a bad value is
 * refused beside its field; every page passes axe at 1280 and 390 px.
 */

let s: TestServer;
let clock: ManualClock;
let a: Line;
let b: Line;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const sent: string[] = [];

const ESTADOS = ['pendiente', 'enviado', 'entregado', 'leido', 'error'] as const;

async function sendSome(line: Line, n: number, failing = false): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    const destinatario = failing ? '525598772222' : `52559877${String(1000 + sent.length)}`;
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: line.celularKey, json: { destinatario, mensaje: `hola ${i}` } });
    expect(r.status, r.text).toBe(200);
    sent.push(r.body.msg_id);
  }
}

/** The store's messages by creation minute (ISO) and estado, from the messages themselves. */
async function storeBars(lines: Line[]): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const l of lines) {
    const { rows } = await s.core.store.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 500 });
    for (const m of rows) {
      const at = new Date(Math.floor(m.created_at / 60_000) * 60_000).toISOString();
      const bar = (out[at] ??= [0, 0, 0, 0, 0, 0]);
      bar[ESTADOS.indexOf(m.estado)]! += 1;
      bar[5]! += 1;
    }
  }
  return out;
}

/** The numbers table of the sends chart, by the bar's datetime. */
async function tableBars(): Promise<Record<string, number[]>> {
  const rows = page.locator('#t-envios tbody tr');
  const out: Record<string, number[]> = {};
  for (let i = 0; i < (await rows.count()); i += 1) {
    const row = rows.nth(i);
    const at = (await row.locator('time').first().getAttribute('datetime'))!;
    // From, To, the numbers, then how many bars the row holds (a run without messages is one row).
    const n = (await row.locator('td').allTextContents()).slice(2, -1).map(Number);
    if (n[5] !== 0) out[at] = n;
  }
  return out;
}

beforeAll(async () => {
  clock = new ManualClock(Date.now());
  s = await startTestServer({ clock, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 10, simReadMs: 20 });
  a = await linkedLine(s, { saldo: 1000 });
  b = await linkedLine(s, { saldo: 1000 });
  await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, json: { numero: '525598772222', motivo: 'not on the network' } });
  // Three minutes of sends: 4 then 3 then 2 on one line, 3 on the other, two refused by the network.
  await sendSome(a, 4);
  clock.advance(60_000);
  await sendSome(a, 2);
  await sendSome(a, 1, true);
  await sendSome(b, 3);
  clock.advance(60_000);
  await sendSome(a, 1);
  await sendSome(b, 1, true);
  for (const id of sent) await waitEstado(s, id, ['leido', 'error'], 30_000);
  // A webhook attempt of this node, and the queue, sampled now.
  s.core.bus.publish('webhook.attempt', {
    cliente_id: a.clienteId,
    evento: 'message.status',
    estado: 'entregado',
    status: 200,
    error: null,
    duracion_ms: 80,
    intentos: 1,
    edad_ms: 5,
  });
  await s.charts.run();
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

it("draws the last hour of everyone's sends, whose numbers are the store's, and the samples", async () => {
  await signIn(page, s.url, s.adminToken);
  await page.getByRole('link', { name: 'Charts over time' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Charts');
  const chart = page.getByRole('img', { name: /Messages created per minute, by estado now/ });
  await expect.poll(() => chart.count()).toBe(1);
  expect(await chart.locator('rect').count()).toBeGreaterThanOrEqual(3);
  await page.getByText(/^The numbers \(3 of 60 bars had messages\)$/).click();
  const want = await storeBars([a, b]);
  expect(Object.keys(want)).toHaveLength(3);
  expect(await tableBars()).toEqual(want);
  expect(Object.values(want).reduce((x, y) => x + y[5]!, 0)).toBe(sent.length);
  expect(Object.values(want).reduce((x, y) => x + y[4]!, 0)).toBe(2);
  // The header's end is the last bar's end (its To), not a minute past what the table shows.
  const headerEnd = await page.getByRole('status').first().locator('time').last().getAttribute('datetime');
  const lastBar = page.locator('#t-envios tbody tr').last().locator('time');
  expect(await lastBar.last().getAttribute('datetime')).toBe(headerEnd);
  // 60 bars, 3 with messages: the runs without any are one row each, so a phone shows a few cards, not 60.
  const tableRows = await page.locator('#t-envios tbody tr').count();
  expect(tableRows).toBeLessThanOrEqual(7);
  const bars = (await page.locator('#t-envios tbody td[data-label="bars"]').allTextContents()).map(Number);
  expect(bars.reduce((x, y) => x + y, 0)).toBe(60);
  // The samples: this node's attempt and its queue reading in the last bar.
  await page.getByText(/^The numbers \(\d+ of 60 bars sampled\)$/).click();
  const last = page.locator('#t-muestras tbody tr').last();
  expect((await last.locator('td').allTextContents()).slice(2)).toEqual(['0', '0', '1', '0', '100', '100', '1']);
  // The bars no node sampled are runs of one row each (the walk of issue 36: 60 cards of dashes at 390 px, 12,000 px tall).
  const sampled = Number((await page.getByText(/^The numbers \(\d+ of 60 bars sampled\)$/).textContent())!.match(/\((\d+) of/)![1]);
  const sampleBars = (await page.locator('#t-muestras tbody td[data-label="bars"]').allTextContents()).map(Number);
  expect(sampleBars.reduce((x, y) => x + y, 0)).toBe(60);
  expect(sampleBars.length).toBeLessThanOrEqual(2 * sampled + 1);
  // Bars in a row that read the same are one row: no two neighbouring rows read alike.
  const readings = await page.locator('#t-muestras tbody tr').evaluateAll((trs): string[] =>
    trs.map((tr) =>
      [...tr.querySelectorAll('td')]
        .slice(2, 8)
        .map((td) => td.textContent)
        .join(),
    ),
  );
  for (let i = 1; i < readings.length; i++) expect(readings[i]).not.toBe(readings[i - 1]);
  expect(await page.getByRole('img', { name: /Webhook attempts/ }).count()).toBe(1);
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0, 0] });
  await screenshots(page, 'graficas');
});

it("shows one line's week to the operator, and refuses a bad value beside its field", async () => {
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/graficas`);
  await page.getByLabel('Range', { exact: true }).selectOption('7d');
  await page.getByLabel('Line (celular_id)').fill(String(b.celularId));
  await page.getByRole('button', { name: 'Show' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain(`Line ${b.celularId} of client ${b.clienteId}`);
  await page.getByText(/^The numbers \(/).click();
  const bars = await tableBars();
  expect(Object.values(bars).reduce((x, y) => x + y[5]!, 0)).toBe(4);
  expect(await page.locator('#t-muestras').count()).toBe(0);
  await screenshots(page, 'graficas-linea');

  await page.getByLabel('Line (celular_id)').fill('999999');
  await page.getByRole('button', { name: 'Show' }).click();
  await expect.poll(() => page.locator('#f-celular_id-error').textContent()).toContain('celular_id 999999: no such line');
  expect(await page.getByLabel('Line (celular_id)').inputValue()).toBe('999999');
  await screenshots(page, 'graficas-error');
});

it("shows a client its own lines' charts from its menu", async () => {
  await signIn(page, s.url, a.clientKey);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Charts' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Charts');
  await page.getByLabel('Line', { exact: true }).selectOption(String(a.celularId));
  await page.getByRole('button', { name: 'Show' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain(`Line ${a.celularId}`);
  await page.getByText(/^The numbers \(/).click();
  expect(await tableBars()).toEqual(await storeBars([a]));
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  await screenshots(page, 'graficas-cliente');
});
