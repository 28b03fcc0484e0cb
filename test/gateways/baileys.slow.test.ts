import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../../src/core/ports/gateway.js';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * The engine (`--gateway baileys`) in an in-process server, real Baileys
 * against the fake network (test/fakewa): linking by QR through the API,
 * sends the contact decrypts, receipts to `leido`, a recipient not on the
 * network, incoming messages once, the network's restarts, a restart of
 * `serve` without a new scan, and the phone removing the device.
 */

let fake: FakeNetwork;
let s: TestServer;
let A: Seeded;
const dataDir = tempDir('pasarela-engine-');
const LINE = numeroNuevo();
const CONTACT = numeroNuevo();
const OFF = numeroNuevo();
const events: GatewayEvent[] = [];

const start = async () => {
  s = await startTestServer({ dataDir, gateway: 'baileys', baileysWsUrl: fake.wsUrl, engine: { ca: fake.ca }, allowPrivateUrls: true });
  s.core.gateway.onEvent((e) => void events.push(e));
};
const line = async () => (await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: A.clientKey })).body.celular;
const instancia = async () => (await line()).gateway_instancia as string;
const sendText = (texto: string, to = CONTACT) =>
  api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: A.celularKey, json: { destinatario: to, mensaje: texto, directo: 1 } });
const mensaje = async (id: string) => (await api(s.url, 'GET', `/api/mensaje.php?msg_id=${id}`, { key: A.clientKey })).body.mensaje;
const recibidos = async () => (await api(s.url, 'GET', `/api/recibidos_listar.php?celular_id=${A.celularId}`, { key: A.clientKey })).body;

beforeAll(async () => {
  fake = await startFakeNetwork({ log: process.env.FAKEWA_LOG ? (l) => console.log(l) : undefined });
  await fake.trustInProcess();
  fake.contact(CONTACT);
  fake.contact(OFF, { onNetwork: false });
  await start();
  A = await seedClient(s, { numero: LINE, saldo: 1000 });
});
afterAll(async () => {
  await s?.stop();
  await fake?.close();
});

describe('the engine against the fake network', () => {
  it('links by QR: the API shows the QR, the phone scans it, the line turns connected and activo by itself', async () => {
    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.clientKey, json: {} });
    expectOk(qr);
    expect(qr.body.status).toBe('need_scan');
    expect(qr.body.qr).toMatch(/,/);
    await fake.scanQr(qr.body.qr as string, LINE);
    await until(async () => (await line()).estado === 'activo', { what: 'the line activo' });
    const st = await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey });
    expect(st.body.status).toBe('connected');
    // Through 515 (restart required after the scan) and a login: never two sockets at once.
    expect(fake.maxConcurrent(LINE)).toBe(1);
  });

  it('a text: the contact decrypts it, the gateway id is the network id, receipts take it to leido', async () => {
    const r = await sendText('hola desde pasarela');
    expectOk(r);
    const got = await fake.contact(CONTACT).waitFor((m) => m.id === r.body.gateway_msg_id, 30_000);
    expect(got.message.extendedTextMessage?.text ?? got.message.conversation).toBe('hola desde pasarela');
    await until(async () => (await mensaje(r.body.msg_id as string))?.estado === 'leido', { what: () => JSON.stringify(events.slice(-8)), timeoutMs: 30_000 });
  });

  it('delivery then read, each as the contact sends it', async () => {
    fake.autoReceipts(false);
    try {
      const r = await sendText('segundo');
      expectOk(r);
      const id = r.body.gateway_msg_id as string;
      await fake.contact(CONTACT).waitFor((m) => m.id === id, 30_000);
      await fake.receipt(LINE, id, 'delivery', CONTACT);
      await until(async () => (await mensaje(r.body.msg_id as string))?.estado === 'entregado', { what: 'entregado' });
      await fake.receipt(LINE, id, 'read', CONTACT);
      await until(async () => (await mensaje(r.body.msg_id as string))?.estado === 'leido', { what: 'leido' });
    } finally {
      fake.autoReceipts(true);
    }
  });

  it('a recipient not on the network is refused for good, and the charge refunded', async () => {
    const r = await sendText('nadie', OFF);
    // DESTINATARIO_RECHAZADO: refused for good, never retried.
    expect(r.body.api_codigo, r.text).toBe(704);
    expect(String(r.body.error)).toMatch(/not on WhatsApp/);
    expect(String(r.body.error)).toMatch(/refunded/);
    expect(fake.contact(OFF).received()).toEqual([]);
  });

  it('a document from base64: the contact decrypts the same bytes', async () => {
    const pdf = Buffer.from(`%PDF-1.4\n${'contenido '.repeat(300)}\n%%EOF\n`, 'latin1');
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_documento_base64.php', {
      key: A.celularKey,
      json: { destinatario: CONTACT, documentBase64: pdf.toString('base64'), filename: 'factura.pdf', directo: 1 },
    });
    expectOk(r);
    const got = await fake.contact(CONTACT).waitFor((m) => m.id === r.body.gateway_msg_id, 30_000);
    expect(got.message.documentMessage?.fileName).toBe('factura.pdf');
    expect(got.media?.equals(pdf)).toBe(true);
  });

  it('an incoming text becomes one inbox row and one event, also when the network delivers it again after a restart it asked for', async () => {
    const id = await fake.sendText(CONTACT, LINE, 'hola de vuelta');
    await until(async () => (await recibidos()).recibidos?.some((m: { gateway_msg_id: string }) => m.gateway_msg_id === id), { what: 'the inbox row' });
    fake.restartRequired(LINE);
    await until(async () => (await line()).estado === 'activo' && events.some((e) => e.type === 'session' && e.status === 'connecting'), {
      what: 'back after 515',
    });
    await until(async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey })).body.status === 'connected', {
      what: 'connected again',
    });
    const id2 = await fake.sendText(CONTACT, LINE, 'otra vez');
    await until(async () => (await recibidos()).recibidos?.some((m: { gateway_msg_id: string }) => m.gateway_msg_id === id2), { what: 'the second row' });
    const rows = ((await recibidos()).recibidos as Array<{ gateway_msg_id: string; texto: string }>).filter((m) => m.gateway_msg_id === id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.texto).toBe('hola de vuelta');
    expect(fake.maxConcurrent(LINE)).toBe(1);
  });

  it("a stanza the network delivers again after a reconnect (the line's receipt lost on the way) is stored once; the journal is empty after", async () => {
    const inst = await instancia();
    const journal = async () => (await s.core.store.readAuthKind(inst, 'inbound-plain')).size;
    fake.loseAcks(true);
    let id = '';
    try {
      id = await fake.sendText(CONTACT, LINE, 'recibo perdido');
      await until(async () => (await recibidos()).recibidos?.some((m: { gateway_msg_id: string }) => m.gateway_msg_id === id), { what: 'the inbox row' });
      // The line did acknowledge it; the network did not take it.
      await until(async () => fake.acks(LINE).some((a) => a.endsWith(`:${id}`)), { what: 'the receipt sent' });
      expect(fake.unacked(LINE)).toContain(id);
      await until(async () => (await journal()) === 0, { what: 'the journal emptied once the row is durable' });
    } finally {
      fake.loseAcks(false);
    }
    const logins = fake.connections(LINE).length;
    fake.restartRequired(LINE);
    await until(async () => fake.connections(LINE).length > logins && !fake.unacked(LINE).includes(id), { what: 'delivered again and taken this time' });
    const id2 = await fake.sendText(CONTACT, LINE, 'después');
    await until(async () => (await recibidos()).recibidos?.some((m: { gateway_msg_id: string }) => m.gateway_msg_id === id2), { what: 'a later row' });
    const rows = ((await recibidos()).recibidos as Array<{ gateway_msg_id: string; texto: string }>).filter((m) => m.gateway_msg_id === id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.texto).toBe('recibo perdido');
    expect(events.filter((e) => e.type === 'inbound' && e.gatewayMsgId === id).length).toBeGreaterThanOrEqual(1);
    await until(async () => (await journal()) === 0, { what: 'the journal empty after normal traffic' });
  });

  it('a restart of serve: the line comes back from the stored state, no new scan', async () => {
    const before = fake.connections(LINE).length;
    await s.close();
    await start();
    await until(async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey })).body.status === 'connected', {
      what: 'connected after the restart',
      timeoutMs: 30_000,
    });
    expect(fake.connections(LINE).length).toBeGreaterThan(before);
    const r = await sendText('tras reiniciar');
    expectOk(r);
    await fake.contact(CONTACT).waitFor((m) => m.id === r.body.gateway_msg_id, 30_000);
    expect(fake.maxConcurrent(LINE)).toBe(1);
  });

  it('links a second line by pairing code: the same code until linked, then connected by itself', async () => {
    const numero = numeroNuevo();
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero } });
    expect(c.status, c.text).toBe(201);
    const id = c.body.celular_id as number;
    const first = await api(s.url, 'POST', `/api/celular_codigo.php?id=${id}`, { key: A.clientKey });
    expectOk(first);
    expect(first.body.codigo).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    const again = await api(s.url, 'POST', `/api/celular_codigo.php?id=${id}`, { key: A.clientKey });
    expect(again.body.codigo).toBe(first.body.codigo);
    // The phone is typed the eight characters (the dash is only how the code is shown).
    await fake.enterPairingCode(numero, (first.body.codigo as string).replace('-', ''));
    await until(async () => (await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key: A.clientKey })).body.celular.estado === 'activo', {
      what: 'the second line activo',
      timeoutMs: 30_000,
    });
    expect(fake.maxConcurrent(numero)).toBe(1);
  });

  it('the phone removes the device: logged_out, the line desconectado, the state gone', async () => {
    const inst = await instancia();
    fake.logoutFromPhone(LINE);
    await until(async () => (await line()).estado === 'desconectado', { what: 'desconectado' });
    expect(await s.core.gateway.status(inst)).toBe('logged_out');
    await until(async () => !(await s.core.store.authInstancias()).includes(inst), { what: 'the state removed' });
  });
});
