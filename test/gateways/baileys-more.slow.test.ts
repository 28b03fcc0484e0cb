import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';
import { MP3, MP4, PNG, startMediaServer, WEBP, type MediaServer } from '../server/send-helpers.js';

/**
 * More of the engine against the fake network, in process: image, audio,
 * video and sticker sends the contact decrypts byte for byte (base64 and by
 * URL from a local HTTP server); a line whose stored state does not open
 * does not stop the engine's start (it alone needs a new scan, which then
 * works); a message stanza the network never acknowledged is not taken as
 * sent; a line replaced by another connection (440) says so and does not
 * take the session back, not even by the health pass, until the operator restarts it.
 */
let fake: FakeNetwork;
let s: TestServer;
let media: MediaServer;
let A: Seeded;
const dataDir = tempDir('pasarela-engine-more-');
const LINE = numeroNuevo();
const LINE2 = numeroNuevo();
const CONTACT = numeroNuevo();
let line2 = 0;
const warnings: string[] = [];

const start = async () => {
  // No periodic health pass: the 440 test runs one with checkNow (a periodic one would hold its lease for an interval).
  s = await startTestServer({ dataDir, gateway: 'baileys', baileysWsUrl: fake.wsUrl, engine: { ca: fake.ca }, allowPrivateUrls: true, healthIntervalMs: 0 });
};
const status = async (id: number) => (await api(s.url, 'GET', `/api/celular_status.php?id=${id}`, { key: A.clientKey })).body.status as string;
const celular = async (id: number) => (await api(s.url, 'GET', `/api/celular.php?id=${id}`, { key: A.clientKey })).body.celular;
const linkByQr = async (id: number, numero: string) => {
  const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${id}`, { key: A.clientKey, json: {} });
  expect(qr.body.status, qr.text).toBe('need_scan');
  await fake.scanQr(qr.body.qr as string, numero);
  await until(async () => (await status(id)) === 'connected', { what: `line ${numero} connected`, timeoutMs: 60_000 });
};

beforeAll(async () => {
  fake = await startFakeNetwork();
  await fake.trustInProcess();
  fake.contact(CONTACT);
  media = await startMediaServer();
  await start();
  A = await seedClient(s, { numero: LINE, saldo: 1000 });
  await linkByQr(A.celularId, LINE);
});
afterAll(async () => {
  await s?.stop();
  await media?.close();
  await fake?.close();
});

const KINDS = [
  { kind: 'imagen', field: 'imageBase64', file: '/img.png', bytes: PNG, proto: 'imageMessage', extra: { caption: 'una imagen' } },
  { kind: 'audio', field: 'audioBase64', file: '/audio.mp3', bytes: MP3, proto: 'audioMessage', extra: {} },
  { kind: 'video', field: 'videoBase64', file: '/video.mp4', bytes: MP4, proto: 'videoMessage', extra: { caption: 'un video' } },
  { kind: 'sticker', field: 'stickerBase64', file: '/sticker.webp', bytes: WEBP, proto: 'stickerMessage', extra: {} },
] as const;

describe('media through the engine: the contact decrypts the same bytes', () => {
  it.each(KINDS)('$kind from base64 and from a URL', async ({ kind, field, file, bytes, proto, extra }) => {
    for (const body of [{ [field]: bytes.toString('base64') }, { url: `${media.base}${file}` }]) {
      const path = `/api/mensaje_enviar_${kind}${'url' in body ? '' : '_base64'}.php`;
      const r = await api(s.url, 'POST', path, { key: A.celularKey, json: { destinatario: CONTACT, directo: 1, ...extra, ...body } });
      expectOk(r);
      const got = await fake.contact(CONTACT).waitFor((m) => m.id === r.body.gateway_msg_id, 30_000);
      expect(got.message[proto], `${path}: ${JSON.stringify(Object.keys(got.message))}`).toBeTruthy();
      expect(got.media?.equals(bytes), `${path}: the decrypted bytes`).toBe(true);
    }
    expect(media.hits).toContain(`GET ${file}`);
  });
});

describe('a message stanza lost on the way to the network', () => {
  it('is not taken as sent without the network ack: a direct send answers its outcome unknown; the line comes back and sends', async () => {
    const send = (mensaje: string) =>
      api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: A.celularKey, json: { destinatario: CONTACT, mensaje, directo: 1 } });
    const read = (texto: string) =>
      fake
        .contact(CONTACT)
        .received()
        .filter((m) => JSON.stringify(m.message).includes(`"${texto}"`));
    fake.loseNextMessage(LINE);
    const lost = await send('perdido en el camino');
    // GATEWAY_UNCERTAIN: written to the socket, never acknowledged; it may or may not have gone.
    expect(lost.body.api_codigo, lost.text).toBe(705);
    expect(read('perdido en el camino')).toEqual([]);
    await until(async () => (await status(A.celularId)) === 'connected', { what: 'the line connected again', timeoutMs: 60_000 });
    const next = await send('después del corte');
    expectOk(next);
    await fake.contact(CONTACT).waitFor((m) => m.id === next.body.gateway_msg_id, 30_000);
    expect(read('perdido en el camino')).toEqual([]);
  });
});

describe('a line whose stored state does not open', () => {
  it('does not stop the start: that line needs a new scan (said without a secret), the other connects; a new scan then links it', async () => {
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: LINE2 } });
    expect(c.status, c.text).toBe(201);
    line2 = c.body.celular_id as number;
    await linkByQr(line2, LINE2);
    const inst2 = (await celular(line2)).gateway_instancia as string;
    await s.close();

    // An altered row: the credentials' sealed value no longer opens (its tag fails).
    const db = new Database(join(dataDir, 'pasarela.db'));
    const row = db.prepare("SELECT valor FROM motor_auth WHERE instancia = ? AND kind = 'creds'").get(inst2) as { valor: Buffer };
    const bad = Buffer.from(row.valor);
    bad[bad.length - 1] = bad.at(-1)! ^ 0xff;
    db.prepare("UPDATE motor_auth SET valor = ? WHERE instancia = ? AND kind = 'creds'").run(bad, inst2);
    db.close();

    await start();
    await until(async () => (await status(A.celularId)) === 'connected', { what: 'the readable line connected', timeoutMs: 60_000 });
    expect(await status(line2)).toBe('need_scan');
    await until(async () => (await celular(line2)).estado === 'desconectado', { what: 'the unreadable line desconectado' });
    const said = s.logs.filter((l) => l.includes(inst2) && l.includes('cannot be read'));
    expect(said.length, s.logs.slice(-20).join('\n')).toBeGreaterThan(0);
    expect(said.join('\n')).not.toContain(bad.toString('base64'));
    warnings.push(...said);

    // Linking it again replaces the state that did not open.
    await linkByQr(line2, LINE2);
    expect(fake.maxConcurrent(LINE2)).toBe(1);
  });
});

describe('replaced by another connection (440)', () => {
  it('the line says disconnected and does not take the session back', async () => {
    const before = fake.connections(LINE).length;
    const most = fake.maxConcurrent(LINE);
    fake.replaced(LINE);
    await until(async () => (await status(A.celularId)) === 'disconnected', { what: 'disconnected after 440' });
    expect(s.logs.some((l) => l.includes('replaced by another connection'))).toBe(true);
    // No reconnect loop: give a reconnect every chance to happen (the backoff starts at 1 s), then count sockets.
    const other = await api(s.url, 'GET', `/api/celular_status.php?id=${line2}`, { key: A.clientKey });
    expect(other.body.status).toBe('connected');
    // The health pass restarts a linked line it finds stopped: a replaced one is not (it would take the session back).
    await s.health.checkNow();
    expect(fake.connections(LINE).length).toBe(before);
    expect(fake.maxConcurrent(LINE)).toBe(most);
    expect(await status(A.celularId)).toBe('disconnected');
    // The operator's restart takes it back, with the stored state (no scan).
    const r = await api(s.url, 'POST', `/api/celular_reiniciar.php?id=${A.celularId}`, { key: A.clientKey, json: {} });
    expect(r.status, r.text).toBe(200);
    await until(async () => (await status(A.celularId)) === 'connected', { what: 'connected again after the restart' });
    expect(fake.connections(LINE).length).toBe(before + 1);
    expect(fake.maxConcurrent(LINE)).toBe(most);
  });
});
