import { afterAll, beforeAll, expect, it } from 'vitest';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';

/** The operator pages in process: what the overview's figures show, and how the pages refuse what they cannot answer. */

let s: TestServer;
let a: Seeded;
let cookie: string;
let csrf: string;

async function get(url: string) {
  return s.app.inject({ method: 'GET', url, headers: { cookie } });
}

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  a = await seedClient(s, { saldo: 5 });
  const login = await s.app.inject({
    method: 'POST',
    url: '/panel/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ credencial: s.adminToken }).toString(),
  });
  expect(login.statusCode).toBe(303);
  const session = login.cookies.find((c) => c.name === 'pasarela_panel')!;
  cookie = `pasarela_panel=${session.value}`;
  csrf = /name="_csrf" value="([^"]+)"/.exec((await get('/panel/clientes')).payload)![1]!;
});
afterAll(async () => {
  await s?.stop();
});

it("shows a client whose webhook deliveries fail, with the last error, and the last hour's sends by estado", async () => {
  const store = s.core.store;
  const now = s.clock.now();
  const ev = { evento: 'webhook.test', cliente_id: a.clienteId, celular_id: null, data: {}, fecha: now };
  const id = await store.logTestEvent(ev, true);
  const [claimed] = await store.claimEntregas(a.clienteId, now, 1, { id: 'k', until: now + 60_000 });
  expect(claimed?.id).toBe(id);
  await store.recordAttempt(
    id,
    'k',
    { status: 503, duracion_ms: 5, error: 'HTTP 503 <from the receiver>' },
    { estado: 'pendiente', proximo_intento_at: now + 60_000 },
    now,
  );
  // The line as linked (the sim's pairing is another test's subject); its key has not been resolved yet, so no cache holds the old state.
  await store.updateCelular(a.celularId, { estado: 'activo', last_status: 'connected', vinculado: 1 }, now);
  const sent = await s.app.inject({
    method: 'POST',
    url: '/api/mensaje_enviar_texto.php',
    headers: { authorization: `Bearer ${a.celularKey}`, 'content-type': 'application/json' },
    payload: { destinatario: '5215512345678', mensaje: 'hola' },
  });
  expect([200, 201], sent.payload).toContain(sent.statusCode);

  const r = await get('/panel/resumen');
  expect(r.statusCode).toBe(200);
  expect(r.headers['cache-control']).toBe('no-store');
  // A fragment (no page around it) that asks for itself again.
  expect(r.payload).not.toContain('<html');
  expect(r.payload).toMatch(/<section id="figures"[^>]*hx-get="\/panel\/resumen"[^>]*hx-trigger="every 5s"/);
  expect(r.payload).toContain(`href="/panel/c/${a.clienteId}/webhook"`);
  // The receiver's words are escaped like every value.
  expect(r.payload).toContain('HTTP 503 &lt;from the receiver&gt;');
  expect(r.payload).toMatch(/<td class="num">1<\/td>\s*<td class="num">0<\/td>/);
});

it('answers 404 for a client that is not there, 400 for a bad audit filter, and keeps keys out of the audit page', async () => {
  expect((await get('/panel/clientes/abc')).statusCode).toBe(404);
  expect((await get('/panel/clientes/999999')).statusCode).toBe(404);
  const bad = await get('/panel/auditoria?cliente_id=-3');
  expect(bad.statusCode).toBe(400);
  expect(bad.payload).toMatch(/id="f-cliente_id-error"[^>]*>[^<]*cliente_id/);
  const rotated = await s.app.inject({
    method: 'POST',
    url: `/panel/clientes/${a.clienteId}/rotar-key`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: csrf, confirmacion: String(a.clienteId) }).toString(),
  });
  // Shown once, on the page the rotation redirects to.
  expect(rotated.statusCode).toBe(303);
  const key = /<code id="new-key" class="secret">([^<]+)<\/code>/.exec((await get(rotated.headers.location as string)).payload)![1]!;
  const audit = await get(`/panel/auditoria?cliente_id=${a.clienteId}`);
  expect(audit.payload).toContain('cliente.rotar_key');
  expect(audit.payload).not.toContain(key);
  expect((await get(`/panel/clientes/${a.clienteId}`)).payload).not.toContain(key);
});

it('pages the audit log by id: the older page starts below the last id shown', async () => {
  for (let i = 0; i < 60; i++)
    await s.core.store.audit(
      { actor: 'operator', accion: `prueba.${i}`, objeto_tipo: 'cliente', objeto_id: a.clienteId, cliente_id: a.clienteId, detalle: {} },
      s.clock.now(),
    );
  const first = await get('/panel/auditoria');
  expect(first.payload).toContain('prueba.59');
  const older = /href="\/panel\/auditoria\?antes=(\d+)"/.exec(first.payload);
  expect(older).not.toBeNull();
  const second = await get(`/panel/auditoria?antes=${older![1]}`);
  expect(second.payload).not.toContain('prueba.59<');
  expect(second.payload).toContain('prueba.9<');
  expect(second.payload).toContain('>Newest</a>');
});
