import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { PANEL_SESSION } from '../../src/core/auth/panel-sessions.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * The panel's forms in process (D-90): a form sent twice acts once and the
 * repeat goes where the first went; a refused first frees its token; a key
 * is shown once on the page its POST redirects to, to that session only; a
 * session that ended sends the person to the sign-in page saying why, back
 * to the page (not a polled part) and, for a form, that it was not saved; a
 * deleted line's page and parts say so; the webhook secret's rule (D-89)
 * beside its field, the delete's confirmation and the restore.
 */

let s: TestServer;
let a: Seeded;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function signIn(credencial: string): Promise<string> {
  const r = await s.app.inject({ method: 'POST', url: '/panel/login', headers: FORM, payload: new URLSearchParams({ credencial }).toString() });
  expect(r.statusCode).toBe(303);
  return `pasarela_panel=${r.cookies.find((c) => c.name === 'pasarela_panel')!.value}`;
}
const get = (cookie: string, url: string, headers: Record<string, string> = {}) => s.app.inject({ method: 'GET', url, headers: { cookie, ...headers } });
const post = (cookie: string, url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  s.app.inject({ method: 'POST', url, headers: { cookie, ...FORM, ...headers }, payload: new URLSearchParams(fields).toString() });

/** The hidden tokens of the form posting to `action` on the page. */
function tokensOf(page: string, action: string): { _csrf: string; _once: string } {
  const form = page.slice(page.indexOf(`action="${action}"`));
  return { _csrf: /name="_csrf" value="([^"]+)"/.exec(form)![1]!, _once: /name="_once" value="([^"]+)"/.exec(form)![1]! };
}
const clientCount = async () => (await api(s.url, 'GET', '/admin/clientes', { key: s.adminToken })).body.clientes.length as number;
const secretOf = (page: string, id = 'new-key') => new RegExp(`<code id="${id}" class="secret">([^<]+)</code>`).exec(page)?.[1];
const clock = () => s.clock as ManualClock;

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true }, { inject: true });
  a = await seedClient(s);
});
afterAll(async () => {
  await s?.stop();
});

describe('one-use form tokens', () => {
  it('a form sent twice at once creates one client; the repeat is redirected where the first went, then to a page shown once', async () => {
    const op = await signIn(s.adminToken);
    const t = tokensOf((await get(op, '/panel/clientes')).payload, '/panel/clientes');
    const before = await clientCount();
    const fields = { ...t, nombre: 'Doble Envio', email: 'doble@example.com', plan: 'medido', saldo: '', max_celulares: '' };
    const [one, two] = await Promise.all([post(op, '/panel/clientes', fields), post(op, '/panel/clientes', fields)]);
    expect([one.statusCode, two.statusCode]).toEqual([303, 303]);
    expect(one.headers.location).toMatch(/^\/panel\/mostrar\/[A-Za-z0-9_-]{24}\?volver=/);
    expect(two.headers.location).toBe(one.headers.location);
    expect(await clientCount()).toBe(before + 1);
    // A third, later: the same.
    expect((await post(op, '/panel/clientes', fields)).headers.location).toBe(one.headers.location);
    expect(await clientCount()).toBe(before + 1);

    // The key, once; the reload says it was shown, and makes nothing.
    const shown = await get(op, one.headers.location as string);
    expect(shown.statusCode).toBe(200);
    const key = secretOf(shown.payload)!;
    expect(key).toMatch(/^WAC_/);
    expect((await api(s.url, 'GET', '/api/saldo.php', { key })).status).toBe(200);
    const again = await get(op, one.headers.location as string);
    expect(again.statusCode).toBe(410);
    expect(again.payload).toContain('This was shown once and is no longer shown');
    expect(again.payload).not.toContain(key);
    expect(await clientCount()).toBe(before + 1);
  });

  it('a refused first frees its token: the same form, corrected, acts', async () => {
    const op = await signIn(s.adminToken);
    const t = tokensOf((await get(op, '/panel/clientes')).payload, '/panel/clientes');
    const before = await clientCount();
    const bad = await post(op, '/panel/clientes', { ...t, nombre: 'Sin Correo', email: 'no-es-correo' });
    expect(bad.statusCode).toBe(400);
    expect(bad.payload).toContain('f-email-error');
    const good = await post(op, '/panel/clientes', { ...t, nombre: 'Sin Correo', email: 'ya@example.com' });
    expect(good.statusCode).toBe(303);
    expect(await clientCount()).toBe(before + 1);
  });

  it("a page shown once opens for the session that made it only; another session's look leaves it for the owner", async () => {
    const op = await signIn(s.adminToken);
    const other = await signIn(s.adminToken);
    const page = (await get(op, `/panel/clientes/${a.clienteId}`)).payload;
    const r = await post(op, `/panel/clientes/${a.clienteId}/rotar-key`, {
      ...tokensOf(page, `/panel/clientes/${a.clienteId}/rotar-key`),
      confirmacion: String(a.clienteId),
    });
    expect(r.statusCode).toBe(303);
    expect((await get(other, r.headers.location as string)).statusCode).toBe(410);
    const mine = await get(op, r.headers.location as string);
    expect(mine.statusCode).toBe(200);
    a.clientKey = secretOf(mine.payload)!;
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: a.clientKey })).status).toBe(200);
  });

  it('rotating a key without its typed confirmation rotates nothing: the refusal is beside the field', async () => {
    const op = await signIn(s.adminToken);
    const page = (await get(op, `/panel/clientes/${a.clienteId}`)).payload;
    const r = await post(op, `/panel/clientes/${a.clienteId}/rotar-key`, {
      ...tokensOf(page, `/panel/clientes/${a.clienteId}/rotar-key`),
      confirmacion: 'yes',
    });
    expect(r.statusCode).toBe(400);
    expect(r.payload).toContain('id="f-confirmacion-error"');
    expect(r.payload).toContain(`confirmacion: type the client&#39;s id, ${a.clienteId}, to rotate its key`);
    expect((await api(s.url, 'GET', '/api/saldo.php', { key: a.clientKey })).status).toBe(200);
  });
});

describe('a session that ended', () => {
  it('after its idle time: the sign-in page says so and returns to the page; a polled part returns to its page', async () => {
    const op = await signIn(s.adminToken);
    clock().advance(PANEL_SESSION.idleMs + 1_000);
    const page = await get(op, `/panel/clientes/${a.clienteId}`);
    expect(page.statusCode).toBe(303);
    const to = new URL(page.headers.location as string, 'http://x');
    expect(to.pathname).toBe('/panel/login');
    expect(to.searchParams.get('next')).toBe(`/panel/clientes/${a.clienteId}`);
    expect(to.searchParams.get('fin')).toBe('idle');
    const login = await get('', `${to.pathname}${to.search}`);
    expect(login.payload).toContain(`Your session ended: it expired after ${PANEL_SESSION.idleMs / 60_000} minutes idle.`);
    expect(login.payload).toContain(`name="next" value="/panel/clientes/${a.clienteId}"`);

    // A poll (htmx): to the page it belongs to, named by htmx, else the fragment's parent.
    const frag = `/panel/c/${a.clienteId}/celulares/${a.celularId}/sesion`;
    const polled = await get(op, frag, {
      'hx-request': 'true',
      'hx-current-url': `http://localhost/panel/c/${a.clienteId}/celulares/${a.celularId}?enviado=m1`,
    });
    expect(polled.statusCode).toBe(204);
    expect(new URL(polled.headers['hx-redirect'] as string, 'http://x').searchParams.get('next')).toBe(
      `/panel/c/${a.clienteId}/celulares/${a.celularId}?enviado=m1`,
    );
    const bare = await get(op, frag, { 'hx-request': 'true' });
    expect(new URL(bare.headers['hx-redirect'] as string, 'http://x').searchParams.get('next')).toBe(`/panel/c/${a.clienteId}/celulares/${a.celularId}`);
  });

  it('a form posted after its key was rotated: not saved, and the sign-in page says so and why', async () => {
    const b = await seedClient(s);
    const cs = await signIn(b.clientKey);
    const page = (await get(cs, `/panel/c/${b.clienteId}/celulares`)).payload;
    const rotated = await api(s.url, 'POST', `/admin/clientes/${b.clienteId}/rotar-key`, { key: s.adminToken });
    expect(rotated.status).toBe(200);
    const r = await post(
      cs,
      `/panel/c/${b.clienteId}/celulares`,
      { ...tokensOf(page, `/panel/c/${b.clienteId}/celulares`), numero: '5215500001111' },
      { referer: `http://localhost/panel/c/${b.clienteId}/celulares` },
    );
    expect(r.statusCode).toBe(303);
    const to = new URL(r.headers.location as string, 'http://x');
    expect(Object.fromEntries(to.searchParams)).toEqual({ next: `/panel/c/${b.clienteId}/celulares`, fin: 'credential', perdido: '1' });
    const login = (await get('', `${to.pathname}${to.search}`)).payload;
    expect(login).toContain('Your session ended: the key or token it was opened with was rotated or removed.');
    expect(login).toContain('Your change was not saved.');
    const lines = await api(s.url, 'GET', '/api/celulares.php', { key: rotated.body.api_key });
    expect(lines.status).toBe(200);
    expect(JSON.stringify(lines.body)).not.toContain('5215500001111');
  });

  it('signed out in one tab: the next request of another says so', async () => {
    const op = await signIn(s.adminToken);
    const page = (await get(op, '/panel/clientes')).payload;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    expect((await post(op, '/panel/logout', { _csrf: csrf })).statusCode).toBe(303);
    const after = await get(op, '/panel/clientes');
    expect(new URL(after.headers.location as string, 'http://x').searchParams.get('fin')).toBe('signed_out');
  });
});

describe('a deleted line', () => {
  it('its page, its polled status and its forms say "This line was deleted"', async () => {
    const b = await seedClient(s);
    const cs = await signIn(b.clientKey);
    const url = `/panel/c/${b.clienteId}/celulares/${b.celularId}`;
    const page = (await get(cs, url)).payload;
    expect((await api(s.url, 'POST', '/api/celular_eliminar.php', { key: b.clientKey, json: { id: b.celularId } })).status).toBe(200);
    const polled = await get(cs, `${url}/sesion`, { 'hx-request': 'true' });
    expect(polled.statusCode).toBe(200);
    expect(polled.payload).toContain('data-gone="This line was deleted');
    expect(polled.payload).not.toContain('api_codigo 600');
    const sent = await post(cs, `${url}/enviar`, { ...tokensOf(page, `${url}/enviar`), destinatario: '5215512345678', mensaje: 'hola' });
    expect(sent.statusCode).toBe(404);
    expect(sent.payload).toContain('<h1>This line was deleted</h1>');
    expect((await get(cs, url)).payload).toContain('<h1>This line was deleted</h1>');
  });
});

describe('the webhook page', () => {
  it("refuses the secret x beside its field with the API's words; deletes only when confirmed; restores", async () => {
    const b = await seedClient(s);
    const cs = await signIn(b.clientKey);
    const url = `/panel/c/${b.clienteId}/webhook`;
    const t = () => get(cs, url).then((r) => r.payload);
    const x = await post(cs, url, { ...tokensOf(await t(), url), url: 'http://127.0.0.1:9/hook', secret_modo: 'propio', secret: 'x', activo: '1' });
    expect(x.statusCode).toBe(400);
    expect(x.payload).toMatch(/id="f-secret-error"[^>]*>secret: 1 character is too short: 24 to 256 printable ASCII characters, no spaces/);
    expect((await api(s.url, 'GET', '/api/webhook.php', { key: b.clientKey })).body.configurado).toBe(false);

    const set = await post(cs, url, { ...tokensOf(await t(), url), url: 'http://127.0.0.1:9/hook', secret_modo: 'generar', activo: '1' });
    expect(set.statusCode).toBe(303);
    const shown = await get(cs, set.headers.location as string);
    expect(secretOf(shown.payload)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await get(cs, set.headers.location as string)).statusCode).toBe(410);

    const refused = await post(cs, `${url}/eliminar`, { ...tokensOf(await t(), `${url}/eliminar`), confirmacion: '' });
    expect(refused.statusCode).toBe(400);
    expect(refused.payload).toContain('confirmacion: type delete to delete the webhook');
    expect((await api(s.url, 'GET', '/api/webhook.php', { key: b.clientKey })).body.configurado).toBe(true);
    expect((await post(cs, `${url}/eliminar`, { ...tokensOf(await t(), `${url}/eliminar`), confirmacion: 'delete' })).statusCode).toBe(303);
    expect((await api(s.url, 'GET', '/api/webhook.php', { key: b.clientKey })).body.configurado).toBe(false);
    const restored = await post(cs, `${url}/restaurar`, tokensOf(await t(), `${url}/restaurar`));
    expect(restored.statusCode).toBe(303);
    expect((await api(s.url, 'GET', '/api/webhook.php', { key: b.clientKey })).body).toMatchObject({
      configurado: true,
      url: 'http://127.0.0.1:9/hook',
      has_secret: true,
    });
  });
});
