import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEngineCipher } from '../../src/core/engine/engine-key.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * Operating the engine (issue 37): its metrics as a line links, reconnects
 * after the network's 515 and is logged out from the phone; and its server
 * log, captured at trace level over a whole session (link, a text out, a text
 * in, logout), holding no message text and no key: neither the engine key
 * file's nor any private key of the line's opened credentials.
 */

let fake: FakeNetwork;
let s: TestServer;
let A: Seeded;
const dataDir = tempDir('pasarela-engine-ops-');
const LINE = numeroNuevo();
const CONTACT = numeroNuevo();
// Words no log line has any other reason to hold.
const OUT_TEXT = 'zanahoria-saliente-7Qx';
const IN_TEXT = 'berenjena-entrante-9Kw';
/** Values that must never reach the log, gathered while the line's state exists. */
const secrets = new Map<string, string>();

const metrics = async (): Promise<string> => {
  const r = await api(s.url, 'GET', '/metrics', { key: s.adminToken });
  expect(r.status, r.text).toBe(200);
  return r.text;
};
/** One sample's value, or undefined when the series is absent. */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const sessions = async (status: string) => sample(await metrics(), `pasarela_engine_sessions{status="${status}"}`);
const reconnects = async () => sample(await metrics(), 'pasarela_engine_reconnects_total');
const line = async () => (await api(s.url, 'GET', `/api/celular.php?id=${A.celularId}`, { key: A.clientKey })).body.celular;
const status = async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey })).body.status;

/** Every form a key's bytes could be written in: base64 (with and without padding), base64url, hex. */
function addSecret(name: string, value: unknown): void {
  if (value === undefined || value === null) return;
  const bytes = typeof value === 'string' ? Buffer.from(value, 'base64') : Buffer.from(value as Uint8Array);
  if (bytes.length < 16) return;
  const b64 = bytes.toString('base64');
  secrets.set(`${name} (base64)`, b64);
  secrets.set(`${name} (base64, unpadded)`, b64.replace(/=+$/, ''));
  secrets.set(`${name} (base64url)`, bytes.toString('base64url'));
  secrets.set(`${name} (hex)`, bytes.toString('hex'));
}

beforeAll(async () => {
  fake = await startFakeNetwork();
  await fake.trustInProcess();
  fake.contact(CONTACT);
  s = await startTestServer({
    dataDir,
    gateway: 'baileys',
    baileysWsUrl: fake.wsUrl,
    engine: { ca: fake.ca },
    allowPrivateUrls: true,
    logLevel: 'trace',
  });
  A = await seedClient(s, { numero: LINE, saldo: 1000 });
});
afterAll(async () => {
  await s?.stop();
  await fake?.close();
});

describe("the engine's metrics and log against the fake network", () => {
  it('before linking, no engine line is connected and no reconnect counted', async () => {
    expect(await sessions('connected')).toBe(0);
    expect(await reconnects()).toBe(0);
  });

  it('a line linked by QR counts as connected', async () => {
    const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.clientKey, json: {} });
    expectOk(qr);
    await until(async () => (await sessions('need_scan')) === 1, { what: 'need_scan 1 while the QR shows' });
    await fake.scanQr(qr.body.qr as string, LINE);
    await until(async () => (await status()) === 'connected', { what: 'connected', timeoutMs: 30_000 });
    await until(async () => (await sessions('connected')) === 1, { what: 'sessions{connected} 1' });
    expect(await sessions('need_scan')).toBe(0);
    expect(await sessions('logged_out')).toBe(0);
  });

  it("the line's keys are gathered from its opened credentials and the engine key file", async () => {
    const keyText = readFileSync(join(dataDir, 'engine.key'), 'utf8').trim();
    const keyB64 = keyText.split(' ')[1]!;
    secrets.set('engine.key (line)', keyText);
    addSecret('engine.key', keyB64);
    const cipher = await loadEngineCipher({ dataDir });
    const inst = (await line()).gateway_instancia as string;
    const { state } = await storedAuthState(await import('baileys'), s.core.store, cipher, inst);
    const c = state.creds;
    addSecret('noiseKey.private', c.noiseKey.private);
    addSecret('pairingEphemeralKeyPair.private', c.pairingEphemeralKeyPair.private);
    addSecret('signedIdentityKey.private', c.signedIdentityKey.private);
    addSecret('signedPreKey.private', c.signedPreKey.keyPair.private);
    addSecret('advSecretKey', c.advSecretKey);
    // A linked line's credentials: the ADV secret of the link is there, and with it the keys above.
    expect(c.me?.id).toBeTruthy();
    expect(secrets.size).toBeGreaterThanOrEqual(20);
  });

  it('a text out and a text in go through (their words are what the log must not hold)', async () => {
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', {
      key: A.celularKey,
      json: { destinatario: CONTACT, mensaje: `hola ${OUT_TEXT}`, directo: 1 },
    });
    expectOk(r);
    const got = await fake.contact(CONTACT).waitFor((m) => m.id === r.body.gateway_msg_id, 30_000);
    expect(got.message.extendedTextMessage?.text ?? got.message.conversation).toBe(`hola ${OUT_TEXT}`);
    const id = await fake.sendText(CONTACT, LINE, `respuesta ${IN_TEXT}`);
    await until(
      async () =>
        ((await api(s.url, 'GET', `/api/recibidos_listar.php?celular_id=${A.celularId}`, { key: A.clientKey })).body.recibidos ?? []).some(
          (m: { gateway_msg_id: string }) => m.gateway_msg_id === id,
        ),
      { what: 'the incoming text in the inbox', timeoutMs: 30_000 },
    );
  });

  it('a restart the network asks for (515) counts one reconnect, and the line is connected again', async () => {
    const before = (await reconnects()) ?? 0;
    fake.restartRequired(LINE);
    await until(async () => ((await reconnects()) ?? 0) >= before + 1, { what: 'pasarela_engine_reconnects_total up by one', timeoutMs: 30_000 });
    await until(async () => (await status()) === 'connected' && (await sessions('connected')) === 1, {
      what: 'connected again in the gauge',
      timeoutMs: 30_000,
    });
    expect(await sessions('connecting')).toBe(0);
  });

  it('logged out from the phone: logged_out 1, connected 0, and no reconnect for it', async () => {
    const before = (await reconnects()) ?? 0;
    fake.logoutFromPhone(LINE);
    await until(async () => (await sessions('logged_out')) === 1, { what: 'sessions{logged_out} 1', timeoutMs: 30_000 });
    expect(await sessions('connected')).toBe(0);
    await until(async () => (await line()).estado === 'desconectado', { what: 'desconectado' });
    expect(await reconnects()).toBe(before);
  });

  it('the log, at trace level, holds neither text nor any key', async () => {
    const all = s.logs.join('\n');
    // The capture worked: the session is there with its debug lines (nothing of the server logs at trace itself).
    expect(s.logs.length).toBeGreaterThan(20);
    expect(all).toMatch(/"level":20/);
    expect(all).toContain('line status changed');
    expect(all).not.toContain(OUT_TEXT);
    expect(all).not.toContain(IN_TEXT);
    for (const [name, value] of secrets) expect(all.includes(value), `${name} in the log`).toBe(false);
  });
});
