import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';

/**
 * What issue 36's new-operator walk found (D-130, D-131), each as a person
 * meets it: the clients' tables read at 390 px; a card starts at its own
 * padding; a filter card has no empty strip above labels of one line; the
 * link page says how to play the phone under the simulator; a queued
 * message opens its story; a page past the end offers the last page.
 */

let s: TestServer;
let L: Line;
let unlinked: Line;
let queued: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', clock: new ManualClock(Date.UTC(2026, 3, 1, 12)), queue: { gapMinMs: 0, gapMaxMs: 0 } });
  L = await linkedLine(s, { saldo: 20 });
  // Outside its hours: the message waits in the queue.
  await editCelular(s, L, { hora_inicio_permitido: '00:00', hora_fin_permitido: '01:00' });
  const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: 'espera su hora' });
  expect(r.status, r.text).toBe(200);
  queued = r.body.msg_id as string;
  unlinked = await linkedLine(s, { link: false });
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

/** How far below the top of its card's padding box the first visible line of each matching card starts, in px. */
const firstLineGap = (p: Page, selector: string) =>
  p.evaluate<number[]>(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((card) => {
    const first = [...card.children].find((c) => c.getBoundingClientRect().height > 0);
    return Math.round(first.getBoundingClientRect().top - card.getBoundingClientRect().top - parseFloat(getComputedStyle(card).paddingTop) - parseFloat(getComputedStyle(card).borderTopWidth));
  })`);

it("the clients' list and a client's lines are stacked at 390 px (no column out of view); a card starts at its padding", async () => {
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/clientes`);
  await expect.poll(() => page.getByRole('link', { name: /^Envios \d+$/ }).count()).toBe(2);
  // The walk: at 390 px the table ran 111 px past its box, estado and saldo out of view.
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  await page.setViewportSize({ width: 390, height: 900 });
  const row = page.getByRole('row').filter({ hasText: `Envios` }).first();
  expect(await row.locator('td[data-label="saldo global"]').isVisible()).toBe(true);
  await screenshots(page, 'walk-clientes');

  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${s.url}/panel/clientes/${L.clienteId}`);
  await expect.poll(() => page.getByRole('row').filter({ hasText: L.numero }).count()).toBe(1);
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  // The "Client key" card began with a paragraph's margin: an empty strip above its first line.
  const gaps = await firstLineGap(page, 'main .card');
  expect(gaps.length).toBeGreaterThanOrEqual(3);
  for (const g of gaps) expect(g).toBeLessThanOrEqual(1);
  await screenshots(page, 'walk-cliente');
});

it('a filter card of labels on one line has no empty strip above them; the inputs still start on one line', async () => {
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/graficas`);
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Charts');
  // Range, Client and Line: one line each at 1280 px; the labels' row was two lines tall (min-height: 3em).
  // The labels' text (a Range: the label's box itself spans the reserved room) starts at the card's padding.
  const textGaps = await page.evaluate<number[]>(`[...document.querySelectorAll('form.filters .field > label')].map((l) => {
    const card = l.closest('form');
    const r = document.createRange();
    r.selectNodeContents(l);
    return Math.round(r.getBoundingClientRect().top - card.getBoundingClientRect().top - parseFloat(getComputedStyle(card).paddingTop) - parseFloat(getComputedStyle(card).borderTopWidth));
  })`);
  expect(textGaps).toHaveLength(3);
  for (const g of textGaps) expect(g).toBeLessThanOrEqual(4);
  const tops = await page.evaluate<number[]>(
    `[...document.querySelectorAll('form.filters .field')].map((f) => Math.round(f.querySelector('input, select').getBoundingClientRect().top))`,
  );
  expect(tops).toHaveLength(3);
  expect(new Set(tops).size).toBe(1);
  // History: a label of two lines (Per page) still lines up every input, and none spills into its neighbour.
  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial`);
  const fields = await page.evaluate<Array<{ top: number; spill: number }>>(
    `[...document.querySelectorAll('form.filters .form-row')[0].querySelectorAll(':scope > .field')].map((f) => { const i = f.querySelector('input, select'); return { top: Math.round(i.getBoundingClientRect().top), spill: Math.round(i.getBoundingClientRect().right - f.getBoundingClientRect().right) }; })`,
  );
  expect(fields.length).toBeGreaterThanOrEqual(5);
  expect(new Set(fields.map((f) => f.top)).size).toBe(1);
  for (const f of fields) expect(f.spill).toBeLessThanOrEqual(0);
  await screenshots(page, 'walk-historial');
});

it('under the simulator the link page says how to play the phone, and the line shows connected once it is played', async () => {
  await signIn(page, s.url, unlinked.clientKey);
  await page.goto(`${s.url}/panel/c/${unlinked.clienteId}/celulares/${unlinked.celularId}/vincular`);
  const note = page.getByText('This is the simulator');
  await expect.poll(() => note.textContent()).toContain(`pasarela sim scan ${unlinked.celularId}`);
  await page.getByRole('button', { name: 'Show a QR' }).click();
  await expect.poll(() => page.getByRole('img', { name: /QR code/ }).count()).toBe(1);
  // The note stays beside the QR: what the operator does next.
  expect(await note.count()).toBe(1);
  await screenshots(page, 'walk-vincular-sim');
  // What `pasarela sim scan N` asks of the server.
  const scanned = await fetch(`${s.url}/admin/sim/scan`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ celular_id: unlinked.celularId }),
  });
  expect(scanned.status, await scanned.text()).toBe(200);
  await expect.poll(() => page.locator('#vinculo').textContent(), { timeout: 20_000 }).toContain('The line is linked');
});

it("a queued message's msg_id opens its story; a page past the end offers the last page", async () => {
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/cola`);
  // Every line shown: cancel all is a line's, and the page says how to reach it.
  await expect.poll(() => page.locator('main').textContent()).toContain('To cancel every message of one line, choose the line above and press Show.');
  expect(await page.getByRole('button', { name: 'Cancel all of this line' }).count()).toBe(0);
  await page.getByLabel('Line (celular_id)').selectOption(String(L.celularId));
  await page.getByRole('button', { name: 'Show' }).click();
  await expect.poll(() => page.getByRole('button', { name: 'Cancel all of this line' }).count()).toBe(1);
  expect(await page.getByText('To cancel every message of one line').count()).toBe(0);
  await page.getByRole('link', { name: queued }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Message');
  expect(page.url()).toBe(`${s.url}/panel/c/${L.clienteId}/mensajes/${queued}`);
  await expect.poll(() => page.locator('main').textContent()).toContain('encolado');

  await page.goto(`${s.url}/panel/c/${L.clienteId}/historial?page=9`);
  // Past the end: "Last page" was greyed out as if on it; the pager now links it, as the empty state does.
  const last = page.locator('nav.pager').getByRole('link', { name: 'Last page', exact: true });
  expect(await last.getAttribute('href')).toBe(`/panel/c/${L.clienteId}/historial?page=1`);
  await last.click();
  await expect.poll(() => page.locator('main table tbody tr').count()).toBe(1);
  expect(await page.locator('nav.pager').count()).toBe(0);
});

it("the audit log's table fits its box at 1280 px when a change holds a long URL", async () => {
  const url = `https://hooks.example.com/integrations/pasarela/receiver-${'x'.repeat(40)}?token=abcdefghijklmnopqrstuvwxyz`;
  const set = await api(s.url, 'POST', '/api/webhook.php', { key: L.clientKey, json: { url } });
  expect(set.status, set.text).toBe(200);
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/auditoria?accion=webhook.configurar`);
  await expect.poll(() => page.locator('main table tbody').textContent()).toContain('receiver-');
  // The walk: an unbroken URL pushed the table 5 px past its box, the id column cut.
  expect(await page.evaluate<number[]>(`[...document.querySelectorAll('.table-wrap')].map((t) => t.scrollWidth - t.clientWidth)`)).toEqual([0]);
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  await screenshots(page, 'walk-auditoria-url');
});

it('a line created from a number written another way says it is the same number, stored in its international form', async () => {
  await signIn(page, s.url, unlinked.clientKey);
  await page.goto(`${s.url}/panel/c/${unlinked.clienteId}/celulares`);
  // Mexico's mobile prefix: 52 1 55 ... is stored as 52 55 ... (the walk saw its number change, unexplained).
  const national = numeroNuevo().slice(2);
  await page.getByLabel('numero').fill(`+52 1 ${national}`);
  await page.getByRole('button', { name: 'Create line' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Line created');
  const lead = await page.locator('main').textContent();
  expect(lead).toContain(`Line 52${national} is created`);
  expect(lead).toContain(`You typed +52 1 ${national}: this is the same number in the international form pasarela stores and sends from.`);
  // Typed as stored: nothing more said.
  const again = numeroNuevo();
  await page.goto(`${s.url}/panel/c/${unlinked.clienteId}/celulares`);
  await page.getByLabel('numero').fill(again);
  await page.getByRole('button', { name: 'Create line' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Line created');
  expect(await page.locator('main').textContent()).not.toContain('You typed');
});
