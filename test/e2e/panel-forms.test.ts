import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { PANEL_SESSION } from '../../src/core/auth/panel-sessions.js';
import { api, seedClient, startTestServer, type TestServer } from '../helpers/server.js';
import { launchBrowser, overflowAtPhoneWidth, postTwice, screenshots, signIn } from '../helpers/browser.js';

/**
 * The panel's forms in Chromium (issue 36, D-89, D-90): a form sent twice
 * (a reload, a double submit 40 ms apart) acts once; a key is shown once on
 * the page its POST redirects to and a reload of that page shows none;
 * rotating a key and deleting a webhook ask for a typed confirmation, a
 * deleted webhook comes back with Restore; a session that ended says why
 * and returns to the page; a form posted after expiry says it was not
 * saved; the webhook secret's rule beside its field; a deleted line's page.
 */

let s: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true });
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

const clientCount = async () => (await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken })).body.clientes.length as number;
const lineCount = async (key: string) => (await api(s.url, 'GET', '/api/celulares.php', { key })).body.celulares.length as number;
const path = (p: Page) => new URL(p.url()).pathname;

/** The page's form posted twice 40 ms apart (test/helpers/browser.ts): both answers, unfollowed. */
const doubleSubmit = (p: Page, action: string, fill: Record<string, string>) => postTwice(p, s.url, action, fill);

it('create client: a double submit and a reload act once, and the key is shown once', async () => {
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/clientes`);
  const before = await clientCount();
  const [one, two] = await doubleSubmit(page, '/panel/clientes', { nombre: 'Dos Clics', email: 'dos@example.com', plan: 'medido' });
  expect([one.status(), two.status()]).toEqual([303, 303]);
  expect(two.headers().location).toBe(one.headers().location);
  expect(await clientCount()).toBe(before + 1);

  // The page's form was the one sent (its token is used): sent again it only goes where the first went.
  await page.locator('form[action="/panel/clientes"][method="post"]').getByRole('button', { name: 'Create client' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('it acted once');
  expect(await clientCount()).toBe(before + 1);

  // A fresh form, as a person: the key page, then a reload of it.
  await page.goto(`${s.url}/panel/clientes`);
  const form = page.locator('form[action="/panel/clientes"][method="post"]');
  await form.getByLabel('nombre').fill('Un Clic');
  await form.getByLabel('email').fill('uno@example.com');
  await form.getByRole('button', { name: 'Create client' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Client Un Clic created');
  expect(path(page)).toMatch(/^\/panel\/mostrar\//);
  const key = (await page.locator('#new-key').textContent())!.trim();
  expect(key).toMatch(/^WAC_/);
  await screenshots(page, 'forms-key-shown');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [] });
  expect(await clientCount()).toBe(before + 2);

  await page.reload();
  await expect.poll(() => page.getByText('This was shown once and is no longer shown').count()).toBe(1);
  expect(await page.content()).not.toContain(key);
  await screenshots(page, 'forms-key-gone');
  expect(await clientCount()).toBe(before + 2);
  // The key shown is the one in use.
  expect((await api(s.url, 'GET', '/api/saldo.php', { key })).status).toBe(200);
});

it("rotate a client's key: refused without its confirmation, then once, whatever the double submit or reload", async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/clientes/${a.clienteId}`);
  // The button waits for the typed id from the start; a form sent without the page's script is refused by the server.
  const rotate = page.getByRole('button', { name: 'Rotate key' });
  await expect.poll(() => rotate.isDisabled()).toBe(true);
  await page.getByLabel(`Type the client's id (${a.clienteId}) to confirm`).fill(`${a.clienteId}9`);
  expect(await rotate.isDisabled()).toBe(true);
  await rotate.evaluate((b) => b.removeAttribute('disabled'));
  await rotate.click();
  await expect.poll(() => page.locator('#f-confirmacion-error').textContent()).toContain(`type the client's id, ${a.clienteId}, to rotate its key`);
  await screenshots(page, 'forms-rotate-refused');
  expect((await api(s.url, 'GET', '/api/saldo.php', { key: a.clientKey })).status).toBe(200);

  // Twice at once: one rotation (the audit log has one), both sent to the same page, which shows the key once.
  const [one, two] = await doubleSubmit(page, `/panel/clientes/${a.clienteId}/rotar-key`, { confirmacion: String(a.clienteId) });
  expect(two.headers().location).toBe(one.headers().location);
  const audit = await api(s.url, 'GET', `/admin/auditoria?cliente_id=${a.clienteId}`, { key: s.adminToken });
  const rotations = JSON.stringify(audit.body).split('cliente.rotar_key').length - 1;
  expect(rotations, audit.text).toBe(1);
  await page.goto(`${s.url}${one.headers().location}`);
  const key = (await page.locator('#new-key').textContent())!.trim();
  expect((await api(s.url, 'GET', '/api/saldo.php', { key })).status).toBe(200);
  expect((await api(s.url, 'GET', '/api/saldo.php', { key: a.clientKey })).status).toBe(401);
  await page.reload();
  await expect.poll(() => page.getByText('This was shown once and is no longer shown').count()).toBe(1);
  // The reload rotated nothing: the key shown works still.
  expect((await api(s.url, 'GET', '/api/saldo.php', { key })).status).toBe(200);
});

it('create line: a double submit creates one line; the keys are shown once', async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares`);
  const before = await lineCount(a.clientKey);
  const [one, two] = await doubleSubmit(page, `/panel/c/${a.clienteId}/celulares`, { numero: '5215577001122', nombre_interno: 'doble' });
  expect([one.status(), two.status()]).toEqual([303, 303]);
  expect(two.headers().location).toBe(one.headers().location);
  expect(await lineCount(a.clientKey)).toBe(before + 1);
  await page.goto(`${s.url}${one.headers().location}`);
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Line created');
  expect(await page.locator('#new-key').textContent()).toMatch(/^WA_/);
  expect(await page.locator('#new-token').textContent()).toMatch(/^[0-9a-f]{64}$/);
  await screenshots(page, 'forms-line-keys');
  await page.reload();
  await expect.poll(() => page.getByText('This was shown once and is no longer shown').count()).toBe(1);
  expect(await lineCount(a.clientKey)).toBe(before + 1);
});

it('webhook: the secret x is refused beside its field; delete asks for its confirmation; restore brings it back', async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  await page.goto(`${s.url}/panel/c/${a.clienteId}/webhook`);
  await page.getByLabel('URL').fill('http://127.0.0.1:9/hook');
  await page.getByLabel('Signing secret').selectOption('propio');
  await page.getByLabel('Your own secret').fill('x');
  await page.getByRole('button', { name: 'Save webhook' }).click();
  await expect.poll(() => page.locator('#f-secret-error').textContent()).toContain('secret: 1 character is too short: 24 to 256 printable ASCII characters');
  expect(await page.locator('#f-secret-hint').textContent()).toContain('24 to 256 printable ASCII characters, no spaces');
  await screenshots(page, 'forms-webhook-secret-refused');
  expect((await api(s.url, 'GET', '/api/webhook.php', { key: a.clientKey })).body.configurado).toBe(false);

  await page.getByLabel('Your own secret').fill('un-secreto-de-veinticuatro-o-mas');
  await page.getByRole('button', { name: 'Save webhook' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Webhook saved.');

  // Delete: its button waits for the typed word; the server refuses without it too.
  const del = page.getByRole('button', { name: 'Delete the webhook' });
  expect(await del.isDisabled()).toBe(true);
  await page.getByLabel('Type delete to confirm').fill('borrar');
  expect(await del.isDisabled()).toBe(true);
  await screenshots(page, 'forms-webhook-delete');
  await page.getByLabel('Type delete to confirm').fill('delete');
  await del.click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Webhook removed');
  expect((await api(s.url, 'GET', '/api/webhook.php', { key: a.clientKey })).body.configurado).toBe(false);

  await page.getByRole('button', { name: 'Restore the previous configuration' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Webhook restored');
  expect((await api(s.url, 'GET', '/api/webhook.php', { key: a.clientKey })).body).toMatchObject({
    configurado: true,
    url: 'http://127.0.0.1:9/hook',
    has_secret: true,
  });
});

it('a session ended on an open page (its key rotated): the sign-in page says why and returns to the page, not the polled part', async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  const line = `/panel/c/${a.clienteId}/celulares/${a.celularId}`;
  await page.goto(`${s.url}${line}`);
  const rotated = await api(s.url, 'POST', `/admin/clientes/${a.clienteId}/rotar-key`, { key: s.adminToken });
  expect(rotated.status).toBe(200);
  // The session badge's next poll ends on the sign-in page.
  await page.waitForURL((u) => u.pathname === '/panel/login', { timeout: 30_000 });
  expect(new URL(page.url()).searchParams.get('next')).toBe(line);
  await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('Your session ended: the key or token it was opened with was rotated');
  await screenshots(page, 'forms-session-ended');
  await page.getByLabel('Token or key').fill(rotated.body.api_key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname === line);
});

it("signed out in another tab: the open page's next poll reaches the sign-in page, which says so and returns to the page", async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  const line = `/panel/c/${a.clienteId}/celulares/${a.celularId}`;
  await page.goto(`${s.url}${line}`);
  // A second tab of the same browser (same cookies) signs out.
  const other = await context.newPage();
  await other.goto(`${s.url}${line}`);
  await other.getByRole('button', { name: 'Sign out' }).click();
  await other.waitForURL((u) => u.pathname === '/panel/login');
  // The first tab's session badge polls, and is sent to the sign-in page with the reason.
  await page.waitForURL((u) => u.pathname === '/panel/login', { timeout: 30_000 });
  const to = new URL(page.url());
  expect(Object.fromEntries(to.searchParams)).toEqual({ next: line, fin: 'signed_out' });
  await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('Your session ended: you signed out (in this tab or another).');
  await screenshots(page, 'forms-signed-out-elsewhere');
  await page.getByLabel('Token or key').fill(a.clientKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname === line);
});

it('a form posted after the session expired: the sign-in page says the change was not saved, and returns to the page', async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  const line = `/panel/c/${a.clienteId}/celulares/${a.celularId}`;
  await page.goto(`${s.url}${line}`);
  await page.getByLabel('nombre_interno').fill('nombre nuevo');
  (s.clock as ManualClock).advance(PANEL_SESSION.idleMs + 1_000);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL((u) => u.pathname === '/panel/login');
  await expect.poll(() => page.getByRole('alert').first().textContent()).toContain(`it expired after ${PANEL_SESSION.idleMs / 60_000} minutes idle`);
  expect(await page.getByRole('alert').first().textContent()).toContain('Your change was not saved.');
  await screenshots(page, 'forms-change-not-saved');
  const cel = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
  expect(JSON.stringify(cel.body)).not.toContain('nombre nuevo');
  await page.getByLabel('Token or key').fill(a.clientKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname === line);
});

it("a deleted line's open page says so and disables its forms; a send from it says so too", async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  const line = `/panel/c/${a.clienteId}/celulares/${a.celularId}`;
  await page.goto(`${s.url}${line}`);
  await page.getByLabel('destinatario').fill('5215512345678');
  await page.getByLabel('mensaje').fill('hola');
  expect((await api(s.url, 'POST', '/api/celular_eliminar.php', { key: a.clientKey, json: { id: a.celularId } })).status).toBe(200);
  await expect.poll(() => page.locator('.gone-banner').textContent(), { timeout: 30_000 }).toContain('This line was deleted');
  expect(await page.getByRole('button', { name: 'Send test text' }).isDisabled()).toBe(true);
  expect(await page.content()).not.toContain('api_codigo 600');
  await screenshots(page, 'forms-line-deleted');
  // Its page, opened again, says so as its title.
  await page.goto(`${s.url}${line}`);
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('This line was deleted');
  await screenshots(page, 'forms-line-deleted-page');
});
