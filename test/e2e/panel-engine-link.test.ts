import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { launchBrowser, screenshots, signIn } from '../helpers/browser.js';
import { numeroNuevo } from '../helpers/expect.js';
import { api, seedClient, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/**
 * The panel's link page with the engine (`--gateway baileys`, in process)
 * against the fake network: the page shows the engine's QR, the phone scans
 * it (the fake cannot read the page's image, so the QR's text comes from the
 * API, the same socket's current QR) and the page turns to linked without a
 * reload.
 */
let fake: FakeNetwork;
let s: TestServer;
let browser: Browser;
let page: Page;
const LINE = numeroNuevo();

beforeAll(async () => {
  fake = await startFakeNetwork();
  await fake.trustInProcess();
  s = await startTestServer({ dataDir: tempDir('pasarela-engine-panel-'), gateway: 'baileys', baileysWsUrl: fake.wsUrl, engine: { ca: fake.ca } });
  browser = await launchBrowser();
  page = await (await browser.newContext()).newPage();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await fake?.close();
});

it("the link page shows the engine's QR and turns to linked by itself once the phone scans it", async () => {
  const a = await seedClient(s, { numero: LINE, saldo: 10 });
  await signIn(page, s.url, a.clientKey);
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares/${a.celularId}/vincular`);
  await page.getByRole('button', { name: 'Show a QR' }).click();
  const img = page.getByRole('img', { name: /QR code/ });
  await img.waitFor({ timeout: 60_000 });
  expect(await img.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
  await screenshots(page, 'engine-vincular-qr');
  await page.evaluate(() => ((globalThis as unknown as { sinRecargar: boolean }).sinRecargar = true));

  const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${a.celularId}`, { key: a.clientKey, json: {} });
  expect(qr.body.status, qr.text).toBe('need_scan');
  await fake.scanQr(qr.body.qr as string, LINE);
  await page.getByText('The line is linked').waitFor({ timeout: 60_000 });
  expect(await page.evaluate(() => (globalThis as unknown as { sinRecargar?: boolean }).sinRecargar)).toBe(true);
  expect(await page.locator('#vinculo').getAttribute('hx-trigger')).toBeNull();
  await screenshots(page, 'engine-vincular-conectado');
  expect(fake.maxConcurrent(LINE)).toBe(1);
});
