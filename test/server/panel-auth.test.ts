import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { PANEL_SESSION } from '../../src/core/auth/panel-sessions.js';
import { escapeHtml, html, raw } from '../../src/server/panel/html.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/** The panel's sign-in, sessions and the checks every change passes, over HTTP against the real server. */
let s: TestServer;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer({ authMaxFailures: 3 });
  a = await seedClient(s);
});
afterAll(async () => s?.stop());

const clock = () => s.clock as ManualClock;

async function signIn(credencial: string, headers: Record<string, string> = {}) {
  return fetch(`${s.url}/panel/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ credencial, next: '/panel/' }),
    redirect: 'manual',
  });
}

/** A signed-in session's cookie, and its CSRF token read off the operator's first page (as a browser would have it). */
async function session(credencial: string): Promise<{ cookie: string; csrf: string }> {
  const r = await signIn(credencial);
  expect(r.status).toBe(303);
  const cookie = `pasarela_panel=${/pasarela_panel=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')![1]!}`;
  const page = credencial === s.adminToken ? await (await get('/panel/', cookie)).text() : '';
  return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '' };
}

const get = (path: string, cookie?: string, follow = false) =>
  fetch(`${s.url}${path}`, { headers: cookie ? { cookie } : {}, redirect: follow ? 'follow' : 'manual' });

const post = (path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });

describe('typed templates', () => {
  it('escape every value, and keep markup built by templates', () => {
    const name = `<img src=x onerror=alert(1)> "quoted" 'single' & \`tick\``;
    const out = html`<p title="${name}">${name}</p>
      ${html`<b>${name}</b>`}${[1, '<i>']}${null}${false}${raw('<hr>')}`.value;
    expect(out).not.toContain('<img');
    expect(out).toContain(`<p title="${escapeHtml(name)}">`);
    expect(out).toContain('<b>&lt;img');
    expect(out).toContain('1&lt;i&gt;<hr>');
  });
});

describe('the panel sign-in', () => {
  it('answers a page with a strict policy, and leaves the legacy endpoint as it was', async () => {
    const r = await get('/panel/login');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(r.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    // The line is not linked: the legacy endpoint's own JSON refusal, exactly as before the panel.
    const legacy = await api(s.url, 'POST', '/panel/api_wa.php', { form: { token: a.gatewayToken, destinatario: '525598770001', mensaje: 'legado' } });
    expect(legacy.status, legacy.text).toBe(403);
    expect(legacy.body).toMatchObject({ ok: false, api_codigo: 301 });
    expect(legacy.headers.get('content-security-policy')).toBeNull();
  });

  it('signs in with every kind of credential, and never names the key in a cookie, page or URL', async () => {
    for (const [cred, home] of [
      [s.adminToken, null],
      [a.clientKey, `/panel/c/${a.clienteId}/`],
      [a.celularKey, `/panel/c/${a.clienteId}/celulares/${a.celularId}`],
      [a.gatewayToken, `/panel/c/${a.clienteId}/celulares/${a.celularId}`],
    ] as const) {
      const r = await signIn(cred);
      expect(r.status).toBe(303);
      const setCookie = r.headers.get('set-cookie')!;
      expect(setCookie).toMatch(/HttpOnly/);
      expect(setCookie).toMatch(/SameSite=Strict/);
      expect(setCookie).not.toContain(cred);
      const cookie = /pasarela_panel=[^;]+/.exec(setCookie)![0];
      const first = await get('/panel/', cookie);
      if (home === null) {
        expect(first.status).toBe(200);
        expect(await first.text()).not.toContain(cred);
      } else {
        expect(first.status).toBe(303);
        expect(first.headers.get('location')).toBe(home);
      }
    }
    // Nor in the log.
    for (const cred of [s.adminToken, a.clientKey, a.celularKey, a.gatewayToken]) expect(s.logs.join('\n')).not.toContain(cred);
  });

  it('goes back only to a panel page after signing in', async () => {
    for (const next of ['//evil.example/x', 'https://evil.example/', '/panel//evil.example', '/api/info.php']) {
      const r = await fetch(`${s.url}/panel/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ credencial: s.adminToken, next }),
        redirect: 'manual',
      });
      expect(r.headers.get('location')).toBe('/panel/');
    }
  });

  it('refuses a change without the CSRF token or from another origin, and changes nothing', async () => {
    const { cookie, csrf } = await session(s.adminToken);
    const forged = await post('/panel/logout', cookie, {});
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain('api_codigo 201');
    const wrong = await post('/panel/logout', cookie, { _csrf: csrf.slice(1) + 'x' });
    expect(wrong.status).toBe(403);
    const foreign = await post('/panel/logout', cookie, { _csrf: csrf }, { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    // Still signed in: none of them signed out.
    expect((await get('/panel/', cookie)).status).toBe(200);
    const ok = await post('/panel/logout', cookie, { _csrf: csrf }, { origin: s.url });
    expect(ok.status).toBe(303);
    expect((await get('/panel/', cookie)).status).toBe(303);
  });

  it('answers a live part refused for good with the refusal in its place (so its polling ends), a page with the error page', async () => {
    const { cookie } = await session(s.adminToken);
    const part = await fetch(`${s.url}/panel/c/999999/celulares/1/sesion`, { headers: { cookie, 'hx-request': 'true' } });
    expect(part.status).toBe(200);
    const text = await part.text();
    expect(text).toMatch(/^<p class="error" role="alert">/);
    expect(text).toContain('api_codigo 601');
    expect(text).not.toContain('hx-trigger');
    const page = await fetch(`${s.url}/panel/c/999999/celulares/1`, { headers: { cookie } });
    expect(page.status).toBe(404);
    expect(await page.text()).toContain('<!doctype html>');
  });

  it('ends a session after its idle time, and after its absolute time however active', async () => {
    const idle = await session(s.adminToken);
    clock().advance(PANEL_SESSION.idleMs + 1_000);
    expect((await get('/panel/', idle.cookie)).headers.get('location')).toMatch(/^\/panel\/login/);

    const busy = await session(s.adminToken);
    for (let t = 0; t < PANEL_SESSION.absoluteMs; t += PANEL_SESSION.idleMs / 2) {
      expect((await get('/panel/', busy.cookie)).status).toBe(200);
      clock().advance(PANEL_SESSION.idleMs / 2);
    }
    expect((await get('/panel/', busy.cookie)).headers.get('location')).toMatch(/^\/panel\/login/);
  });

  it('ends the sessions of a rotated client key and of a deleted line', async () => {
    const client = await session(a.clientKey);
    const line = await session(a.celularKey);
    expect((await get('/panel/', client.cookie)).status).toBe(303);
    expect((await get('/panel/', client.cookie)).headers.get('location')).toBe(`/panel/c/${a.clienteId}/`);
    expect((await api(s.url, 'POST', `/admin/clientes/${a.clienteId}/rotar-key`, { key: s.adminToken })).status).toBe(200);
    expect((await get('/panel/', client.cookie)).headers.get('location')).toMatch(/^\/panel\/login/);

    expect((await get('/panel/', line.cookie)).headers.get('location')).toBe(`/panel/c/${a.clienteId}/celulares/${a.celularId}`);
    const rotated = await api(s.url, 'POST', `/admin/celulares/${a.celularId}/rotar-key`, { key: s.adminToken });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await get('/panel/', line.cookie)).headers.get('location')).toMatch(/^\/panel\/login/);
  });

  it('is behind the API throttle: repeated wrong credentials get 429 with Retry-After', async () => {
    const ip = { 'x-forwarded-for': '203.0.113.9' };
    let last: Response | undefined;
    for (let i = 0; i < 5; i++) last = await signIn('WAC_1_wrongwrongwrongwrong', ip);
    expect(last!.status).toBe(429);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await last!.text()).toContain('api_codigo');
  });
});
