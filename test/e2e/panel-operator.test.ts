import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { launchBrowser, overflowAtPhoneWidth, screenshots, signIn } from '../helpers/browser.js';

/** The operator's pages in a real browser: overview, clients (create, edit, balance, key), gateway servers, the audit log. */

let s: TestServer;
let a: Seeded;
let browser: Browser;
let context: BrowserContext;
let page: Page;

/** Where the panel lands a fresh session: the operator's overview, a client's own pages. */
async function landing(cookie: string): Promise<string | null> {
  const r = await fetch(`${s.url}/panel/`, { headers: { cookie: `pasarela_panel=${cookie}` }, redirect: 'manual' });
  return r.status === 200 ? '/panel/' : r.headers.get('location');
}

const sessionOf = async (ctx: BrowserContext) => (await ctx.cookies()).find((c) => c.name === 'pasarela_panel')!.value;

const clientCount = async () => (await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken })).body.total as number;

beforeAll(async () => {
  s = await startTestServer();
  a = await seedClient(s, { saldo: 10 });
  // The simulator has no gateway servers: the test gives the deployment one and puts the seeded line on it.
  const added = await s.core.store.addGatewayServer({ nombre: 'evo-a', tipo: 'evolution', url: 'http://127.0.0.1:9', key: 'k', max_lineas: 50 }, s.clock.now());
  if (!added.ok) throw new Error('add server');
  await s.core.store.updateCelular(a.celularId, { servidor_id: added.servidor.id }, s.clock.now());
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});
beforeEach(async () => {
  context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
  page = await context.newPage();
});
afterEach(async () => {
  await context.close();
});

it('shows the overview, whose figures refresh themselves', async () => {
  await signIn(page, s.url, s.adminToken);
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
  const figures = page.locator('#figures');
  await expect.poll(() => figures.getAttribute('hx-trigger')).toBe('every 5s');
  await expect.poll(() => figures.textContent()).toContain('nodes alive');
  await expect.poll(() => figures.getByRole('cell', { name: 'evo-a' }).count()).toBe(1);
  // A line made now (on any node) shows in the figures without reloading: each poll reads the store.
  const lines = figures
    .locator('.stat')
    .filter({ hasText: /^\d+lines$/ })
    .locator('.n');
  const before = Number(await lines.textContent());
  await seedClient(s);
  await expect
    .poll(
      () =>
        page
          .locator('#figures .stat')
          .filter({ hasText: /^\d+lines$/ })
          .locator('.n')
          .textContent(),
      { timeout: 15_000 },
    )
    .toBe(String(before + 1));
  await screenshots(page, 'overview');
});

it('creates a client: a bad value is refused beside its field and creates nothing; the key is shown once, copied, and signs in', async () => {
  await signIn(page, s.url, s.adminToken);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Clients', exact: true }).click();
  await expect.poll(() => page.getByRole('link', { name: `Cliente` }).count()).toBeGreaterThan(0);
  const before = await clientCount();

  const form = page.locator('form[action="/panel/clientes"][method="post"]');
  await form.getByLabel('nombre').fill('Tienda Luna');
  await form.getByLabel('email').fill('luna@example.com');
  await form.getByLabel(/^saldo/).fill('-1');
  await form.getByRole('button', { name: 'Create client' }).click();
  await expect.poll(() => page.locator('#f-saldo-error').textContent()).toContain('saldo must be an integer from 0');
  expect(await page.locator('#f-saldo-error').textContent()).toContain('api_codigo');
  // What was typed is kept.
  expect(await page.getByLabel('nombre', { exact: true }).inputValue()).toBe('Tienda Luna');
  await screenshots(page, 'clientes-error');

  await page.getByLabel('nombre', { exact: true }).fill('');
  await page.getByLabel(/^saldo/).fill('40');
  await page.getByRole('button', { name: 'Create client' }).click();
  await expect.poll(() => page.locator('#f-nombre-error').textContent()).toContain('nombre:');
  expect(await clientCount()).toBe(before);

  await page.getByLabel('nombre', { exact: true }).fill('Tienda Luna');
  await page.getByLabel('max_celulares').fill('3');
  await page.getByRole('button', { name: 'Create client' }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Client Tienda Luna created');
  const key = (await page.locator('#new-key').textContent())!.trim();
  expect(key).toMatch(/^WAC_/);
  await page.getByRole('button', { name: 'Copy' }).click();
  await expect.poll(() => page.getByRole('button', { name: 'Copied' }).count()).toBe(1);
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
  await screenshots(page, 'cliente-creado');
  expect(await clientCount()).toBe(before + 1);

  // The key opens the panel as that client.
  const other = await browser.newContext();
  try {
    const p2 = await other.newPage();
    await signIn(p2, s.url, key);
    const created = (await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken })).body.clientes.find(
      (c: { cliente: { nombre: string } }) => c.cliente.nombre === 'Tienda Luna',
    );
    expect(await landing(await sessionOf(other))).toBe(`/panel/c/${created.cliente.id}/`);
    expect(key.startsWith(`WAC_${created.cliente.id}_`)).toBe(true);
  } finally {
    await other.close();
  }

  // Search finds it by part of its email; a search that matches nothing says so.
  await page.goto(`${s.url}/panel/clientes`);
  await page.getByLabel('Search by name, email or id').fill('LUNA@');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect.poll(() => page.getByRole('link', { name: 'Tienda Luna' }).count()).toBe(1);
  expect(await page.getByRole('link', { name: /^Cliente \d+$/ }).count()).toBe(0);
  await screenshots(page, 'clientes');
});

it("edits a client's estado, adds balance, and rotates its key, which ends the old key's session", async () => {
  const clientCtx = await browser.newContext();
  try {
    const clientPage = await clientCtx.newPage();
    await signIn(clientPage, s.url, a.clientKey);
    const clientSession = await sessionOf(clientCtx);
    expect(await landing(clientSession)).toBe(`/panel/c/${a.clienteId}/`);

    await signIn(page, s.url, s.adminToken);
    await page.goto(`${s.url}/panel/clientes/${a.clienteId}`);
    // Its lines with their gateway server, and links into its own pages.
    const line = page.getByRole('row').filter({ hasText: a.numero });
    await expect.poll(() => line.textContent()).toContain('evo-a');
    expect(await page.getByRole('link', { name: 'History' }).last().getAttribute('href')).toBe(`/panel/c/${a.clienteId}/historial`);

    await page.getByLabel('estado').selectOption('suspendido');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Saved.');
    const shown = await api(s.url, 'GET', `/admin/clientes/${a.clienteId}`, { key: s.adminToken });
    expect(shown.body.cliente.estado).toBe('suspendido');

    // An empty amount is the API's refusal beside the field.
    await page.getByRole('button', { name: 'Add balance' }).click();
    await expect.poll(() => page.locator('#f-monto-error').textContent()).toContain('monto must be a non-zero integer');
    await page.getByLabel('monto').fill('25');
    await page.getByLabel('motivo').fill('pago de marzo');
    await page.getByRole('button', { name: 'Add balance' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('the global balance is now 35');
    await screenshots(page, 'cliente');

    // A typed confirmation first (D-90).
    await page.getByLabel(`Type the client's id (${a.clienteId}) to confirm`).fill(String(a.clienteId));
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('New client key');
    const key = (await page.locator('#new-key').textContent())!.trim();
    expect(key).toMatch(/^WAC_/);
    expect(key).not.toBe(a.clientKey);
    await screenshots(page, 'cliente-key');
    // The old key's session is over; the old key itself opens nothing.
    expect(await landing(clientSession)).toMatch(/^\/panel\/login/);
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: a.clientKey })).status).toBe(401);
    // The key is on no other page: the client's page again does not show it.
    await page.goto(`${s.url}/panel/clientes/${a.clienteId}`);
    expect(await page.content()).not.toContain(key);
  } finally {
    await clientCtx.close();
  }
});

it('drains and undrains a gateway server and lists the lines it holds', async () => {
  await signIn(page, s.url, s.adminToken);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Gateway servers', exact: true }).click();
  const row = page.getByRole('row').filter({ hasText: 'evo-a' }).first();
  await expect.poll(() => row.textContent()).toContain('activo');
  expect(await page.getByRole('row').filter({ hasText: a.numero }).count()).toBe(1);
  await page.getByRole('button', { name: 'Drain evo-a' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('evo-a is draining');
  await expect.poll(() => page.getByRole('row').filter({ hasText: 'evo-a' }).first().textContent()).toContain('drenando');
  const listed = await api(s.url, 'GET', '/admin/gateways', { key: s.adminToken });
  expect(listed.body.servidores.find((g: { nombre: string }) => g.nombre === 'evo-a').estado).toBe('drenando');
  await screenshots(page, 'servidores');
  await page.getByRole('button', { name: 'Undrain evo-a' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('active again');
});

it('lists the audit log newest first, filtered by client', async () => {
  await signIn(page, s.url, s.adminToken);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log', exact: true }).click();
  const firstAction = page.getByRole('row').nth(1).getByRole('cell').nth(2);
  await expect.poll(() => firstAction.textContent()).toMatch(/^[a-z_]+\.[a-z_]+$/);
  await page.getByLabel('Client id').fill(String(a.clienteId));
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect.poll(() => new URL(page.url()).searchParams.get('cliente_id')).toBe(String(a.clienteId));
  const clients = await page.getByRole('row').locator('td:nth-child(5)').allTextContents();
  expect(clients.length).toBeGreaterThan(0);
  expect(new Set(clients)).toEqual(new Set([String(a.clienteId)]));
  await screenshots(page, 'auditoria');
});

it('filters the audit log by action and client, reads each change before → after, and pages to the oldest and back', async () => {
  const b = await seedClient(s, { saldo: 0 });
  for (let i = 1; i <= 55; i++)
    expect((await api(s.url, 'POST', '/admin/saldo', { key: s.adminToken, json: { cliente_id: b.clienteId, monto: i } })).status).toBe(200);
  expect((await api(s.url, 'PATCH', `/admin/clientes/${b.clienteId}`, { key: s.adminToken, json: { plan: 'ilimitado' } })).status).toBe(200);
  await signIn(page, s.url, s.adminToken);
  await page.goto(`${s.url}/panel/auditoria`);
  await page.getByLabel('Action (accion)').selectOption('saldo.cambiar');
  await page.getByLabel('Client id').fill(String(b.clienteId));
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect.poll(() => new URL(page.url()).searchParams.get('accion')).toBe('saldo.cambiar');
  const rows = page.locator('table.stack tbody tr');
  await expect.poll(() => rows.count()).toBe(50);
  // The newest first: 55, its balance before and after, in words rather than JSON.
  await expect.poll(() => rows.first().locator('ul.detalle').innerText()).toMatch(/saldo_global\s+1485\s+→\s+1540/);
  expect(await rows.first().textContent()).not.toContain('{');
  // The date stays on one line at 1280 px.
  const when = rows.first().locator('time');
  expect((await when.boundingBox())!.height).toBeLessThanOrEqual(32);
  await screenshots(page, 'auditoria-filtrada');
  expect(await overflowAtPhoneWidth(page)).toEqual({ page: 0, tables: [0] });
  // Older, then the oldest page; it has no older page, and its first record is the first change.
  await page.getByRole('link', { name: 'Older', exact: true }).click();
  await expect.poll(() => rows.count()).toBe(5);
  await page.goto(`${s.url}/panel/auditoria?accion=saldo.cambiar&cliente_id=${b.clienteId}`);
  await page.getByRole('link', { name: 'Oldest', exact: true }).click();
  await expect.poll(() => new URL(page.url()).searchParams.get('despues')).toBe('0');
  await expect.poll(() => rows.count()).toBe(50);
  await expect.poll(() => rows.last().locator('ul.detalle').innerText()).toMatch(/saldo_global\s+0\s+→\s+1/);
  expect(await page.locator('.pager .off', { hasText: 'Older' }).count()).toBe(1);
  await screenshots(page, 'auditoria-ultima');
  await page.getByRole('link', { name: 'Newer', exact: true }).click();
  await expect.poll(() => rows.count()).toBe(5);
  await expect.poll(() => rows.first().locator('ul.detalle').innerText()).toMatch(/1485\s+→\s+1540/);
  // A bad bound is refused beside its field in words.
  await page.goto(`${s.url}/panel/auditoria?hasta=ayer`);
  await expect.poll(() => page.locator('#f-hasta-error').textContent()).toContain('expected a calendar date YYYY-MM-DD or an RFC 3339 instant');
  await screenshots(page, 'auditoria-error');
});

it('refuses a forged change without the CSRF token (403) and changes nothing', async () => {
  await signIn(page, s.url, s.adminToken);
  const cookie = await sessionOf(context);
  const before = await clientCount();
  const forged = await fetch(`${s.url}/panel/clientes`, {
    method: 'POST',
    headers: { cookie: `pasarela_panel=${cookie}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ nombre: 'Forged', email: 'forged@example.com' }).toString(),
    redirect: 'manual',
  });
  expect(forged.status).toBe(403);
  expect(await clientCount()).toBe(before);
  const drain = await fetch(`${s.url}/panel/servidores/evo-a/drenar`, {
    method: 'POST',
    headers: { cookie: `pasarela_panel=${cookie}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
    redirect: 'manual',
  });
  expect(drain.status).toBe(403);
  expect((await api(s.url, 'GET', '/admin/gateways', { key: s.adminToken })).body.servidores[0].estado).toBe('activo');
});

it('keeps the operator pages from a client session', async () => {
  await signIn(page, s.url, (await seedClient(s)).clientKey);
  for (const path of ['/panel/clientes', '/panel/servidores', '/panel/auditoria', '/panel/resumen']) {
    const r = await page.goto(`${s.url}${path}`);
    expect(r?.status(), path).toBe(403);
  }
});
