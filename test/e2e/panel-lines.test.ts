import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { api, seedClient, type Seeded, startTestServer, type TestServer } from '../helpers/server.js';
import { cutSelects, launchBrowser, screenshots, signIn } from '../helpers/browser.js';
import { linkedLine } from '../server/send-helpers.js';

/**
 * The client's account, lines and linking pages in a real browser (issue 27):
 * create a line and copy its keys, link it by QR while the test plays the
 * phone (the simulator's scan), send a test text to `leido`, the API's
 * errors beside their fields, a celular key's single line, and a line name
 * that is markup rendered as text.
 */

let s: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const QR_ROTATE_MS = 20_000;

beforeAll(async () => {
  // Receipts at once: a direct test send reaches leido without waiting.
  s = await startTestServer({ simDeliveryMs: 0, simReadMs: 0, simQrMs: QR_ROTATE_MS });
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

async function createLine(p: Page, numero: string, nombre: string): Promise<{ id: number; key: string }> {
  await p.getByRole('link', { name: 'Lines', exact: true }).click();
  await p.getByLabel('numero').fill(numero);
  await p.getByLabel('nombre_interno').fill(nombre);
  await p.getByRole('button', { name: 'Create line' }).click();
  await expect.poll(() => p.getByRole('heading', { level: 1 }).textContent()).toBe('Line created');
  const key = (await p.locator('#new-key').textContent())!.trim();
  const href = (await p.getByRole('link', { name: 'Line page' }).getAttribute('href'))!;
  return { id: Number(href.split('/').pop()), key };
}

it('the client creates a line, links it by QR without a reload, and a test text reaches leido', async () => {
  const a = await seedClient(s, { saldo: 100 });
  await signIn(page, s.url, a.clientKey);
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/panel/c/${a.clienteId}/`);
  await page.getByText('saldo global').waitFor();
  await screenshots(page, 'cuenta');
  await page.getByRole('link', { name: 'Lines', exact: true }).click();
  await page.getByRole('cell', { name: a.numero }).waitFor();
  await screenshots(page, 'celulares');

  const numero = nuevoNumero();
  const line = await createLine(page, numero, 'Ventas');
  expect(line.key).toMatch(/^WA_\d+_/);
  expect(await page.locator('#new-token').textContent()).toMatch(/^[0-9a-f]{64}$/);
  await screenshots(page, 'celular-creado');
  // The key shown is the line's key, and no later page shows it again.
  const shown = await api(s.url, 'GET', `/api/celular.php?id=${line.id}`, { key: line.key });
  expect(shown.status, shown.text).toBe(200);
  await page.getByRole('link', { name: 'Link this line' }).click();
  expect(await page.content()).not.toContain(line.key);
  await screenshots(page, 'vincular');

  await page.getByRole('button', { name: 'Show a QR' }).click();
  const qr = page.getByRole('img', { name: /QR code/ });
  await qr.waitFor();
  const first = await qr.getAttribute('src');
  expect(first).toMatch(/^data:image\/png;base64,/);
  await screenshots(page, 'vincular-qr');
  // A marker the page keeps only while it is not reloaded.
  await page.evaluate(() => ((globalThis as unknown as { sinRecargar: boolean }).sinRecargar = true));
  // The gateway's QR rotates: the page shows the new one by itself.
  (s.clock as ManualClock).advance(QR_ROTATE_MS);
  await expect.poll(() => qr.getAttribute('src'), { timeout: 15_000 }).not.toBe(first);

  // The phone scans it.
  const scan = await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: line.id } });
  expect(scan.status, scan.text).toBe(200);
  await page.getByText('The line is linked').waitFor({ timeout: 15_000 });
  expect(await page.evaluate(() => (globalThis as unknown as { sinRecargar?: boolean }).sinRecargar)).toBe(true);
  // Connected is final: the fragment asks for nothing more.
  expect(await page.locator('#vinculo').getAttribute('hx-trigger')).toBeNull();
  await screenshots(page, 'vincular-conectado');

  await page.getByRole('link', { name: 'Send a test text from the line page' }).click();
  await expect.poll(() => page.locator('#sesion').textContent()).toContain('connected');
  await expect.poll(() => page.locator('#sesion').textContent()).toContain('activo');
  await page.getByLabel('destinatario').fill('5215512345678');
  await page.getByLabel('mensaje').fill('hola desde el panel');
  await page.getByLabel('How to send').selectOption('1');
  await page.getByRole('button', { name: 'Send test text' }).click();
  await page.getByText('Accepted: msg_id').waitFor();
  const msgId = (await page.locator('[role="status"] code').first().textContent())!.trim();
  await expect.poll(() => page.locator('#envio-estado').textContent(), { timeout: 15_000 }).toBe('leido');
  const m = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${msgId}`, { key: a.clientKey });
  expect(m.status, m.text).toBe(200);
  expect(m.body.mensaje).toMatchObject({ msg_id: msgId, estado: 'leido', texto: 'hola desde el panel', celular_id: line.id });
  expect(await page.getByRole('link', { name: 'See it in the history of this line' }).getAttribute('href')).toBe(
    `/panel/c/${a.clienteId}/historial?celular_id=${line.id}`,
  );
  await screenshots(page, 'celular');
  // Found in the history as leido, by following the link.
  await page.getByRole('link', { name: 'See it in the history of this line' }).click();
  const row = page.getByRole('row').filter({ hasText: msgId });
  await expect.poll(() => row.textContent()).toContain('leido');
  expect(await row.textContent()).toContain('hola desde el panel');
});

it("a bad value shows the API's error beside its field, and delete asks for the line's numero", async () => {
  const a = await seedClient(s);
  await signIn(page, s.url, a.clientKey);
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares/${a.celularId}`);

  await page.getByLabel('max_envios_por_minuto').fill('0');
  await page.getByRole('button', { name: 'Save settings' }).click();
  const minuto = page.locator('#f-max_envios_por_minuto-error');
  await expect.poll(() => minuto.textContent()).toContain('max_envios_por_minuto must be an integer from 1 to 1000');
  await expect.poll(() => minuto.textContent()).toContain('api_codigo 100');
  expect(await page.getByLabel('max_envios_por_minuto').getAttribute('aria-invalid')).toBe('true');
  await screenshots(page, 'celular-error');

  await page.getByLabel('max_envios_por_minuto').fill('30');
  await page.getByLabel('hora_inicio_permitido').fill('25:00');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect.poll(() => page.locator('#f-hora_inicio_permitido-error').textContent()).toContain('hora_inicio_permitido must be HH:MM');
  // Nothing of the refused form was saved.
  const before = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
  expect(before.body.celular).toMatchObject({ max_envios_por_minuto: 12, hora_inicio_permitido: '00:00' });

  await page.getByLabel('hora_inicio_permitido').fill('08:30');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain('Settings saved');
  const after = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
  expect(after.body.celular).toMatchObject({ max_envios_por_minuto: 30, hora_inicio_permitido: '08:30' });

  // A bad number on creation: beside numero.
  await page.getByRole('link', { name: 'Lines', exact: true }).click();
  await page.getByLabel('numero').fill('12');
  await page.getByRole('button', { name: 'Create line' }).click();
  await expect.poll(() => page.locator('#f-numero-error').textContent()).toContain('api_codigo 100');

  // Delete: the button waits for the exact numero, and the server checks it too.
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares/${a.celularId}`);
  const confirm = page.getByLabel(/Type the line's numero/);
  const del = page.getByRole('button', { name: 'Delete line' });
  await confirm.fill('nope');
  await expect.poll(() => del.isDisabled()).toBe(true);
  // A form sent without the page's script: the server refuses it beside the field.
  await del.evaluate((b) => b.removeAttribute('disabled'));
  await del.click();
  await expect.poll(() => page.locator('#f-confirmacion-error').textContent()).toContain(`type the line's numero, ${a.numero}`);
  expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(200);
  await page.getByLabel(/Type the line's numero/).fill(a.numero);
  await page.getByRole('button', { name: 'Delete line' }).click();
  await expect.poll(() => page.getByRole('status').textContent()).toContain(`Line ${a.numero} deleted`);
  expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(404);
  await page.getByText('No lines yet. Create one below.').waitFor();
});

it("the line page's selects show their options whole at 1280 and 390 px; vigencia takes an instant; settings sent unchanged save nothing", async () => {
  const L = await linkedLine(s);
  await signIn(page, s.url, L.clientKey);
  const url = `${s.url}/panel/c/${L.clienteId}/celulares/${L.celularId}`;
  await page.goto(url);
  // How to send, the brake, the warm-up plan and estado: none cut (the queue's option once was, at both widths).
  expect(await cutSelects(page)).toEqual([]);

  // An instant, typed as a person would (a number field would not take it), is the queued text's end of validity.
  const end = s.clock.now() + 3_600_000;
  const typed = new Date(end - 3 * 3_600_000).toISOString().replace(/\.\d{3}Z$/, '-03:00');
  await page.getByLabel('destinatario').fill('5215512345678');
  await page.getByLabel('mensaje').fill('codigo por una hora');
  await page.getByLabel('vigencia (optional)').fill(typed);
  await page.getByRole('button', { name: 'Send test text' }).click();
  await page.getByText('Accepted: msg_id').waitFor();
  const msgId = (await page.locator('[role="status"] code').first().textContent())!.trim();
  const m = await api(s.url, 'GET', `/api/mensaje.php?msg_id=${msgId}`, { key: L.clientKey });
  expect(m.body.mensaje).toMatchObject({ msg_id: msgId, modo: 'cola', texto: 'codigo por una hora' });
  expect(Date.parse(m.body.mensaje.vigencia_hasta)).toBe(Date.parse(typed));
  // A wrong one: the API's words beside the field, what was typed kept.
  await page.getByLabel('destinatario').fill('5215512345678');
  await page.getByLabel('mensaje').fill('otra');
  await page.getByLabel('vigencia (optional)').fill('in an hour');
  await page.getByRole('button', { name: 'Send test text' }).click();
  await expect.poll(() => page.locator('#f-vigencia-error').textContent()).toContain('or an RFC 3339 instant with its zone');
  expect(await page.getByLabel('vigencia (optional)').getAttribute('aria-invalid')).toBe('true');
  expect(await page.getByLabel('vigencia (optional)').inputValue()).toBe('in an hour');
  expect(await cutSelects(page)).toEqual([]);

  // Save settings without changing anything: a notice, no error, no audit record.
  await page.goto(url);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Nothing changed: the settings were already these.');
  expect(await page.locator('.field-error, p.error').count()).toBe(0);
  const audit = await api(s.url, 'GET', `/admin/auditoria?cliente_id=${L.clienteId}&accion=celular.editar`, { key: s.adminToken });
  expect(audit.body.registros).toEqual([]);
});

it('a celular key sees its own line only', async () => {
  const a: Seeded = await seedClient(s);
  const sibling = await api(s.url, 'POST', '/api/celular_crear.php', { key: a.clientKey, json: { numero: nuevoNumero() } });
  expect(sibling.status, sibling.text).toBe(201);
  await signIn(page, s.url, a.celularKey);
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/panel/c/${a.clienteId}/celulares/${a.celularId}`);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Line', exact: true }).waitFor();
  expect(await nav.getByRole('link', { name: 'Lines', exact: true }).count()).toBe(0);
  expect(await nav.getByRole('link', { name: 'Account', exact: true }).count()).toBe(0);
  // What the client key alone may do is not offered.
  expect(await page.getByRole('button', { name: 'Delete line' }).count()).toBe(0);
  expect(await page.getByLabel('estado').count()).toBe(0);
  await page.getByRole('button', { name: 'Save settings' }).waitFor();
  await screenshots(page, 'celular-llave-celular');

  // The list and the account lead back to the line; another line's page is the API's 403.
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares`);
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/panel/c/${a.clienteId}/celulares/${a.celularId}`);
  await page.goto(`${s.url}/panel/c/${a.clienteId}/`);
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/panel/c/${a.clienteId}/celulares/${a.celularId}`);
  const other = await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares/${sibling.body.celular_id}`);
  expect(other!.status()).toBe(403);
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Not allowed');
  await expect.poll(() => page.getByRole('alert').textContent()).toContain('api_codigo 201');
  expect(await page.content()).not.toContain(sibling.body.celular.numero);

  // Its own line it may link, here by pairing code: the phone types the code and the page follows.
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares/${a.celularId}/vincular`);
  await page.getByRole('button', { name: 'Get a pairing code' }).click();
  const codigo = (await page.locator('#codigo').textContent())!.trim();
  expect(codigo).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
  await screenshots(page, 'vincular-codigo');
  const typed = await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: a.celularId, codigo } });
  expect(typed.status, typed.text).toBe(200);
  await page.getByText('The line is linked').waitFor({ timeout: 15_000 });
});

it('a line named with markup renders it as text', async () => {
  const a = await seedClient(s);
  let dialogs = 0;
  page.on('dialog', (d) => {
    dialogs += 1;
    void d.dismiss();
  });
  await signIn(page, s.url, a.clientKey);
  const nombre = '<img src=x onerror=alert(1)>';
  const line = await createLine(page, nuevoNumero(), nombre);
  await page.getByRole('link', { name: 'Back to the lines' }).click();
  await page.getByRole('cell', { name: nombre }).waitFor();
  await page.goto(`${s.url}/panel/c/${a.clienteId}/celulares/${line.id}`);
  await page.getByText(nombre, { exact: true }).first().waitFor();
  expect(await page.getByLabel('nombre_interno').first().inputValue()).toBe(nombre);
  await page.goto(`${s.url}/panel/c/${a.clienteId}/`);
  await page.getByRole('cell', { name: nombre }).waitFor();
  expect(await page.locator('img[src="x"]').count()).toBe(0);
  expect(dialogs).toBe(0);
});
