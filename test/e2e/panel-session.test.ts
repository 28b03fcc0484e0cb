import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { launchBrowser, screenshots, signIn } from '../helpers/browser.js';

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

it('refuses a wrong credential beside its field, and signs the operator in and out', async () => {
  await page.goto(`${s.url}/panel/`);
  await expect.poll(() => new URL(page.url()).pathname).toBe('/panel/login');
  await page.getByLabel('Token or key').fill('not-a-real-token-000000');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect.poll(() => page.locator('#f-credencial-error').textContent()).toContain('api_codigo 200');
  await screenshots(page, 'login');

  await signIn(page, s.url, s.adminToken);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'pasarela_panel')!;
  expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/panel/' });
  // The token is in no page, cookie or URL.
  expect(await page.content()).not.toContain(s.adminToken);
  expect(session.value).not.toContain(s.adminToken);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect.poll(() => new URL(page.url()).pathname).toBe('/panel/login');
  await expect.poll(() => page.getByRole('status').textContent()).toContain('signed out');
  // The old cookie opens nothing.
  const again = await fetch(`${s.url}/panel/`, { headers: { cookie: `pasarela_panel=${session.value}` }, redirect: 'manual' });
  expect(again.status).toBe(303);
  expect(again.headers.get('location')).toMatch(/^\/panel\/login/);
});
