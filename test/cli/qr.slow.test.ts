import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, ESC, HAS_SCRIPT, SGR, tempDir, until, waitForText } from './helpers.js';

/**
 * Linking by QR: `celular qr --wait --json` off a TTY (NDJSON until
 * connected), and on a pseudo-terminal (util-linux `script`) the drawn QR
 * that follows the session, plus the TTY table layout and NO_COLOR.
 */
let s: TestServer;
let cli: Cli;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

/** Resolves once the server has logged two more QR requests of the line (the CLI polls every 200 ms). */
async function askedAgain(celularId: number): Promise<void> {
  const asks = () => s.logs.filter((l) => l.includes('/api/celular_qr.php') && l.includes(`id=${celularId}`)).length;
  const before = asks();
  await until(async () => asks() >= before + 2);
}

/** The phone scans (the operator API, not the CLI), once the CLI has asked for a QR. */
async function scanWhenShowing(celularId: number): Promise<void> {
  await until(async () => {
    const r = await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: celularId } });
    if (r.status !== 200 && r.status !== 409) throw new Error(`scan: ${r.status} ${r.text}`);
    return r.status === 200;
  }, 15_000);
}

describe('celular qr --wait --json without a TTY', () => {
  let a: Seeded;
  beforeAll(async () => {
    a = await seedClient(s);
  });

  it('prints one JSON line per QR until the line is connected, then exits 0', async () => {
    const proc = cli.spawn(['celular', 'qr', String(a.celularId), '--wait', '--json', '--interval', '200', '--timeout', '20'], {
      env: { PASARELA_KEY: a.clientKey },
    });
    const firstLines = await waitForText(proc.stdout, /\n/);
    const first = JSON.parse(firstLines.split('\n')[0]!);
    expect(first).toMatchObject({ celular_id: a.celularId, status: 'need_scan' });
    expect(first.qr).toMatch(/^2@/);
    // Still waiting: nothing has scanned yet, and it has asked the server again since.
    await askedAgain(a.celularId);
    expect(proc.exitCode).toBeNull();

    await scanWhenShowing(a.celularId);
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stderr)).toBe('');
    const lines = String(r.stdout).trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const docs = lines.map((l) => JSON.parse(l) as { status: string; celular_id: number });
    expect(docs.slice(0, -1).every((d) => d.status === 'need_scan')).toBe(true);
    expect(docs.at(-1)).toMatchObject({ celular_id: a.celularId, status: 'connected', estado: 'activo' });
  });

  it('gives up after --timeout with exit 11 and a hint', async () => {
    const b = await seedClient(s);
    const r = await cli.run(['celular', 'qr', String(b.celularId), '--wait', '--interval', '200', '--timeout', '1'], { env: { PASARELA_KEY: b.clientKey } });
    expect(r.exitCode).toBe(11);
    expect(r.stdout.trim()).toMatch(/^2@/);
    expect(r.stderr).toContain('not linked within 1 s');
  });
});

describe('celular qr --png FILE', () => {
  it('writes the QR showing now as a PNG that decodes to the QR content, and exits 0', async () => {
    const a = await seedClient(s);
    const file = join(tempDir(), 'qr.png');
    const r = await cli.run(['celular', 'qr', String(a.celularId), '--png', file, '--json'], { env: { PASARELA_KEY: a.clientKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body).toMatchObject({ celular_id: a.celularId, status: 'need_scan', png: file });
    expect(body).not.toHaveProperty('qr_imagen');
    const png = PNG.sync.read(readFileSync(file));
    const found = jsqr.default(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
    expect(found?.data).toBe(body.qr);

    // Text mode says where it went, on stderr; once linked there is nothing to write.
    const again = await cli.run(['celular', 'qr', String(a.celularId), '--png', file], { env: { PASARELA_KEY: a.clientKey } });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stderr).toContain(`written to ${file}`);
    await scanWhenShowing(a.celularId);
    const other = join(tempDir(), 'none.png');
    const linked = await cli.run(['celular', 'qr', String(a.celularId), '--png', other], { env: { PASARELA_KEY: a.clientKey } });
    expect(linked.exitCode, linked.stderr).toBe(0);
    expect(linked.stderr).toContain('is connected: nothing to scan');
    expect(existsSync(other)).toBe(false);
  });

  it('does not go with --wait (a usage error before any request)', async () => {
    const r = await cli.run(['celular', 'qr', '1', '--png', 'x.png', '--wait'], { env: { PASARELA_KEY: 'WA_x' } });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('does not go with --wait');
  });
});

describe.skipIf(!HAS_SCRIPT)('on a terminal (script)', () => {
  it('celular qr draws the QR with half blocks, keeps running, and ends when scanned', async () => {
    const a = await seedClient(s);
    const proc = cli.spawnTty(cliCommandLine(['celular', 'qr', String(a.celularId), '--interval', '200', '--timeout', '20']), {
      env: { PASARELA_KEY: a.clientKey },
    });
    const drawn = await waitForText(proc.stdout, /Scan with the phone/);
    expect(drawn).toMatch(/[▀▄█]/);
    expect(drawn).not.toContain('2@'); // the picture, not the content
    await askedAgain(a.celularId);
    expect(proc.exitCode).toBeNull();

    await scanWhenShowing(a.celularId);
    const r = await proc;
    expect(r.exitCode, String(r.stdout)).toBe(0);
    expect(String(r.stdout)).toMatch(new RegExp(`celular ${a.celularId} is connected`));
  });

  it('celular list is a table with upper-case headers; coloured unless NO_COLOR', async () => {
    const a = await seedClient(s);
    const env = { PASARELA_KEY: a.clientKey };
    const line = cliCommandLine(['celular', 'list']);
    const [coloured, noColor] = await Promise.all([cli.spawnTty(line, { env }), cli.spawnTty(line, { env: { ...env, NO_COLOR: '1' } })]);
    for (const r of [coloured, noColor]) {
      expect(r.exitCode).toBe(0);
      const out = String(r.stdout);
      expect(out).toMatch(/ID.*NUMERO.*NOMBRE.*ESTADO.*SALDO.*SESION.*POR MIN.*POR HORA.*HORARIO/);
      expect(out).toContain(a.numero);
      expect(out).toMatch(/[┌│└]/);
      expect(out).not.toContain('\t');
    }
    expect(String(coloured.stdout)).toMatch(SGR);
    expect(String(noColor.stdout)).not.toMatch(SGR);
    expect(String(noColor.stdout)).not.toContain(`${ESC}[3`);
  });
});
