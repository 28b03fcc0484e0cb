import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type TestServer } from '../helpers/server.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';

/**
 * A client's pools of lines in a real browser (issue 40, docs/pools.md):
 * create one from the menu's Pools, a taken name refused beside its field,
 * edit its name, lines and wait, delete it after typing its name; a reload
 * after each change shows the result again and makes nothing again.
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

const nuevoNumero = () => `52155${String(10000000 + Math.floor(Math.random() * 89999999)).slice(0, 8)}`;

it('creates, edits and deletes a pool; a taken name is shown beside nombre; a reload repeats nothing', async () => {
  const a = await seedClient(s);
  const second = await api(s.url, 'POST', '/api/celular_crear.php', { key: a.clientKey, json: { numero: nuevoNumero(), nombre_interno: 'Soporte' } });
  expect(second.status, second.text).toBe(201);
  const two = { id: second.body.celular_id as number, numero: second.body.celular.numero as string };
  const pools = async () =>
    (await api(s.url, 'GET', '/api/grupos.php', { key: a.clientKey })).body.grupos as Array<{
      id: number;
      nombre: string;
      celulares: number[];
      conmutacion_s: number | null;
    }>;

  await signIn(page, s.url, a.clientKey);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Pools', exact: true }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Pools');
  await page.getByText('No pools yet. Create one below.').waitFor();

  // Create.
  await page.getByLabel('nombre', { exact: true }).fill('otp');
  await page.getByRole('checkbox', { name: new RegExp(a.numero) }).check();
  await page.getByLabel(/conmutacion_s/).fill('120');
  await page.getByRole('button', { name: 'Create pool' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('Pool otp created.');
  const row = page.getByRole('row').filter({ hasText: 'otp' });
  await expect.poll(() => row.textContent()).toContain(a.numero);
  expect(await row.textContent()).toContain('120 s');
  expect(await pools()).toMatchObject([{ nombre: 'otp', celulares: [a.celularId], conmutacion_s: 120 }]);

  // A reload after the POST shows the list again: it creates nothing, and the notice was shown once.
  await page.reload();
  await page.getByRole('link', { name: 'otp', exact: true }).waitFor();
  expect(await page.getByRole('status').count()).toBe(0);
  expect(await pools()).toHaveLength(1);

  // A taken name: the API's 409 beside nombre, what was typed kept, nothing made.
  await page.getByLabel('nombre', { exact: true }).fill('otp');
  await page.getByRole('checkbox', { name: new RegExp(two.numero) }).check();
  await page.getByRole('button', { name: 'Create pool' }).click();
  const taken = page.locator('#f-nombre-error');
  await expect.poll(() => taken.textContent()).toContain('a pool named "otp" already exists');
  expect(await taken.textContent()).toContain('api_codigo 644');
  expect(await page.getByLabel('nombre', { exact: true }).getAttribute('aria-invalid')).toBe('true');
  expect(await page.getByRole('checkbox', { name: new RegExp(two.numero) }).isChecked()).toBe(true);
  await screenshots(page, 'grupos-error');
  expect(await pools()).toHaveLength(1);
  await page.getByLabel('nombre', { exact: true }).fill('ventas');
  await page.getByRole('button', { name: 'Create pool' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('Pool ventas created.');
  await page.getByRole('link', { name: 'ventas', exact: true }).waitFor();
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  await screenshots(page, 'grupos');

  // Edit: a new name, both lines, no failover.
  await page.getByRole('link', { name: 'otp', exact: true }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Pool otp');
  expect(await page.getByRole('checkbox', { name: new RegExp(a.numero) }).isChecked()).toBe(true);
  expect(await page.getByLabel(/conmutacion_s/).inputValue()).toBe('120');
  await screenshots(page, 'grupo');
  await page.getByLabel('nombre', { exact: true }).fill('ventas');
  await page.getByRole('button', { name: 'Save pool' }).click();
  await expect.poll(() => page.locator('#f-nombre-error').textContent()).toContain('already exists');
  await page.getByLabel('nombre', { exact: true }).fill('otp-mx');
  await page.getByRole('checkbox', { name: new RegExp(two.numero) }).check();
  await page.getByLabel(/conmutacion_s/).fill('');
  await page.getByRole('button', { name: 'Save pool' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('Pool otp-mx saved.');
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Pool otp-mx');
  const edited = (await pools()).find((g) => g.nombre === 'otp-mx')!;
  expect(edited).toMatchObject({ celulares: [a.celularId, two.id].sort((x, y) => x - y), conmutacion_s: null });
  const updatedAt = (await api(s.url, 'GET', '/api/grupos.php', { key: a.clientKey })).body.grupos.find((g: { id: number }) => g.id === edited.id).updated_at;
  await page.reload();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Pool otp-mx');
  expect(await page.getByRole('status').count()).toBe(0);
  expect((await api(s.url, 'GET', '/api/grupos.php', { key: a.clientKey })).body.grupos.find((g: { id: number }) => g.id === edited.id).updated_at).toBe(
    updatedAt,
  );

  // Delete: the button waits for the pool's exact name.
  const del = page.getByRole('button', { name: 'Delete pool' });
  await page.getByLabel(/Type the pool's name/).fill('otp');
  await expect.poll(() => del.isDisabled()).toBe(true);
  await page.getByLabel(/Type the pool's name/).fill('otp-mx');
  await expect.poll(() => del.isDisabled()).toBe(false);
  await del.click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('Pool otp-mx deleted; its lines stay.');
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/panel/c/${a.clienteId}/grupos`);
  expect((await pools()).map((g) => g.nombre)).toEqual(['ventas']);
  await page.reload();
  await page.getByRole('link', { name: 'ventas', exact: true }).waitFor();
  expect((await pools()).map((g) => g.nombre)).toEqual(['ventas']);
  // Its lines stay.
  expect((await api(s.url, 'GET', `/api/celular.php?id=${two.id}`, { key: a.clientKey })).status).toBe(200);
});
