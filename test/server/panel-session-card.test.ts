import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIM_PUSH_NAME, type SimGateway } from '../../src/gateways/sim.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, type Line } from './send-helpers.js';

/**
 * The line page's Session card in process (the browser flow is in
 * test/e2e/panel-session-card.test.ts): what it shows, log out and restart
 * as the client, the line's own key and the operator, each answered by a
 * redirect and a notice; the refusals beside the confirmation or above the
 * card, with the API's status; a forged form changes nothing.
 */

let s: TestServer;
const sim = () => s.core.gateway as SimGateway;

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
});
afterAll(async () => {
  await s?.stop();
});

interface Session {
  cookie: string;
  csrf: string;
}

async function signIn(credencial: string): Promise<Session> {
  const r = await api(s.url, 'POST', '/panel/login', { form: { credencial } });
  expect(r.status, r.text).toBe(303);
  const cookie = r.headers.get('set-cookie')!.split(';')[0]!;
  let to = r.headers.get('location')!;
  for (let hops = 0; hops < 3; hops++) {
    const page = await api(s.url, 'GET', to, { headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
    if (csrf) return { cookie, csrf };
    to = page.headers.get('location') ?? to;
  }
  throw new Error(`no CSRF token after signing in (last: ${to})`);
}

const get = (who: Session, path: string) => api(s.url, 'GET', path, { headers: { cookie: who.cookie } });
const post = (who: Session, path: string, form: Record<string, string>, csrf = true) =>
  api(s.url, 'POST', path, { headers: { cookie: who.cookie }, form: csrf ? { _csrf: who.csrf, ...form } : form });
const pageOf = (L: Line) => `/panel/c/${L.clienteId}/celulares/${L.celularId}`;
/** The page a POST redirected to, with the notice it set (the flash cookie sent back, as a browser does). */
async function flashOf(who: Session, r: { headers: Headers }): Promise<string> {
  const notice = /pasarela_aviso=[^;]*/.exec(r.headers.get('set-cookie') ?? '')?.[0];
  const page = await api(s.url, 'GET', r.headers.get('location')!, { headers: { cookie: [who.cookie, notice].filter(Boolean).join('; ') } });
  return page.text;
}

describe('the Session card', () => {
  it("shows the status and the linked phone's name and number, with Restart and a confirmed Log out", async () => {
    const L = await linkedLine(s);
    const client = await signIn(L.clientKey);
    const page = await get(client, pageOf(L));
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h2 id="session-h">Session</h2>');
    expect(page.text).toContain(`${SIM_PUSH_NAME} · +${L.numero}`);
    expect(page.text).toContain(`action="${pageOf(L)}/reiniciar"`);
    expect(page.text).toMatch(/name="confirmar" value="1" required/);
    expect(page.text).toMatch(/<time datetime="[^"]+">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC<\/time>/);
  });

  it('the client logs out: a confirmation is required (400 beside the box, nothing done); confirmed: 303 with a notice, then no session', async () => {
    const L = await linkedLine(s);
    const client = await signIn(L.clientKey);
    const unconfirmed = await post(client, `${pageOf(L)}/logout`, {});
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.text).toMatch(/id="f-confirmar-error"[^>]*>confirmar: tick the box/);
    expect(unconfirmed.text).toContain('api_codigo 100');
    expect((await s.core.store.getCelular(L.celularId))!.last_status).toBe('connected');

    const done = await post(client, `${pageOf(L)}/logout`, { confirmar: '1' });
    expect(done.status, done.text).toBe(303);
    expect(done.headers.get('location')).toBe(pageOf(L));
    expect(await flashOf(client, done)).toContain(`Line ${L.numero} logged out`);
    const after = await get(client, pageOf(L));
    expect(after.text).toContain('There is no session to log out or restart');
    expect(after.text).not.toContain(`action="${pageOf(L)}/logout"`);
    // Posted again (a second tab): 409 NO_SESSION above the card.
    const again = await post(client, `${pageOf(L)}/logout`, { confirmar: '1' });
    expect(again.status).toBe(409);
    expect(again.text).toContain('api_codigo 625');
  });

  it("the line's own key restarts it (303 and a notice); it connects again; the operator may too", async () => {
    const L = await linkedLine(s);
    const line = await signIn(L.celularKey);
    const r = await post(line, `${pageOf(L)}/reiniciar`, {});
    expect(r.status, r.text).toBe(303);
    expect(await flashOf(line, r)).toContain('restarting (status connecting)');
    await until(async () => (await s.core.store.getCelular(L.celularId))!.last_status === 'connected', { what: 'connected again' });
    // The card's status is read again by itself: the recorded one, without asking the gateway.
    const fragment = await get(line, `${pageOf(L)}/sesion-card`);
    expect(fragment.text).toContain('title="status connected"');
    expect(fragment.text).toContain('hx-trigger="every 5s"');
    const operator = await signIn(s.adminToken);
    const o = await post(operator, `${pageOf(L)}/logout`, { confirmar: '1' });
    expect(o.status, o.text).toBe(303);
    const audit = (await api(s.url, 'GET', `/admin/auditoria?cliente_id=${L.clienteId}`, { key: s.adminToken })).body.registros;
    expect(audit.filter((x: any) => x.objeto_id === L.celularId && x.accion.startsWith('celular.')).map((x: any) => [x.accion, x.actor])).toEqual(
      expect.arrayContaining([
        ['celular.logout', `operator(cliente:${L.clienteId})`],
        ['celular.reiniciar', `celular:${L.celularId}(key)`],
      ]),
    );
  });

  it('a gateway down: 502 above the card, the line unchanged; a forged form: 403; another client: 404', async () => {
    const L = await linkedLine(s);
    const M = await linkedLine(s);
    const client = await signIn(L.clientKey);
    sim().setOutage(true);
    try {
      const r = await post(client, `${pageOf(L)}/reiniciar`, {});
      expect(r.status).toBe(502);
      expect(r.text).toContain('api_codigo 700');
      expect(r.text).toContain('<h2 id="session-h">Session</h2>');
    } finally {
      sim().setOutage(false);
    }
    expect((await post(client, `${pageOf(L)}/logout`, { confirmar: '1' }, false)).status).toBe(403);
    expect((await post(client, `${pageOf(M)}/logout`, { confirmar: '1' })).status).toBe(404);
    expect((await s.core.store.getCelular(L.celularId))!.last_status).toBe('connected');
    expect((await s.core.store.getCelular(M.celularId))!.last_status).toBe('connected');
  });

  it('a line never linked: the card says so, and offers no action', async () => {
    const L = await linkedLine(s, { link: false });
    const page = await get(await signIn(L.clientKey), pageOf(L));
    expect(page.text).toContain('There is no session to log out or restart: link the line first');
    expect(page.text).toContain('shown once the line is connected');
    expect(page.text).not.toContain('/reiniciar"');
  });
});
