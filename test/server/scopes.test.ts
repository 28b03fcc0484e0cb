import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import { api, seedClient, startTestServer, type ApiResponse, type Seeded, type TestServer } from '../helpers/server.js';
import { expectError, numeroNuevo } from '../helpers/expect.js';
import { dataUri, MP3, MP4, PDF, PNG, startMediaServer, WEBP, type MediaServer } from './send-helpers.js';
import { startReceiver, type Receiver } from './webhook-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Authority by credential (docs/decisions.md D-17), one
 * table over every client route and the operator's: for each route and each
 * kind of credential, the status, and for every refusal, that nothing in the
 * store moved (clients, lines, webhook, deliveries, messages, audit, sim
 * sessions). Line-targeted routes are also tried on a sibling line of the
 * same client (403 for a line credential) and on another client's line (404).
 */

type Cred = 'none' | 'operator' | 'other' | 'legacy' | 'gateway' | 'celular' | 'client';
/** The order cases run in: the one allowed to change client A's state comes last. */
const CREDS: Cred[] = ['none', 'operator', 'other', 'legacy', 'gateway', 'celular', 'client'];
const LINE: Cred[] = ['celular', 'gateway', 'legacy'];

let s: TestServer;
let A: Seeded;
let B: Seeded;
let sibling: number;
let legacyToken: string;
let media: MediaServer;
let receiver: Receiver;
let hookUrl: string;
let deliveryId: string;

function credential(c: Cred): string | undefined {
  switch (c) {
    case 'none':
      return undefined;
    case 'operator':
      return s.adminToken;
    case 'other':
      return B.clientKey;
    case 'legacy':
      return legacyToken;
    case 'gateway':
      return A.gatewayToken;
    case 'celular':
      return A.celularKey;
    case 'client':
      return A.clientKey;
  }
}

interface Route {
  method: string;
  /** Tells apart rows on the same path. */
  note?: string;
  /** `id` is the line the call names (A's own line unless a target case says otherwise). */
  path: (id: number) => string;
  body?: (id: number) => Record<string, unknown>;
  /** The credential travels as Bearer, or (legacy endpoint) in the body field `token`. */
  keyIn?: 'bearer' | 'token';
  status: Record<Cred, number>;
  /** Names a line: also tried on a sibling (line credentials: 403) and on client B's line (A's credentials: 404). */
  targeted?: boolean;
  /** The client case needs a line of its own it may destroy. */
  freshLineForClient?: boolean;
}

// Status tables by kind of route.
const readAll = { none: 401, operator: 401, other: 200, legacy: 200, gateway: 200, celular: 200, client: 200 };
/** Client-wide, client key only; another client's key acts on its own client. */
const clientWide = (ok = 200, other = ok) => ({ none: 401, operator: 401, other, legacy: 403, gateway: 403, celular: 403, client: ok });
/** On A's own line: line credentials allowed. */
const ownLine = (ok = 200) => ({ none: 401, operator: 401, other: 404, legacy: ok, gateway: ok, celular: ok, client: ok });
/** On A's own line, client key only. */
const lineClientOnly = (ok = 200) => ({ none: 401, operator: 401, other: 404, legacy: 403, gateway: 403, celular: 403, client: ok });
const operatorOnly = (ok = 200) => ({ none: 401, operator: ok, other: 401, legacy: 401, gateway: 401, celular: 401, client: 401 });

const hook = () => ({ url: hookUrl, eventos: ['messages.received'] });
const dest = () => numeroNuevo();

const SENDS: Array<[string, () => Record<string, unknown>]> = [
  ['texto', () => ({ mensaje: `hola ${Math.random()}` })],
  ['imagen', () => ({ url: `${media.base}/img.png` })],
  ['imagen_base64', () => ({ imageBase64: dataUri('image/png', PNG) })],
  ['documento', () => ({ url: `${media.base}/doc.pdf`, filename: 'a.pdf' })],
  ['documento_base64', () => ({ documentBase64: dataUri('application/pdf', PDF), filename: 'a.pdf' })],
  ['audio', () => ({ url: `${media.base}/audio.mp3` })],
  ['audio_base64', () => ({ audioBase64: dataUri('audio/mpeg', MP3) })],
  ['video', () => ({ url: `${media.base}/video.mp4` })],
  ['video_base64', () => ({ videoBase64: dataUri('video/mp4', MP4) })],
  ['sticker', () => ({ url: `${media.base}/sticker.webp` })],
  ['sticker_base64', () => ({ stickerBase64: dataUri('image/webp', WEBP) })],
];

const ROUTES: Route[] = [
  // Account: every client credential reads its own client.
  { method: 'GET', path: () => '/api/info.php', status: readAll },
  { method: 'GET', path: () => '/api/saldo.php', status: readAll },
  { method: 'GET', path: (id) => `/api/saldo.php?celular_id=${id}`, status: ownLine(), targeted: true },
  { method: 'GET', path: () => '/api/celulares.php', status: readAll },
  { method: 'GET', path: () => '/api/historial_listar.php', status: readAll },
  { method: 'GET', path: (id) => `/api/historial_listar.php?celular_id=${id}`, status: ownLine(), targeted: true },

  // Lines.
  { method: 'GET', path: (id) => `/api/celular.php?id=${id}`, status: ownLine(), targeted: true },
  { method: 'GET', path: (id) => `/api/celular_status.php?id=${id}`, status: ownLine(), targeted: true },
  { method: 'POST', path: (id) => `/api/celular_qr.php?id=${id}`, body: () => ({}), status: ownLine(), targeted: true },
  { method: 'POST', path: (id) => `/api/celular_codigo.php?id=${id}`, body: () => ({}), status: ownLine(), targeted: true },
  {
    method: 'POST',
    path: (id) => `/api/celular_editar.php?id=${id}`,
    note: 'label, caps, hours',
    body: () => ({ nombre_interno: `n${Math.floor(Math.random() * 1e6)}`, max_envios_por_minuto: 900, hora_fin_permitido: '23:59' }),
    status: ownLine(),
    targeted: true,
  },
  {
    method: 'POST',
    path: (id) => `/api/celular_editar.php?id=${id}`,
    note: 'estado',
    body: () => ({ estado: 'activo', nombre_interno: `e${Math.floor(Math.random() * 1e6)}` }),
    status: lineClientOnly(),
    targeted: true,
  },
  { method: 'POST', path: (id) => `/api/celular_eliminar.php?id=${id}`, body: () => ({}), status: lineClientOnly(), targeted: true, freshLineForClient: true },
  ...['/api/celular_crear.php', '/api/celular-crear.php', '/api/admin-celular-crear.php'].map((p): Route => ({
    method: 'POST',
    path: () => p,
    body: () => ({ numero: numeroNuevo() }),
    status: clientWide(201),
  })),
  ...['/api/celular_vincular_qr.php', '/api/celular-vincular-qr.php', '/api/celular_vincular_codigo.php', '/api/celular-vincular-codigo.php'].map(
    (p): Route => ({ method: 'POST', path: () => p, body: () => ({ numero: numeroNuevo() }), status: clientWide() }),
  ),

  // Webhook: client-wide, reads included.
  { method: 'GET', path: () => '/api/webhook.php', status: clientWide() },
  { method: 'POST', path: () => '/api/webhook.php', body: hook, status: clientWide() },
  { method: 'POST', path: () => '/api/webhook_configurar.php', note: 'op=get', body: () => ({ op: 'get' }), status: clientWide() },
  { method: 'POST', path: () => '/api/webhook_configurar.php', note: 'op=set', body: () => ({ op: 'set', ...hook() }), status: clientWide() },
  { method: 'GET', path: () => '/api/webhook_entregas.php', status: clientWide() },
  { method: 'POST', path: () => '/api/webhook_test.php', body: () => ({}), status: clientWide() },
  // B asking for A's delivery: not found, like any object of another client.
  { method: 'POST', path: () => `/api/webhook_reenviar.php?id=${deliveryId}`, body: () => ({}), status: clientWide(200, 404) },
  { method: 'POST', path: () => '/api/webhook_configurar.php', note: 'op=delete', body: () => ({ op: 'delete' }), status: clientWide() },
  { method: 'POST', path: () => '/api/webhook_restaurar.php', body: () => ({}), status: clientWide() },
  { method: 'DELETE', path: () => '/api/webhook.php', status: clientWide() },

  // Sends: from the line the credential names; B's key naming A's line is 404.
  ...SENDS.map(([tipo, extra]): Route => ({
    method: 'POST',
    path: () => `/api/mensaje_enviar_${tipo}.php`,
    body: (id) => ({ destinatario: dest(), celular_id: id, directo: 1, ...extra() }),
    status: ownLine(),
    targeted: true,
  })),
  // The legacy endpoint takes a line's token in the body; a client key is 403.
  ...['/panel/api_wa.php', '/api/api-legacy.php'].map((p): Route => ({
    method: 'POST',
    path: () => p,
    keyIn: 'token',
    body: () => ({ destinatario: dest(), mensaje: `legado ${Math.random()}`, modo: 'directo' }),
    status: { none: 401, operator: 401, other: 403, legacy: 200, gateway: 200, celular: 200, client: 403 },
  })),

  // The operator's side: the operator token only.
  { method: 'GET', path: () => '/admin/clientes', status: operatorOnly() },
  { method: 'POST', path: () => '/admin/saldo', body: () => ({ cliente_id: A.clienteId, monto: 5 }), status: operatorOnly() },
];

/** Everything a request could change, read straight from the store. */
async function stateOf(clienteId: number) {
  const st = s.core.store;
  const celulares = await st.listCelulares(clienteId);
  return {
    cliente: await st.getCliente(clienteId),
    celulares,
    webhook: await st.getWebhook(clienteId),
    entregas: await st.listEntregas(clienteId, 500),
    mensajes: (await st.listMensajes({ cliente_id: clienteId, page: 1, por_pagina: 1 })).total,
    audit: await st.listAudit({ cliente_id: clienteId, limit: 1000 }),
    sesiones: (await st.kvList('sim.sessions')).filter((x) => celulares.some((c) => c.gateway_instancia === x.key)),
  };
}
const snapshot = async () => ({ A: await stateOf(A.clienteId), B: await stateOf(B.clienteId) });

/** Deliveries settle (the receiver answers 200), so a later comparison sees no moving part. */
async function settle(): Promise<void> {
  await until(
    async () => {
      for (const c of [A.clienteId, B.clienteId]) {
        if ((await s.core.store.listEntregas(c, 500)).some((e) => e.estado === 'pendiente')) return false;
      }
      return true;
    },
    { what: 'deliveries settled' },
  );
}

async function call(r: Route, cred: Cred, id: number): Promise<ApiResponse> {
  const key = credential(cred);
  const body = r.body?.(id);
  if (r.keyIn === 'token') return api(s.url, r.method, r.path(id), { json: { ...(body ?? {}), ...(key ? { token: key } : {}) } });
  return api(s.url, r.method, r.path(id), { key, ...(body ? { json: body } : {}) });
}

/** A refused call: the expected status in the error shape, no secret echoed, and the store unchanged. */
async function expectRefused(r: Route, cred: Cred, id: number, status: number): Promise<void> {
  const before = await snapshot();
  // A write would stamp a new time, so even a no-op update shows.
  (s.clock as ManualClock).advance(1);
  const res = await call(r, cred, id);
  expectError(res, status);
  expect(res.text).not.toContain('receiver-token');
  expect(await snapshot()).toEqual(before);
}

beforeAll(async () => {
  // Fixed noon, UTC: direct sends are inside the lines' allowed hours. Refused keys
  // are counted by the auth throttle; keep it out of the way here.
  s = await startTestServer(
    {
      clock: new ManualClock(Date.UTC(2030, 5, 12, 12, 0, 0)),
      tz: 'UTC',
      allowPrivateUrls: true,
      authMaxFailures: 100_000,
      queue: { gapMinMs: 0, gapMaxMs: 0 },
    },
    { inject: true },
  );
  media = await startMediaServer();
  receiver = await startReceiver(200);
  hookUrl = `${receiver.url}/hooks?token=receiver-token-123`;
  A = await seedClient(s, { numero: numeroNuevo() });
  B = await seedClient(s, { numero: numeroNuevo() });
  const admin = (method: string, path: string, json: unknown) => api(s.url, method, path, { key: s.adminToken, json });
  expect((await admin('POST', '/admin/saldo', { cliente_id: A.clienteId, monto: 10_000 })).status).toBe(200);
  legacyToken = `legacy-scope-${A.celularId}-abcdefghijkl`;
  expect((await admin('POST', `/admin/celulares/${A.celularId}/token-legacy`, { token: legacyToken })).status).toBe(200);
  const sib = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
  expect(sib.status, sib.text).toBe(201);
  sibling = sib.body.celular_id;
  // A's line is linked (sends need it) and may send plenty.
  for (const id of [A.celularId, B.celularId]) {
    const key = id === A.celularId ? A.clientKey : B.clientKey;
    expect((await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key })).status).toBe(200);
    expect((await admin('POST', '/admin/sim/scan', { celular_id: id })).status).toBe(200);
    await until(async () => (await s.core.store.getCelular(id))?.estado === 'activo', { what: 'line activo' });
  }
  const caps = { max_envios_por_minuto: 1000, max_envios_por_hora: 50_000, max_envios_por_dia: null };
  expect((await api(s.url, 'POST', `/api/celular_editar.php?id=${A.celularId}`, { key: A.clientKey, json: caps })).status).toBe(200);
  // A webhook (on incoming messages only, which nothing here makes) and one delivery to redeliver.
  expect((await api(s.url, 'POST', '/api/webhook.php', { key: A.clientKey, json: hook() })).status).toBe(200);
  const t = await api(s.url, 'POST', '/api/webhook_test.php', { key: A.clientKey });
  expect(t.status, t.text).toBe(200);
  deliveryId = t.body.id;
  await settle();
});
afterAll(async () => {
  await s?.stop();
  await media?.close();
  await receiver?.close();
});

const label = (r: Route) => `${r.method} ${r.path(0).replace(/=(0|undefined)$/, '=<id>')}${r.note ? ` (${r.note})` : ''}`;

describe.each(ROUTES.map((r) => [label(r), r] as const))('%s', (_name, r) => {
  for (const cred of CREDS) {
    const status = r.status[cred];
    it(`${cred}: ${status}`, async () => {
      if (status >= 400) return expectRefused(r, cred, A.celularId, status);
      let id = A.celularId;
      if (r.freshLineForClient && cred === 'client') {
        const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
        id = c.body.celular_id;
      }
      const before = await stateOf(A.clienteId);
      const res = await call(r, cred, id);
      expect(res.status, res.text).toBe(status);
      expect(res.body.ok).toBe(true);
      await settle();
      // Another client's key acts on its own client only.
      if (cred === 'other') expect(await stateOf(A.clienteId)).toEqual(before);
    });
  }
  if (r.targeted) {
    for (const cred of LINE) {
      it(`${cred} on a sibling line of its client: 403`, () => expectRefused(r, cred, sibling, 403));
    }
    for (const cred of ['client', ...LINE] as Cred[]) {
      it(`${cred} on another client's line: 404`, () => expectRefused(r, cred, B.celularId, 404));
    }
  }
});

describe('what a refusal says', () => {
  it('a line credential reading the webhook never sees the receiver URL or its token', async () => {
    expect((await api(s.url, 'POST', '/api/webhook.php', { key: A.clientKey, json: hook() })).status).toBe(200);
    for (const key of [A.celularKey, A.gatewayToken, legacyToken]) {
      const r = await api(s.url, 'GET', '/api/webhook.php', { key });
      expectError(r, 403, 201);
      expect(r.text).not.toContain(receiver.url);
      expect(r.body.error).toMatch(/client key/);
    }
    const own = await api(s.url, 'GET', '/api/webhook.php', { key: A.clientKey });
    expect(own.body.url).toBe(hookUrl);
  });
});
