import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * The lines and linking pages in process (the browser flows are in
 * test/e2e/panel-lines.test.ts): the pairing-code flow, refusals the
 * browser cannot easily send (a forged form, an unknown estado, a text over
 * the API's size), the operator's move under the simulator, and paths that
 * name no page.
 */

let s: TestServer;

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

/** Signs in as the sign-in form does, and reads the CSRF token the panel's pages carry. */
async function signIn(credencial: string): Promise<Session> {
  const r = await api(s.url, 'POST', '/panel/login', { form: { credencial } });
  expect(r.status, r.text).toBe(303);
  const cookie = r.headers.get('set-cookie')!.split(';')[0]!;
  // Every signed-in page carries the token (the sign-out form); the first page may be a redirect to the client's own.
  let to = r.headers.get('location')!;
  for (let hops = 0; hops < 3; hops++) {
    const page = await api(s.url, 'GET', to, { headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
    if (csrf) return { cookie, csrf };
    to = page.headers.get('location') ?? to;
  }
  throw new Error(`no CSRF token on the pages after signing in (last: ${to})`);
}

const get = (who: Session, path: string) => api(s.url, 'GET', path, { headers: { cookie: who.cookie } });
const post = (who: Session, path: string, form: Record<string, string>, csrf = true) =>
  api(s.url, 'POST', path, { headers: { cookie: who.cookie }, form: csrf ? { _csrf: who.csrf, ...form } : form });

const op = (path: string, json: unknown) => api(s.url, 'POST', path, { key: s.adminToken, json });

describe('the lines pages', () => {
  let a: Seeded;
  let client: Session;
  let line: string;
  beforeAll(async () => {
    a = await seedClient(s, { saldo: 10 });
    client = await signIn(a.clientKey);
    line = `/panel/c/${a.clienteId}/celulares/${a.celularId}`;
  });

  it('links by pairing code: the code, then the status followed until connected', async () => {
    const r = await post(client, `${line}/vincular`, { metodo: 'codigo' });
    expect(r.status, r.text).toBe(200);
    const codigo = /<code id="codigo"[^>]*>([A-Z0-9]{4}-[A-Z0-9]{4})<\/code>/.exec(r.text)?.[1];
    expect(codigo).toBeDefined();
    expect(r.text).toContain(`hx-get="${line}/vincular/estado"`);
    const waiting = await get(client, `${line}/vincular/estado`);
    expect(waiting.text).toContain('waiting for a scan');
    expect(waiting.text).toContain('hx-trigger="every 2s"');

    expect((await op('/admin/sim/scan', { celular_id: a.celularId, codigo })).status).toBe(200);
    const linked = await get(client, `${line}/vincular/estado`);
    expect(linked.text).toContain('The line is linked');
    expect(linked.text).not.toContain('hx-trigger');
    // The line page's own status fragment says so too.
    expect((await get(client, `${line}/sesion`)).text).toContain('connected');
  });

  it('changes nothing on a forged form, and refuses an unknown estado beside its field', async () => {
    const forged = await post(client, line, { max_envios_por_minuto: '99' }, false);
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('api_codigo 201');
    const estado = await post(client, line, { estado: 'borrado' });
    expect(estado.status).toBe(400);
    expect(estado.text).toMatch(/id="f-estado-error"[^>]*>estado must be one of activo, suspendido, desconectado/);
    const row = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
    expect(row.body.celular).toMatchObject({ max_envios_por_minuto: 12, estado: 'activo' });

    // A field the form leaves out changes nothing; an emptied daily cap is no cap.
    expect((await post(client, line, { max_envios_por_dia: '40' })).status).toBe(303);
    const saved = await post(client, line, { nombre_interno: 'Soporte', max_envios_por_dia: '' });
    expect(saved.status, saved.text).toBe(303);
    const after = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
    expect(after.body.celular).toMatchObject({ nombre_interno: 'Soporte', max_envios_por_minuto: 12, max_envios_por_dia: null, hora_fin_permitido: '23:59' });
  });

  it('sets and clears a warm-up plan, shows the caps today, and refuses an unknown plan beside its field', async () => {
    expect((await get(client, line)).text).toMatch(/<dt>Caps today<\/dt>\s*<dd>12 a minute, 500 an hour, [^<]* a day<\/dd>/);
    expect((await post(client, line, { calentamiento: 'estandar' })).status).toBe(303);
    const page = await get(client, line);
    expect(page.text).toMatch(/<dt>Caps today<\/dt>\s*<dd>2 a minute, 10 an hour, 20 a day \(warm-up estandar, day 1\)<\/dd>/);
    expect(page.text).toMatch(/<option value="estandar"\s+selected>/);
    const bad = await post(client, line, { calentamiento: 'turbo' });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/id="f-calentamiento-error"[^>]*>calentamiento must be one of estandar, rapido, prudente/);
    expect((await post(client, line, { calentamiento: '' })).status).toBe(303);
    const row = await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey });
    expect(row.body.celular).toMatchObject({ calentamiento: null, max_envios_por_minuto_efectivo: 12 });
  });

  it('turns the brake on and off from the settings form; a value the form does not offer changes nothing', async () => {
    expect((await get(client, line)).text).toMatch(/<option value="0"\s+selected>off: alert only/);
    expect((await post(client, line, { freno: '1' })).status).toBe(303);
    const on = await get(client, line);
    expect(on.text).toMatch(/<option value="1"\s+selected>on:/);
    expect(on.text).toContain('on: a crossed health threshold pauses its queue');
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).body.celular.freno).toBe(true);
    const odd = await post(client, line, { freno: 'yes' });
    expect(odd.status).toBe(400);
    expect(odd.text).toMatch(/id="f-freno-error"[^>]*>freno must be 0 \(off\) or 1 \(on\)/);
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).body.celular.freno).toBe(true);
    expect((await post(client, line, { freno: '0' })).status).toBe(303);
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).body.celular.freno).toBe(false);
  });

  it('refuses a test text longer than the API takes, beside mensaje', async () => {
    const r = await post(client, `${line}/enviar`, { destinatario: '5215512345678', mensaje: 'x'.repeat(4097), directo: '1' });
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/id="f-mensaje-error"[^>]*>mensaje must be at most 4096 characters/);
  });

  it('counts a test text in characters, not UTF-16 units: 4096 emoji are taken, 4097 refused', async () => {
    const ok = await post(client, `${line}/enviar`, { destinatario: '5215512345678', mensaje: '😀'.repeat(4096), directo: '0' });
    expect(ok.status, ok.text).toBe(303);
    const r = await post(client, `${line}/enviar`, { destinatario: '5215512345679', mensaje: '😀'.repeat(4097), directo: '0' });
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/id="f-mensaje-error"[^>]*>mensaje must be at most 4096 characters/);
  });

  it('takes a validity on the test send (issue 40), in seconds or as an instant, and refuses a bad one beside its field', async () => {
    const page = (await get(client, line)).text;
    // A text field (a number field would refuse an instant in the browser), whose hint names both forms.
    expect(page).toMatch(/<input\s+id="f-vigencia"\s+name="vigencia"\s+type="text"/);
    expect(page).toMatch(/id="f-vigencia-hint"[^>]*>Seconds \(10 to 86400\)[^<]*or the RFC 3339 instant/);
    const sentWith = async (form: Record<string, string>) => {
      const r = await post(client, `${line}/enviar`, { destinatario: '5215512345678', mensaje: 'codigo', directo: '0', ...form });
      expect(r.status, r.text).toBe(303);
      const msgId = new URL(r.headers.get('location')!, s.url).searchParams.get('enviado')!;
      return (await api(s.url, 'GET', `/api/mensaje.php?msg_id=${msgId}`, { key: a.clientKey })).body.mensaje;
    };
    const now = s.clock.now();
    expect(Date.parse((await sentWith({ vigencia: '120' })).vigencia_hasta)).toBe(now + 120_000);
    // An instant in another zone reaches core as the API's form body gives it: the instant itself is the end.
    const at = new Date(now + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const atMinus3 = new Date(Date.parse(at) - 3 * 3_600_000).toISOString().replace(/\.\d{3}Z$/, '-03:00');
    expect(Date.parse((await sentWith({ vigencia: ` ${atMinus3} ` })).vigencia_hasta)).toBe(Date.parse(at));
    // Counted from Send at when there is one.
    const enviarEn = new Date(now + 2 * 3_600_000).toISOString();
    const scheduled = await sentWith({ enviar_en: enviarEn, vigencia: new Date(now + 2.5 * 3_600_000).toISOString() });
    expect(Date.parse(scheduled.vigencia_hasta)).toBe(now + 2.5 * 3_600_000);

    const refused = async (vigencia: string, extra: Record<string, string> = {}) => {
      const bad = await post(client, `${line}/enviar`, { destinatario: '5215512345678', mensaje: 'codigo', directo: '0', vigencia, ...extra });
      expect(bad.status, vigencia).toBe(400);
      // What was typed stays in the field, to be corrected.
      expect(bad.text, vigencia).toContain(`value="${vigencia}"`);
      return /id="f-vigencia-error"[^>]*>([^<]*)/.exec(bad.text)?.[1] ?? bad.text;
    };
    for (const vigencia of ['5', 'abc', '86401', '12.5', '2026-12-01T09:35:00'])
      expect(await refused(vigencia)).toMatch(/^vigencia must be a whole number of seconds from 10 to 86400, or an RFC 3339 instant with its zone/);
    expect(await refused(new Date(now + 5_000).toISOString())).toMatch(/^vigencia \S+ must fall 10 s to 24 h after the send starts/);
    expect(await refused(new Date(now + 25 * 3_600_000).toISOString())).toMatch(/must fall 10 s to 24 h after the send starts/);
    // One hour from now is before a send at two hours from now.
    expect(await refused(at, { enviar_en: enviarEn })).toMatch(/must fall 10 s to 24 h after the send starts \(/);
  });

  it('answers a test send with a redirect to the line page naming it, so a reload shows it and sends nothing again', async () => {
    const r = await post(client, `${line}/enviar`, { destinatario: '5215512345678', mensaje: 'prueba', directo: '0' });
    expect(r.status, r.text).toBe(303);
    const to = r.headers.get('location')!;
    const msgId = new URL(to, s.url).searchParams.get('enviado')!;
    expect(to.startsWith(`${line}?`)).toBe(true);
    for (let i = 0; i < 2; i++) {
      const page = await get(client, to);
      expect(page.status).toBe(200);
      expect(page.text).toContain(`Accepted: msg_id <code>${msgId}</code>, modo cola`);
    }
    const sent = await api(s.url, 'GET', `/api/historial_listar.php?celular_id=${a.celularId}`, { key: a.clientKey });
    expect(sent.body.mensajes.filter((m: { texto: string }) => m.texto === 'prueba')).toHaveLength(1);
    // A time that is not an instant, written into the link by hand, is not shown.
    expect((await get(client, `${to}&envio_desde=${encodeURIComponent('call +52 555 now')}`)).text).not.toContain('call +52');
    // An id that is not this line's shows nothing.
    expect((await get(client, `${line}?enviado=01a21c3d-0000-7000-8000-000000000000`)).text).not.toContain('Accepted: msg_id');
  });

  it('a settings form sent unchanged, or sent again, saves nothing and says so; the API still refuses an empty edit', async () => {
    const editados = async () => {
      const r = await api(s.url, 'GET', `/admin/auditoria?cliente_id=${a.clienteId}&accion=celular.editar&limit=100`, { key: s.adminToken });
      expect(r.status, r.text).toBe(200);
      return (r.body.registros as Array<{ objeto_id: number }>).filter((x) => x.objeto_id === a.celularId).length;
    };
    const rowOf = async () => (await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).body.celular;
    const noticeOf = async (r: Awaited<ReturnType<typeof post>>) => {
      expect(r.status, r.text).toBe(303);
      expect(r.headers.get('location')).toBe(line);
      const notice = /pasarela_aviso=[^;]*/.exec(r.headers.get('set-cookie') ?? '')?.[0];
      const page = await api(s.url, 'GET', line, { headers: { cookie: [client.cookie, notice].filter(Boolean).join('; ') } });
      expect(page.text).not.toContain('role="alert"');
      return /<p class="notice" role="status">([^<]*)<\/p>/.exec(page.text)?.[1];
    };

    // The form exactly as the page fills it, sent back untouched.
    const page = (await get(client, line)).text;
    const form = /<form method="post" action="[^"]*\/celulares\/\d+" class="card">([\s\S]*?)<\/form>/.exec(page)![1]!;
    const values: Record<string, string> = {};
    for (const [tag] of form.matchAll(/<input\s+id="[^>]*>/g)) values[/name="([^"]+)"/.exec(tag)![1]!] = /\svalue="([^"]*)"/.exec(tag)?.[1] ?? '';
    for (const m of form.matchAll(/<select id="[^"]*" name="([^"]+)"[\s\S]*?<\/select>/g))
      values[m[1]!] = /<option value="([^"]*)"\s+selected>/.exec(m[0])?.[1] ?? '';
    expect(Object.keys(values).sort()).toEqual([
      'calentamiento',
      'estado',
      'freno',
      'hora_fin_permitido',
      'hora_inicio_permitido',
      'max_envios_por_dia',
      'max_envios_por_hora',
      'max_envios_por_minuto',
      'nombre_interno',
    ]);
    expect(values).toMatchObject({ max_envios_por_minuto: '12', hora_fin_permitido: '23:59', freno: '0', estado: 'activo' });
    const before = { row: await rowOf(), audit: await editados() };
    expect(await noticeOf(await post(client, line, values))).toBe('Nothing changed: the settings were already these.');
    expect(await editados()).toBe(before.audit);
    expect(await rowOf()).toEqual(before.row);

    // A change sent twice: saved once, then nothing to save.
    const change = { ...values, max_envios_por_minuto: '20' };
    expect(await noticeOf(await post(client, line, change))).toBe('Settings saved.');
    expect(await noticeOf(await post(client, line, change))).toBe('Nothing changed: the settings were already these.');
    expect(await editados()).toBe(before.audit + 1);
    expect(await rowOf()).toMatchObject({ max_envios_por_minuto: 20 });

    // The API and the CLI keep their answer to an edit that names nothing.
    const empty = await api(s.url, 'POST', `/api/celular_editar.php?id=${a.celularId}`, { key: a.clientKey, json: {} });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('nothing to change: give at least one field');
  });

  it("shows the operator no move under the simulator, refuses the client's move, and 404s paths that name no page", async () => {
    const operator = await signIn(s.adminToken);
    const page = await get(operator, line);
    expect(page.status).toBe(200);
    expect(page.text).toContain('no gateway servers to move the line between');
    const moved = await post(operator, `${line}/mover`, { servidor: 'otro' });
    expect(moved.status).toBe(400);
    expect(moved.text).toContain('gateway servers are for evolution or waha');
    expect((await post(client, `${line}/mover`, { servidor: 'otro' })).status).toBe(403);

    for (const path of [`/panel/c/x/celulares`, `/panel/c/${a.clienteId}/celulares/0`, `/panel/c/${a.clienteId}/celulares/1e3`]) {
      const r = await get(client, path);
      expect(r.status, path).toBe(404);
    }
    // Another client's pages are not found, not forbidden: ids tell a stranger nothing.
    const b = await seedClient(s);
    expect((await get(client, `/panel/c/${b.clienteId}/celulares/${b.celularId}`)).status).toBe(404);
    expect((await get(client, `/panel/c/${a.clienteId}/celulares/${b.celularId}`)).status).toBe(404);
  });
});
