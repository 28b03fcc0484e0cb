import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { SIM_PUSH_NAME, type SimGateway } from '../../src/gateways/sim.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';
import { until } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine } from '../server/send-helpers.js';

/**
 * The line page's Session card in a real browser, on the simulator: the
 * phone's name and number, Restart (the line connects again by itself) and
 * Log out once the box is ticked, each answered with a notice; the pages
 * screenshotted (axe-checked) at 1280 and 390 px, with no sideways scroll.
 */

let s: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  s = await startTestServer();
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

it('the client restarts the session and logs it out from the line page', async () => {
  const L = await linkedLine(s);
  await signIn(page, s.url, L.clientKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/celulares/${L.celularId}`);
  const card = page.locator('section[aria-labelledby="session-h"]');
  await card.getByText(`${SIM_PUSH_NAME} · +${L.numero}`).waitFor();
  // A connected line offers a new link as a secondary action, not as the page's first button.
  expect(await page.getByRole('link', { name: 'Link this line' }).count()).toBe(0);
  await page.getByRole('link', { name: 'Link it again' }).waitFor();
  await screenshots(page, 'sesion-conectada');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [] });

  await card.getByRole('button', { name: 'Restart session' }).click();
  await page.getByRole('status').filter({ hasText: 'restarting (status connecting)' }).waitFor();
  await until(async () => (await s.core.store.getCelular(L.celularId))!.last_status === 'connected', { what: 'connected again' });
  // The card's status follows by itself, without a reload.
  await card.locator('#session-card-status').getByText('connected', { exact: true }).waitFor({ timeout: 20_000 });

  // The box must be ticked first: the browser keeps the form from going without it.
  const logout = card.getByRole('button', { name: 'Log out' });
  await logout.click();
  expect((await s.core.store.getCelular(L.celularId))!.last_status).toBe('connected');
  await card.getByLabel(/logging out ends the link/).check();
  await screenshots(page, 'sesion-confirmar');
  await logout.click();
  await page
    .getByRole('status')
    .filter({ hasText: `Line ${L.numero} logged out` })
    .waitFor();
  await card.getByText('There is no session to log out or restart').waitFor();
  expect((await s.core.store.getCelular(L.celularId))!).toMatchObject({ last_status: 'logged_out', vinculado: 0, estado: 'desconectado' });
  await screenshots(page, 'sesion-cerrada');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [] });
});

it("a line's own key restarts its line; a gateway refusal shows above the card", async () => {
  const L = await linkedLine(s);
  await signIn(page, s.url, L.celularKey);
  await page.goto(`${s.url}/panel/c/${L.clienteId}/celulares/${L.celularId}`);
  const card = page.locator('section[aria-labelledby="session-h"]');
  (s.core.gateway as SimGateway).setOutage(true);
  try {
    await card.getByRole('button', { name: 'Restart session' }).click();
    await card.getByRole('alert').filter({ hasText: 'api_codigo 700' }).waitFor();
    await screenshots(page, 'sesion-error');
  } finally {
    (s.core.gateway as SimGateway).setOutage(false);
  }
  await card.getByRole('button', { name: 'Restart session' }).click();
  await page.getByRole('status').filter({ hasText: 'restarting' }).waitFor();
});
