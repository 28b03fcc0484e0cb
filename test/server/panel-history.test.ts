import { join } from 'node:path';
import { DELIVERIES_COUNT_BOUND } from '../../src/webhooks/deliveries.js';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, numeroNuevo, send, TEXT, type Line } from './send-helpers.js';
import { startReceiver, waitFor, type Receiver } from './webhook-helpers.js';

/**
 * The panel's history, inbox and webhook pages over HTTP (the browser flows
 * are test/e2e/panel-history.test.ts): filters read as the API reads them,
 * exports of exactly the filtered set with CSV escaping, a bad filter's error
 * beside its field, a celular session's scope, and the webhook's secret shown
 * once.
 */

let s: TestServer;
let R: Receiver;

/** A signed-in browser, reduced to its cookie and the page's CSRF token. */
interface Session {
  cookie: string;
  get(path: string): Promise<{ status: number; text: string; headers: Headers }>;
  post(path: string, form: Record<string, string | string[]>): Promise<{ status: number; text: string; headers: Headers }>;
}

async function signIn(credencial: string): Promise<Session> {
  const r = await fetch(`${s.url}/panel/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ credencial }).toString(),
    redirect: 'manual',
  });
  expect(r.status).toBe(303);
  const cookie = r.headers
    .getSetCookie()
    .find((c) => c.startsWith('pasarela_panel='))!
    .split(';')[0]!;
  let csrf = '';
  const session: Session = {
    cookie,
    get: async (path) => {
      const res = await fetch(`${s.url}${path}`, { headers: { cookie }, redirect: 'manual' });
      const text = await res.text();
      csrf = /name="_csrf" value="([^"]+)"/.exec(text)?.[1] ?? csrf;
      return { status: res.status, text, headers: res.headers };
    },
    post: async (path, form) => {
      const body = new URLSearchParams();
      body.append('_csrf', csrf);
      for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
      const res = await fetch(`${s.url}${path}`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: body.toString(),
        redirect: 'manual',
      });
      return { status: res.status, text: await res.text(), headers: res.headers };
    },
  };
  // A first page, for the forms' CSRF token (every signed-in page carries it in the sign-out form).
  await session.get(`/panel/c/${L.clienteId}/historial`);
  return session;
}

/** The API's own answer to the same filters: what the panel must show and export. */
async function apiHistory(line: Line, query: string): Promise<string[]> {
  const r = await api(s.url, 'GET', `/api/historial_listar.php?por_pagina=500&${query}`, { key: line.clientKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.mensajes as Array<{ msg_id: string }>).map((m) => m.msg_id);
}

let L: Line;
let sibling: number;
const dest = numeroNuevo();
const other = numeroNuevo();
const tricky = '=HYPERLINK("http://evil","clic"), dos\nlíneas';

beforeAll(async () => {
  R = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true, simDeliveryMs: 10, simReadMs: 20, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  L = await linkedLine(s);
  for (const [to, text] of [
    [dest, tricky],
    [dest, 'segundo'],
    [other, 'a otro'],
  ] as const) {
    const r = await send(s, L, TEXT, { destinatario: to, mensaje: text, directo: 1 });
    expect(r.status, r.text).toBe(200);
  }
  const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: L.clientKey, json: { numero: numeroNuevo() } });
  expect(cel.status, cel.text).toBe(201);
  sibling = cel.body.celular_id;
});
afterAll(async () => {
  await R?.close();
  await s?.stop();
});

describe('movements', () => {
  it('past the counted cap (D-104) says 10,000+ plainly, in the status and the export, and pages on', async () => {
    const M = await linkedLine(s);
    // 10,001 manual movements written straight to the file: one more than the count reads.
    const db = new Database(join(s.dataDir, 'pasarela.db'));
    try {
      db.prepare(
        `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 10001)
         INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor)
         SELECT 1000 + n, ?, NULL, 1, n, 'relleno', 'operator' FROM g`,
      ).run(M.clienteId);
    } finally {
      db.close();
    }
    const c = await signIn(M.clientKey);
    const page = await c.get(`/panel/c/${M.clienteId}/movimientos?por_pagina=50`);
    expect(page.status, page.text).toBe(200);
    const status = />([^<]*movements · page 1 ·[^<]*)</.exec(page.text.replace(/\s+/g, ' '))?.[1];
    expect(status).toMatch(/^ ?10,000\+ movements · page 1 · /);
    expect(page.text.replace(/\s+/g, ' ')).toContain('Export these 10,000+ movements:');
    expect(page.text).not.toContain('more than 10000');
    expect(page.text).toContain('rel="next"');
  });
});

describe('history', () => {
  it('narrows the table with the API filters and exports exactly the filtered set, CSV-escaped', async () => {
    const c = await signIn(L.clientKey);
    const all = await c.get(`/panel/c/${L.clienteId}/historial`);
    expect(all.status).toBe(200);
    expect(all.text).toContain('3 messages');
    const narrowed = await c.get(`/panel/c/${L.clienteId}/historial?estado=&destinatario=${dest}&celular_id=&desde=&hasta=&por_pagina=`);
    expect(narrowed.status).toBe(200);
    expect(narrowed.text).toContain('2 messages');
    expect(narrowed.text).not.toContain('a otro');

    const want = await apiHistory(L, `destinatario=${dest}`);
    expect(want).toHaveLength(2);
    const csv = await c.get(`/panel/c/${L.clienteId}/historial.csv?destinatario=${dest}`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename="historial-${L.clienteId}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`));
    const [header, ...records] = parseCsv(csv.text);
    expect(header![0]).toBe('msg_id');
    expect(records.map((r) => r[0])).toEqual(want);
    // A formula is defused with a leading quote; the comma, quote and line break survive the round trip.
    expect(records.map((r) => r[header!.indexOf('texto')])).toContain(`'${tricky}`);

    const nd = await c.get(`/panel/c/${L.clienteId}/historial.ndjson?destinatario=${dest}`);
    expect(nd.headers.get('content-disposition')).toMatch(/\.ndjson"$/);
    const lines = nd.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg_id: string; texto: string });
    expect(lines.map((m) => m.msg_id)).toEqual(want);
    expect(lines.map((m) => m.texto)).toContain(tricky);
  });

  it("shows the API's refusal beside the field at fault, with its status", async () => {
    const c = await signIn(L.clientKey);
    const bad = await c.get(`/panel/c/${L.clienteId}/historial?desde=2026-13-45`);
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/id="f-desde-error"[^>]*>desde: &quot;2026-13-45&quot;: expected a calendar date YYYY-MM-DD or an RFC 3339 instant/);
    // A bound the schema refuses by its shape is said in the same words as the CLI's, never the validator's.
    const ayer = await c.get(`/panel/c/${L.clienteId}/historial?desde=2026-11-28T22:19:00Z&hasta=ayer`);
    expect(ayer.status).toBe(400);
    expect(ayer.text).toMatch(
      /id="f-hasta-error"[^>]*>hasta: expected a calendar date YYYY-MM-DD or an RFC 3339 instant with its offset, such as 2026-11-26T10:00:00Z/,
    );
    expect(ayer.text).not.toContain('fewer than');
    expect(ayer.text).not.toContain('querystring');
    expect(bad.text).toContain('api_codigo 100 · PARAMETROS_INVALIDOS');
    const estado = await c.get(`/panel/c/${L.clienteId}/historial?estado=perdido`);
    expect(estado.status).toBe(400);
    expect(estado.text).toContain('id="f-estado-error"');
    // The export refuses the same way, as a page and not a broken download.
    const csv = await c.get(`/panel/c/${L.clienteId}/historial.csv?hasta=2026-02-30`);
    expect(csv.status).toBe(400);
    expect(csv.headers.get('content-type')).toMatch(/^text\/html/);
    expect(csv.text).toContain('id="f-hasta-error"');
  });

  it("a celular session sees its own line only; another line's id is the API's 403", async () => {
    const c = await signIn(L.celularKey);
    const own = await c.get(`/panel/c/${L.clienteId}/historial`);
    expect(own.status).toBe(200);
    expect(own.text).toContain('3 messages');
    expect(own.text).not.toContain('id="f-celular_id"');
    const other = await c.get(`/panel/c/${L.clienteId}/historial?celular_id=${sibling}`);
    expect(other.status).toBe(403);
    expect(other.text).toContain('api_codigo');
  });

  it('pages: previous and next keep the filters', async () => {
    const c = await signIn(L.clientKey);
    const p1 = await c.get(`/panel/c/${L.clienteId}/historial?por_pagina=2`);
    expect(p1.text).toContain('page 1 of 2');
    expect(p1.text).toContain(`href="/panel/c/${L.clienteId}/historial?por_pagina=2&amp;page=2"`);
    const p2 = await c.get(`/panel/c/${L.clienteId}/historial?por_pagina=2&page=2`);
    expect(p2.text).toContain('page 2 of 2');
    expect(p2.text).toContain('rel="prev"');
    // First, last and a page number to go to, the filters kept in the form.
    expect(p1.text).toContain(`href="/panel/c/${L.clienteId}/historial?por_pagina=2&amp;page=2">Last page</a>`);
    expect(p2.text).toContain(`href="/panel/c/${L.clienteId}/historial?por_pagina=2&amp;page=1">First page</a>`);
    expect(p1.text).toMatch(/<form method="get" action="\/panel\/c\/\d+\/historial" class="goto">\s*<input type="hidden" name="por_pagina" value="2" \/>/);
  });

  it('a page past the end says so and links back to the last page; times are written one way, in UTC', async () => {
    const c = await signIn(L.clientKey);
    const far = await c.get(`/panel/c/${L.clienteId}/historial?por_pagina=2&page=9999`);
    expect(far.status).toBe(200);
    expect(far.text).toContain('No messages on this page: there are 2 pages.');
    expect(far.text).toContain(`href="/panel/c/${L.clienteId}/historial?por_pagina=2&amp;page=2">Go to the last page (2)</a>`);
    expect(far.text).not.toContain('rel="next"');
    const page = await c.get(`/panel/c/${L.clienteId}/historial`);
    expect(page.text).toMatch(/<td class="nowrap" data-label="created_at"><time datetime="[^"]+Z">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC<\/time><\/td>/);
    expect(page.text).not.toMatch(/>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z</);
    // A client with no messages: the empty state names a real endpoint.
    const other = await linkedLine(s, { saldo: 0 });
    const none = await (await signIn(other.clientKey)).get(`/panel/c/${other.clienteId}/historial`);
    expect(none.text).toContain('through the API (POST /api/mensaje_enviar_texto.php)');
    expect((await api(s.url, 'POST', TEXT, { key: other.celularKey, json: {} })).status).not.toBe(404);
  });
});

describe('inbox', () => {
  it('lists with the API filters and refuses a bad one beside its field', async () => {
    const c = await signIn(L.clientKey);
    const empty = await c.get(`/panel/c/${L.clienteId}/recibidos`);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('Nothing received yet');
    const bad = await c.get(`/panel/c/${L.clienteId}/recibidos?por_pagina=501`);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('id="f-por_pagina-error"');
  });
});

describe('webhook', () => {
  it('deliveries past the counted bound (D-135): a full page offers the next, a page past the end says so', async () => {
    const M = await linkedLine(s);
    // 1,001 delivered events written straight to the file: one more than the count reads.
    const db = new Database(join(s.dataDir, 'pasarela.db'));
    try {
      db.prepare(
        `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${DELIVERIES_COUNT_BOUND + 1})
         INSERT INTO eventos (cliente_id, celular_id, evento, data, fecha, entrega, intentos, proximo_intento_at, entregado_at, ultimo_status, ultima_duracion_ms)
         SELECT ?, NULL, 'webhook.test', json_object('n', n), 1000 + n, 'entregado', 1, 1000 + n, 1001 + n, 200, 5 FROM g`,
      ).run(M.clienteId);
    } finally {
      db.close();
    }
    const c = await signIn(M.clientKey);
    const pages = DELIVERIES_COUNT_BOUND / 20;
    const atBound = await c.get(`/panel/c/${M.clienteId}/webhook/entregas?page=${pages}`);
    expect(atBound.status, atBound.text).toBe(200);
    expect(atBound.text).toContain(`Page ${pages} of ${pages + 1}`);
    expect(atBound.text).toContain('rel="next"');
    const last = await c.get(`/panel/c/${M.clienteId}/webhook/entregas?page=${pages + 1}`);
    expect((last.text.match(/<tr>/g) ?? []).length).toBe(2); // the header and the 1,001st
    expect(last.text).not.toContain('rel="next"');
    const past = await c.get(`/panel/c/${M.clienteId}/webhook/entregas?page=${pages + 5}`);
    expect(past.status).toBe(200);
    expect(past.text).toContain('No deliveries on this page (past the 1,000 counted)');
    expect(past.text).not.toContain('No deliveries yet');
  });

  it('shows a generated secret once, sends a test event and lists its delivery', async () => {
    const c = await signIn(L.clientKey);
    expect((await c.get(`/panel/c/${L.clienteId}/webhook`)).text).toContain('No webhook yet');
    const saved = await c.post(`/panel/c/${L.clienteId}/webhook`, { url: `${R.url}/panel`, secret_modo: 'generar', eventos: ['message.status'], activo: '1' });
    // The secret is shown on the page the save redirects to, once (D-90).
    expect(saved.status).toBe(303);
    const shown = await c.get(saved.headers.get('location')!);
    expect(shown.status).toBe(200);
    const secret = /<code id="new-key" class="secret">([^<]+)<\/code>/.exec(shown.text)?.[1];
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const again = await c.get(`/panel/c/${L.clienteId}/webhook`);
    expect(again.text).not.toContain(secret!);
    expect(again.text).toContain('message.status');
    // Editing the events keeps the secret by default (the form's first choice): the receiver's check goes on passing.
    expect(again.text).toMatch(/<option value="mantener"\s+selected>/);
    const edited = await c.post(`/panel/c/${L.clienteId}/webhook`, {
      url: `${R.url}/panel`,
      secret_modo: 'mantener',
      eventos: ['message.status', 'session.status'],
      activo: '1',
    });
    expect(edited.status).toBe(303);
    expect((await s.core.store.getWebhook(L.clienteId))?.secret).toBe(secret);

    const probe = await c.post(`/panel/c/${L.clienteId}/webhook/probar`, {});
    expect(probe.status).toBe(303);
    await R.wait((h) => h.path === '/panel' && h.headers['x-service-event'] === 'webhook.test');
    await waitFor(async () => (await c.get(`/panel/c/${L.clienteId}/webhook/entregas`)).text.includes('HTTP 200'), 'the delivery listed');
    const fragment = await c.get(`/panel/c/${L.clienteId}/webhook/entregas`);
    expect(fragment.text).toMatch(/^<section id="entregas"/);
    expect(fragment.text).toContain('hx-trigger="every 3s"');
    expect(fragment.text).toMatch(/<time datetime="[^"]+">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC<\/time>/);
    expect(fragment.text).not.toMatch(/>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z</);
    const id = /name="id" value="([^"]+)"/.exec(fragment.text)![1]!;
    const before = R.of(id).length;
    const redo = await c.post(`/panel/c/${L.clienteId}/webhook/reenviar`, { id });
    expect(redo.status).toBe(303);
    await waitFor(() => R.of(id).length > before, 'the redelivery');
  });

  it("refuses a bad URL beside its field, and gives a celular session the API's 403", async () => {
    const c = await signIn(L.clientKey);
    // A secret choice the form does not offer is refused beside the secret, not saved unsigned.
    const odd = await c.post(`/panel/c/${L.clienteId}/webhook`, { url: 'https://example.com/x', secret_modo: 'otro', activo: '1' });
    expect(odd.status).toBe(400);
    expect(odd.text).toMatch(/id="f-secret-error"/);
    const bad = await c.post(`/panel/c/${L.clienteId}/webhook`, { url: 'ftp://example.com/x', secret_modo: 'ninguno', activo: '1' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('id="f-url-error"');
    expect(bad.text).toContain('value="ftp://example.com/x"');
    const cel = await signIn(L.celularKey);
    const page = await cel.get(`/panel/c/${L.clienteId}/webhook`);
    expect(page.status).toBe(403);
    expect(page.text).toContain('api_codigo');
  });
});
