import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/poll.js';
import { api, type TestServer, startTestServer } from '../helpers/server.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { admin, link, linkedLine, send, TEXT, uniqueText, waitEstado, type Line } from './send-helpers.js';
import { entregas, expectEnvelope, expectSigned, setWebhook, startReceiver, waitFor, type Hit, type Receiver } from './webhook-helpers.js';

/**
 * Webhook deliveries over real HTTP (docs/design.md §6, §7): the events of a linked
 * line (session.status, messages.received, message.status for direct and
 * queued sends) reach a receiver on 127.0.0.1 with the documented body and
 * headers, signed twice (checked with node:crypto and with the Standard
 * Webhooks library); subscriptions and `activo` filter them; webhook_test.
 */

const SECRET = 'pasarela-delivery-secret-0123456789abcdef';
const DEST = '525598765432';

let s: TestServer;
let R: Receiver;

/** A path of the receiver per client, so each test reads only its own hits. */
const hookOf = (line: Line) => `${R.url}/c${line.clienteId}`;
const hitsOf = (line: Line, evento?: string) =>
  R.hits.filter((h) => h.path === `/c${line.clienteId}` && (evento === undefined || h.headers['x-service-event'] === evento));
async function waitHits(line: Line, n: number, evento?: string, what = `${n} ${evento ?? ''} deliveries`): Promise<Hit[]> {
  await waitFor(() => hitsOf(line, evento).length >= n, what);
  return hitsOf(line, evento);
}

beforeAll(async () => {
  R = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true, simDeliveryMs: 30, simReadMs: 60, queue: { gapMinMs: 0, gapMaxMs: 0 } });
});
afterAll(async () => {
  await R?.close();
  await s?.stop();
});

describe('what is delivered, and how it is signed', () => {
  it('session.status: QR then scan, two signed deliveries with the docs/design.md §6 data', async () => {
    const L = await linkedLine(s, { link: false });
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['all'] }));
    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${L.celularId}`, { key: L.clientKey });
    expectOk(qr);
    await waitHits(L, 1, 'session.status');
    expectOk(await admin(s, 'POST', '/admin/sim/scan', { celular_id: L.celularId }));
    const hits = await waitHits(L, 2, 'session.status');
    expect(hits).toHaveLength(2);
    for (const h of hits) {
      expectEnvelope(h, 'session.status', L.clienteId);
      expectSigned(h, SECRET);
      expect(h.json.celular_id).toBe(L.celularId);
      expect(Object.keys(h.json.data).sort()).toEqual(['celular_id', 'estado', 'fecha', 'gateway_instancia', 'status', 'status_anterior']);
      expect(h.json.data).toMatchObject({ celular_id: L.celularId, gateway_instancia: qr.body.gateway_instancia });
      expect(h.headers['user-agent']).toMatch(/^pasarela-webhooks\//);
    }
    expect(hits.map((h) => [h.json.data.status_anterior, h.json.data.status, h.json.data.estado])).toEqual([
      [null, 'need_scan', 'desconectado'],
      ['need_scan', 'connected', 'activo'],
    ]);
    expect(new Set(hits.map((h) => h.json.id)).size).toBe(2);
  });

  it('messages.received: an inbound text, signed, with de, tipo, texto, media, gateway_msg_id', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    const rec = await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '+52 55 1234 5678', texto: 'hola, ¿qué tal? ñandú 🙂' });
    expectOk(rec);
    const [h] = await waitHits(L, 1, 'messages.received');
    expectEnvelope(h!, 'messages.received', L.clienteId);
    expectSigned(h!, SECRET);
    expect(h!.json.celular_id).toBe(L.celularId);
    expect(Object.keys(h!.json.data).sort()).toEqual(['celular_id', 'de', 'fecha', 'gateway_msg_id', 'media', 'texto', 'tipo']);
    expect(h!.json.data).toMatchObject({
      celular_id: L.celularId,
      de: '525512345678',
      tipo: 'texto',
      texto: 'hola, ¿qué tal? ñandú 🙂',
      media: null,
      gateway_msg_id: rec.body.gateway_msg_id,
    });
  });

  async function messageChain(L: Line, directo: boolean): Promise<void> {
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['message.status'] }));
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText('webhook'), ...(directo ? { directo: 1 } : {}) });
    expect(r.status, r.text).toBe(200);
    expect(r.body.modo).toBe(directo ? 'directo' : 'cola');
    const msgId = r.body.msg_id as string;
    const hits = await waitHits(L, 4, 'message.status');
    expect(hits).toHaveLength(4);
    // One client, a receiver that answers 200: delivered in event order.
    expect(hits.map((h) => [h.json.data.estado_anterior, h.json.data.estado])).toEqual([
      [null, 'pendiente'],
      ['pendiente', 'enviado'],
      ['enviado', 'entregado'],
      ['entregado', 'leido'],
    ]);
    for (const h of hits) {
      expectEnvelope(h, 'message.status', L.clienteId);
      expectSigned(h, SECRET);
      expect(h.json.celular_id).toBe(L.celularId);
      expect(Object.keys(h.json.data).sort()).toEqual([
        'celular_id',
        'destinatario',
        'error',
        'error_clase',
        'estado',
        'estado_anterior',
        'fecha',
        'gateway_msg_id',
        'msg_id',
        'tipo',
      ]);
      expect(h.json.data).toMatchObject({ msg_id: msgId, celular_id: L.celularId, destinatario: DEST, tipo: 'texto', error: null, error_clase: null });
    }
    expect(hits[0]!.json.data.gateway_msg_id).toBeNull();
    const gid = hits[1]!.json.data.gateway_msg_id as string;
    expect(gid).toMatch(/\S/);
    if (directo) expect(gid).toBe(r.body.gateway_msg_id);
    for (const h of hits.slice(2)) expect(h.json.data.gateway_msg_id).toBe(gid);
    expect(new Set(hits.map((h) => h.json.id)).size).toBe(4);
    // Every delivery is recorded as delivered at the first attempt (recorded once its answer is in: the receiver may see the post first).
    const mine = await until(
      async () => {
        const rows = (await entregas(s, L.clientKey)).filter((e) => hits.some((h) => h.json.id === e.id));
        return rows.length === 4 && rows.every((e) => e.estado !== 'pendiente') ? rows : null;
      },
      { what: 'the four deliveries recorded' },
    );
    for (const e of mine) {
      expect(e).toMatchObject({ evento: 'message.status', estado: 'entregado', intentos: 1, ultimo_error: null, proximo_intento_at: null });
      expect(e.intentos_detalle).toHaveLength(1);
      expect(e.intentos_detalle[0]).toMatchObject({ n: 1, status: 200, error: null });
    }
  }

  it('message.status of a direct send: pendiente, enviado, entregado, leido, in order, signed', async () => {
    await messageChain(await linkedLine(s), true);
  });

  it('message.status of a queued send: the same chain', async () => {
    await messageChain(await linkedLine(s), false);
  });

  it('non-ASCII text: the signatures cover the raw UTF-8 bytes sent; another secret does not verify', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '5255 1111 2222', texto: 'Größe “comillas” — 日本語' }));
    const [h] = await waitHits(L, 1);
    expect(h!.body).toBe(JSON.stringify(h!.json));
    expect(h!.raw.toString('utf8')).toContain('日本語');
    expectSigned(h!, SECRET);
    // A different secret does not verify.
    expect(() => expectSigned(h!, `${SECRET}x`)).toThrow();
  });

  it('no secret: no signature headers, the rest of the headers as always', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), eventos: ['messages.received'] }));
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto: 'sin firma' }));
    const [h] = await waitHits(L, 1);
    expectEnvelope(h!, 'messages.received', L.clienteId);
    expect(h!.headers).not.toHaveProperty('x-service-signature');
    expect(h!.headers).not.toHaveProperty('webhook-signature');
  });
});

describe('subscriptions', () => {
  it("eventos ['session.status'] gets session changes only: no message.status, no messages.received", async () => {
    const L = await linkedLine(s, { link: false });
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['session.status'] }));
    await link(s, L);
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expect(r.status, r.text).toBe(200);
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto: 'no suscrito' }));
    await waitEstado(s, r.body.msg_id, 'leido'); // the receipts of the send have been recorded (and journaled)
    expectOk(await admin(s, 'POST', '/admin/sim/logout', { celular_id: L.celularId }));
    // The logout is the last event; one client's deliveries go in order, so anything before it has arrived.
    await waitFor(() => hitsOf(L).some((h) => h.json.data.status === 'logged_out'), 'the logout delivery');
    expect(hitsOf(L).map((h) => [h.headers['x-service-event'], h.json.data.status])).toEqual([
      ['session.status', 'need_scan'],
      ['session.status', 'connected'],
      ['session.status', 'logged_out'],
    ]);
    // Unsubscribed events are not even queued.
    expect((await entregas(s, L.clientKey)).map((e) => e.evento)).toEqual(['session.status', 'session.status', 'session.status']);
  });

  it('activo false gets nothing (but webhook_test still goes)', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['all'], activo: false }));
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto: 'inactivo' }));
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expect(r.status, r.text).toBe(200);
    await waitEstado(s, r.body.msg_id, 'leido');
    const t = await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
    expectOk(t);
    await waitHits(L, 1);
    // One look of the dispatcher now: the journal moved, and whatever it would have sent, ended.
    await s.dispatcher!.step();
    expect(hitsOf(L).map((h) => h.headers['x-service-event'])).toEqual(['webhook.test']);
    expect((await entregas(s, L.clientKey)).map((e) => e.evento)).toEqual(['webhook.test']);
  });

  it("'all' gets every kind", async () => {
    const L = await linkedLine(s, { link: false });
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: 'all' }));
    await link(s, L);
    expectOk(await admin(s, 'POST', '/admin/sim/receive', { celular_id: L.celularId, de: '525511112222', texto: 'todo' }));
    const r = await send(s, L, TEXT, { destinatario: DEST, mensaje: uniqueText(), directo: 1 });
    expect(r.status, r.text).toBe(200);
    await waitHits(L, 2, 'session.status');
    await waitHits(L, 1, 'messages.received');
    await waitHits(L, 4, 'message.status');
    for (const h of hitsOf(L)) expectSigned(h, SECRET);
  });

  it('webhook_test delivers a signed webhook.test event even when not subscribed to anything it would match', async () => {
    const L = await linkedLine(s);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: SECRET, eventos: ['messages.received'] }));
    const t = await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey });
    expectOk(t);
    expect(t.body.id).toMatch(/^evt_/);
    const [h] = await waitHits(L, 1);
    expectEnvelope(h!, 'webhook.test', L.clienteId);
    expectSigned(h!, SECRET);
    expect(h!.json.id).toBe(t.body.id);
    expect(h!.json.celular_id).toBeNull();
    expect(h!.json.data).toEqual({ mensaje: expect.any(String) });
  });

  it('a secret stored under the older rule (x: any length) still signs every delivery; only a new set is checked (D-89)', async () => {
    const L = await linkedLine(s, { link: false });
    // As a store from before D-89 holds it: written past today's rule.
    await s.core.store.setWebhook({ cliente_id: L.clienteId, url: hookOf(L), secret: 'x', eventos: ['all'], activo: true }, s.core.clock.now());
    expectOk(await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey }));
    const [h] = await waitHits(L, 1);
    expectSigned(h!, 'x');
    // Setting it again is refused; the stored one is untouched and goes on signing.
    expectError(await setWebhook(s, L.clientKey, { url: hookOf(L), secret: 'x' }), 400, 100);
    expectOk(await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey }));
    const hits = await waitHits(L, 2);
    expectSigned(hits[1]!, 'x');
  });

  it('webhook_test is 409 when no webhook is configured (never, or removed)', async () => {
    const L = await linkedLine(s, { link: false });
    expectError(await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey }), 409, 604);
    expectOk(await setWebhook(s, L.clientKey, { url: hookOf(L) }));
    expectOk(await api(s.url, 'DELETE', '/api/webhook.php', { key: L.clientKey }));
    expectError(await api(s.url, 'POST', '/api/webhook_test.php', { key: L.clientKey }), 409, 604);
    await s.dispatcher!.step();
    expect(hitsOf(L)).toEqual([]);
  });
});
