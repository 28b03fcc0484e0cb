import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, waitForText } from '../cli/helpers.js';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { numeroNuevo } from '../helpers/expect.js';
import { until } from '../helpers/poll.js';
import { killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { api, tempDir } from '../helpers/server.js';

/**
 * The engine as a user runs it: `pasarela serve --gateway baileys` as a real
 * child process against the fake network (test/fakewa), trusting the fake's
 * certificate root through its preload (`NODE_OPTIONS=--import`) and its media
 * CA through NODE_EXTRA_CA_CERTS. The real CLI links the line (`celular qr
 * --wait` follows it to connected by itself), sends a direct text the contact
 * decrypts, and a graceful restart of `serve` on the same data dir brings the
 * line back with no new scan and never two sockets at once.
 */
let fake: FakeNetwork;
let s: ServeChild;
let cli: Cli;
const root = tempDir('pasarela-engine-serve-');
const dataDir = join(root, 'data');
const LINE = numeroNuevo();
const CONTACT = numeroNuevo();
let clientKey = '';
let celularId = 0;

const serve = async () => {
  s = await startServeChild(dataDir, ['--gateway', 'baileys', '--baileys-ws-url', fake.wsUrl, '--drain-delay', '0'], 120_000, {
    NODE_OPTIONS: `--import=${fake.preloadFile}`,
    NODE_EXTRA_CA_CERTS: fake.caFile,
  });
  cli = new Cli(s.url);
};
const status = async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${celularId}`, { key: clientKey })).body.status as string;

beforeAll(async () => {
  fake = await startFakeNetwork();
  fake.contact(CONTACT);
  await serve();
});
afterAll(async () => {
  killAllServeChildren();
  cli?.cleanup();
  await fake?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('serve --gateway baileys against the fake network, driven by the CLI', () => {
  it('celular qr --wait prints the QR, the phone scans it, the CLI sees connected by itself and exits 0', async () => {
    const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const c = await api(s.url, 'POST', '/admin/clientes', { key: admin, json: { nombre: 'Motor', email: 'motor@example.com', saldo: 100 } });
    expect(c.status, c.text).toBe(201);
    clientKey = c.body.api_key as string;
    const created = await cli.run(['celular', 'create', LINE, '--json'], { env: { PASARELA_KEY: clientKey } });
    expect(created.exitCode, created.stderr).toBe(0);
    celularId = JSON.parse(created.stdout).celular_id as number;

    const proc = cli.spawn(['celular', 'qr', String(celularId), '--wait', '--interval', '200', '--timeout', '100'], {
      env: { PASARELA_KEY: clientKey },
      timeoutMs: 110_000,
    });
    // Off a terminal the CLI prints the QR's content, one line per QR: what the phone's camera would read.
    const out = await waitForText(proc.stdout, /\n/, 60_000);
    const qr = out.split('\n')[0]!;
    expect(qr.split(',').length).toBeGreaterThanOrEqual(4);
    await fake.scanQr(qr, LINE);
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stderr)).toContain(`celular ${celularId} is connected`);
    expect(await status()).toBe('connected');
    expect(fake.maxConcurrent(LINE)).toBe(1);
  });

  it('send text --directo: the contact decrypts it', async () => {
    const r = await cli.run(['send', 'text', CONTACT, 'hola desde el motor', '--directo', '--json'], { env: { PASARELA_KEY: clientKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    const sent = JSON.parse(r.stdout) as { gateway_msg_id: string };
    const got = await fake.contact(CONTACT).waitFor((m) => m.id === sent.gateway_msg_id, 30_000);
    expect(got.message.extendedTextMessage?.text ?? got.message.conversation).toBe('hola desde el motor');
  });

  it('SIGTERM and start again on the same data dir: the line reconnects from its stored state, no new scan, one socket at a time', async () => {
    const before = fake.connections(LINE).length;
    await stop(s);
    await serve();
    await until(async () => (await status()) === 'connected', { what: 'connected after the restart', timeoutMs: 60_000 });
    expect(fake.connections(LINE).length).toBeGreaterThan(before);
    const r = await cli.run(['send', 'text', CONTACT, 'tras reiniciar', '--directo', '--json'], { env: { PASARELA_KEY: clientKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    await fake.contact(CONTACT).waitFor((m) => m.id === (JSON.parse(r.stdout) as { gateway_msg_id: string }).gateway_msg_id, 30_000);
    expect(fake.maxConcurrent(LINE)).toBe(1);
    await stop(s);
  });
});
