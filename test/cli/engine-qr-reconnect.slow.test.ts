import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli } from './helpers.js';

/**
 * `celular qr` on a linked line whose session is coming back (the network
 * went away and the engine reconnects with its backoff). The server used to
 * hold each QR answer for the whole gateway timeout (15 s) waiting for a QR a
 * linked line never shows, past the CLI's 10 s per request: every poll ended
 * in "server unreachable, retrying… (timed out)". Now it answers `connecting`
 * at once and the CLI says the line is linked and reconnecting (D-133).
 */

let fake: FakeNetwork;
let s: TestServer;
let A: Seeded;
const dir = tempDir('pasarela-qr-reconnect-');
const stateFile = join(dir, 'fake-state.json');
const LINE = numeroNuevo();

const status = async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey })).body.status;

beforeAll(async () => {
  fake = await startFakeNetwork({ stateFile });
  await fake.trustInProcess();
  // The default deadline of a call to the engine (15 s): longer than the CLI's wait for one answer.
  s = await startTestServer({ dataDir: join(dir, 'data'), gateway: 'baileys', baileysWsUrl: fake.wsUrl, engine: { ca: fake.ca }, gatewayTimeoutMs: 15_000 });
  A = await seedClient(s, { numero: LINE, saldo: 10 });
  const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.clientKey, json: {} });
  expectOk(qr);
  await fake.scanQr(qr.body.qr as string, LINE);
  await until(async () => (await status()) === 'connected', { what: 'linked', timeoutMs: 30_000 });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await fake?.close();
});

it('a linked line coming back: each poll answers at once (connecting), the CLI says so and sees connected', async () => {
  const port = Number(new URL(fake.wsUrl).port);
  await fake.close();
  await until(async () => (await status()) !== 'connected', { what: 'the line lost its network', timeoutMs: 30_000 });

  const cli = new Cli(s.url);
  const one = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.clientKey, json: {} });
  expectOk(one);
  expect(one.body).toMatchObject({ status: 'connecting', qr: '' });

  // Off a terminal, without --wait: no QR to print; it says why on stderr and exits 0.
  const once = await cli.run(['celular', 'qr', String(A.celularId)], { env: { PASARELA_KEY: A.clientKey } });
  expect(once.exitCode, once.stderr).toBe(0);
  expect(once.stdout).toBe('');
  expect(once.stderr).toMatch(/celular \d+ has no QR to show \(connecting\): linked, it is reconnecting and needs no scan/);

  const follow = cli.run(['celular', 'qr', String(A.celularId), '--wait', '--interval', '500', '--timeout', '120'], {
    env: { PASARELA_KEY: A.clientKey },
  });
  // The CLI waits 10 s at most for each answer: the old one, held for the gateway's 15 s, made every poll
  // "server unreachable, retrying… (timed out)". Several polls while the network is away, then it comes back with what it knew.
  await new Promise((r) => setTimeout(r, 3000));
  fake = await startFakeNetwork({ stateFile, port });
  const r = await follow;
  expect(r.exitCode, r.stderr).toBe(0);
  expect(r.stderr).not.toMatch(/unreachable|timed out|retrying/i);
  expect(r.stderr).toMatch(/linked, it is reconnecting and needs no scan; not linked yet, its QR comes shortly; waiting\n/);
  expect(r.stderr).toMatch(/celular \d+ is connected/);
  expect(await status()).toBe('connected');
}, 180_000);

it('a line not linked yet whose network went away: the QR answer says so at once; once the network is back its QR links it', async () => {
  const LINE2 = numeroNuevo();
  const B = await seedClient(s, { numero: LINE2, saldo: 10 });
  const qrOf = async () => (await api(s.url, 'POST', `/api/celular_qr.php?id=${B.celularId}`, { key: B.clientKey, json: {} })).body;
  expect(await qrOf()).toMatchObject({ status: 'need_scan', qr: expect.stringMatching(/\S/) as unknown });
  const statusB = async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${B.celularId}`, { key: B.clientKey })).body.status;
  const port = Number(new URL(fake.wsUrl).port);
  await fake.close();
  // Not linked, it is not retried: the next link attempt opens a socket, which the absent network refuses.
  await until(async () => (await statusB()) === 'disconnected', { what: 'the unlinked line lost its network', timeoutMs: 30_000 });

  // Before, the server held this answer the whole 15 s for a QR: past the CLI's 10 s, "server unreachable, retrying…".
  const cli = new Cli(s.url);
  const r = await cli.run(['celular', 'qr', String(B.celularId), '--wait', '--interval', '500', '--timeout', '120'], { env: { PASARELA_KEY: B.clientKey } });
  expect(r.exitCode, r.stderr).toBe(7);
  expect(r.stderr).not.toMatch(/unreachable|timed out|retrying/i);
  expect(r.stderr).toMatch(/the network closed the connection before it showed a QR/);

  fake = await startFakeNetwork({ stateFile, port });
  const again = await qrOf();
  expect(again).toMatchObject({ status: 'need_scan', qr: expect.stringMatching(/\S/) as unknown });
  await fake.scanQr((again as { qr: string }).qr, LINE2);
  const linked = await cli.run(['celular', 'qr', String(B.celularId), '--wait', '--interval', '500', '--timeout', '60'], {
    env: { PASARELA_KEY: B.clientKey },
  });
  expect(linked.exitCode, linked.stderr).toBe(0);
  expect(linked.stderr).toMatch(/celular \d+ is connected/);
}, 180_000);
