import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { PANEL_SESSION } from '../../src/core/auth/panel-sessions.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { admin, linkedLine, numeroNuevo, send, TEXT, type Line } from '../server/send-helpers.js';

/**
 * The live event monitor in a real Chromium (issue 36, item 6, Done when):
 * the monitor shows a new event without a reload; paused, new events are
 * held and counted, and Resume shows them; a kind filter restarts the
 * stream with only that kind; the session's end shows a link to sign in.
 */

let s: TestServer;
let L: Line;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  s = await startTestServer({ simDeliveryMs: 10, simReadMs: 20, queue: { gapMinMs: 0, gapMaxMs: 0 }, streamTiming: { pollMs: 100 } });
  L = await linkedLine(s);
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

/** expect.poll's wait: a loaded 2-core machine is slow, and the count's live region changes at most every 2 s. */
const SOON = { timeout: 20_000 };

const rows = () => page.locator('[data-monitor-list] li:not([hidden])');
const status = () => page.locator('[data-monitor-status]').textContent();
const count = () => page.locator('[data-monitor-count]').textContent();
const receive = (texto: string) => admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: numeroNuevo(), texto });
const sendOne = async () => {
  const r = await send(s, L, TEXT, { destinatario: numeroNuevo(), mensaje: 'hola monitor', directo: 1 });
  expect(r.status, r.text).toBe(200);
  return r.body.msg_id as string;
};

/** A mark set in the page: still there after, the page was never reloaded. */
const mark = () => page.evaluate('window.__monitorMark = 1');
const marked = () => page.evaluate<number | undefined>('window.__monitorMark');

async function openMonitor(path = `/panel/c/${L.clienteId}/eventos`): Promise<void> {
  await page.goto(`${s.url}${path}`);
  await expect.poll(status, SOON).toContain('Connected');
  await mark();
}

it('shows a new event without a reload, newest on top, its body in a disclosure', async () => {
  await signIn(page, s.url, L.clientKey);
  // Linked from the client's account page.
  await page.getByRole('link', { name: 'Live events', exact: true }).click();
  await page.waitForURL((u) => u.pathname === `/panel/c/${L.clienteId}/eventos`);
  await expect.poll(status, SOON).toContain('Connected');
  await mark();
  expect(await rows().count()).toBe(0);
  await screenshots(page, 'eventos-empty');

  const msgId = await sendOne();
  // pendiente, enviado, entregado, leido: each a row, the newest first.
  await expect.poll(() => rows().count(), SOON).toBe(4);
  const first = rows().first();
  await expect.poll(() => first.locator('.event-summary').textContent(), SOON).toContain('entregado → leido');
  await expect.poll(() => rows().last().locator('.event-summary').textContent(), SOON).toContain('pendiente');
  expect(await first.locator('.event-summary').textContent()).toContain(msgId);
  expect(await first.locator('.badge').textContent()).toBe('message.status');
  expect(await first.locator('time').textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  expect(await first.textContent()).toContain(`line ${L.celularId}`);
  await first.getByText('Body').click();
  await expect.poll(() => first.locator('pre').isVisible(), SOON).toBe(true);
  expect(JSON.parse((await first.locator('pre').textContent())!)).toMatchObject({ evento: 'message.status', data: { msg_id: msgId, estado: 'leido' } });
  await expect.poll(count, SOON).toContain('4 events shown');
  expect(await marked()).toBe(1);
  await screenshots(page, 'eventos');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [] });
});

it('the count is never one behind: an event on its own is counted as it is shown', async () => {
  await signIn(page, s.url, L.clientKey);
  await openMonitor(`/panel/c/${L.clienteId}/eventos?eventos=messages.received`);
  // Read in the page, in the same turn as the row appears: the count must already say it.
  const seen = page.waitForFunction<string>(
    `(() => {
    const rows = document.querySelectorAll('[data-monitor-list] li:not([hidden])').length;
    return rows === 1 ? document.querySelector('[data-monitor-count]').textContent : false;
  })()`,
    undefined,
    { timeout: 20_000, polling: 'raf' },
  );
  expect((await receive('solo uno')).status).toBe(200);
  expect(await (await seen).jsonValue()).toBe('1 event shown');
  // A burst is counted too, once its last event has been shown.
  expect((await receive('dos')).status).toBe(200);
  expect((await receive('tres')).status).toBe(200);
  await expect.poll(() => rows().count(), SOON).toBe(3);
  await expect.poll(count, SOON).toBe('3 events shown');
});

it('paused, new events are held and counted; Resume shows them', async () => {
  await signIn(page, s.url, L.clientKey);
  await openMonitor(`/panel/c/${L.clienteId}/eventos?eventos=messages.received`);
  await page.getByRole('button', { name: 'Pause' }).click();
  expect((await receive('uno')).status).toBe(200);
  expect((await receive('dos')).status).toBe(200);
  await expect.poll(count, SOON).toContain('Paused: 2 new events held');
  expect(await rows().count()).toBe(0);
  await screenshots(page, 'eventos-paused');
  await page.getByRole('button', { name: 'Resume' }).click();
  await expect.poll(() => rows().count(), SOON).toBe(2);
  expect(await rows().first().locator('.event-summary').textContent()).toContain(': dos');
  expect(await rows().last().locator('.event-summary').textContent()).toContain(': uno');
  await expect.poll(count, SOON).toBe('2 events shown');
  expect(await marked()).toBe(1);
});

it('a kind filter restarts the stream with that kind only, and keeps the address in step', async () => {
  await signIn(page, s.url, L.clientKey);
  await openMonitor();
  await sendOne();
  await expect.poll(() => rows().count(), SOON).toBe(4);
  await page.getByLabel('messages.received').check();
  await expect.poll(() => new URL(page.url()).search, SOON).toBe('?eventos=messages.received');
  // The rows of other kinds are hidden, and the new stream carries the received messages only.
  await expect.poll(() => rows().count(), SOON).toBe(0);
  await expect.poll(status, SOON).toContain('Connected');
  await sendOne();
  expect((await receive('solo recibidos')).status).toBe(200);
  await expect.poll(() => rows().count(), SOON).toBe(1);
  expect(await rows().first().locator('.badge').textContent()).toBe('messages.received');
  // The sent message's events arrived before the received one (log order), so none of them was let through.
  expect(await page.locator('[data-monitor-list] li[data-kind="message.status"]:not([hidden])').count()).toBe(0);
  expect(await marked()).toBe(1);
});

it('a dropped connection resumes where it left off: the events made meanwhile arrive, once', async () => {
  // The browser reaches the server through a proxy the test can cut: an outage without touching the server.
  const proxy = await startTcpProxy('127.0.0.1', Number(new URL(s.url).port));
  try {
    const via = `http://127.0.0.1:${proxy.port}`;
    await signIn(page, via, L.clientKey);
    await page.goto(`${via}/panel/c/${L.clienteId}/eventos?eventos=messages.received`);
    await expect.poll(status, SOON).toContain('Connected');
    await mark();
    expect((await receive('antes')).status).toBe(200);
    await expect.poll(() => rows().count(), SOON).toBe(1);
    await proxy.cut();
    await expect.poll(status, SOON).toContain('Reconnecting');
    expect((await receive('durante')).status).toBe(200);
    await proxy.restore();
    await expect.poll(() => rows().count(), SOON).toBe(2);
    expect(await rows().first().locator('.event-summary').textContent()).toContain(': durante');
    await expect.poll(status, SOON).toContain('Connected');
    expect((await receive('después')).status).toBe(200);
    await expect.poll(() => rows().count(), SOON).toBe(3);
    expect(await page.locator('[data-monitor-list] .event-summary').allTextContents()).toEqual([
      expect.stringContaining(': después'),
      expect.stringContaining(': durante'),
      expect.stringContaining(': antes'),
    ]);
    expect(await marked()).toBe(1);
  } finally {
    await proxy.close();
  }
});

it("a line's session: the line page links its monitor; the session's end shows a link to sign in", async () => {
  await signIn(page, s.url, L.celularKey);
  await page.getByRole('link', { name: 'Live events of this line' }).click();
  await page.waitForURL((u) => u.pathname === `/panel/c/${L.clienteId}/eventos`);
  await expect.poll(status, SOON).toContain('Connected');
  expect((await receive('para la línea')).status).toBe(200);
  await expect.poll(() => rows().count(), SOON).toBe(1);
  (s.clock as ManualClock).advance(PANEL_SESSION.idleMs + 1000);
  await expect.poll(status, SOON).toContain('Your session has ended.');
  const again = page.getByRole('link', { name: 'Sign in again' });
  expect(await again.getAttribute('href')).toBe(`/panel/login?next=${encodeURIComponent(`/panel/c/${L.clienteId}/eventos?celular_id=${L.celularId}`)}`);
  // What was shown stays.
  expect(await rows().count()).toBe(1);
  await screenshots(page, 'eventos-ended');
});

it('opens with the last 20 events of the client, newest first, read from the log; then follows live, missing none', async () => {
  const M = await linkedLine(s);
  const got = (texto: string) => admin(s, 'POST', '/admin/sim/receive', { celular_id: M.celularId, de: numeroNuevo(), texto });
  for (let i = 1; i <= 25; i++) expect((await got(`previo ${i}`)).status).toBe(200);
  await signIn(page, s.url, M.clientKey);
  await openMonitor(`/panel/c/${M.clienteId}/eventos?eventos=messages.received`);
  // Read back from the log (a keyset walk by seq): the last 20, not the 5 before them; the live list starts after them.
  const earlier = page.locator('section[aria-labelledby="earlier-h"] li');
  expect(await earlier.count()).toBe(20);
  expect(await earlier.first().textContent()).toContain('previo 25');
  expect(await earlier.last().textContent()).toContain('previo 6');
  expect(await page.getByRole('heading', { name: /Before you opened this page/ }).textContent()).toContain('the last 20 events');
  expect(await rows().count()).toBe(0);
  expect((await got('en vivo')).status).toBe(200);
  await expect.poll(() => rows().count(), SOON).toBe(1);
  expect(await rows().first().locator('.event-summary').textContent()).toContain(': en vivo');
  expect(await marked()).toBe(1);
});

it('the events read back as the page opens each say what they are, as a live one does (the walk: only an id and a kind)', async () => {
  const M = await linkedLine(s);
  const sent = await send(s, M, TEXT, { destinatario: numeroNuevo(), mensaje: 'antes de abrir' });
  expect(sent.status, sent.text).toBe(200);
  const msgId = sent.body.msg_id as string;
  // Sent, delivered and read (the simulator's receipts come within 20 ms): three message.status events in the log.
  await signIn(page, s.url, M.clientKey);
  await expect
    .poll(async () => {
      await openMonitor(`/panel/c/${M.clienteId}/eventos?eventos=message.status`);
      return page.locator('section[aria-labelledby="earlier-h"] li').count();
    }, SOON)
    .toBeGreaterThanOrEqual(3);
  const summaries = await page.locator('section[aria-labelledby="earlier-h"] li .event-summary').allTextContents();
  expect(summaries.length).toBe(await page.locator('section[aria-labelledby="earlier-h"] li').count());
  // Newest first: read last; each names the estado, the kind of message and the message itself.
  expect(summaries[0]).toMatch(/leido · to \d+ · texto · /);
  for (const line of summaries) expect(line).toContain(msgId);
  await screenshots(page, 'eventos-earlier-summaries');
});
