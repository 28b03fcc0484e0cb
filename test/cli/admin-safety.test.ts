import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly } from './helpers.js';

/**
 * Operator-token provenance (a refusal says where the token came from; the
 * default data directory's token goes only to a server on this machine),
 * confirmation before key rotation and deletion, and the new line's key of
 * `celular link` on stdout.
 */
let s: TestServer;
let cli: Cli;
/** The default data directory of the CLI user (HOME is the Cli's temp dir). */
let defaultTokenFile: string;
const WRONG = 'not-the-token-of-this-server-xxxxxxxxxxxxxxxx';

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
  const dir = join(cli.home, '.local', 'share', 'pasarela');
  mkdirSync(dir, { recursive: true });
  defaultTokenFile = join(dir, 'admin-token');
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('where the operator token came from', () => {
  it('a refused token from the default admin-token file names the file and what to do', async () => {
    writeFileSync(defaultTokenFile, `${WRONG}\n`);
    const r = await cli.run(['admin', 'client', 'list']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain(
      `invalid operator token (read from ${defaultTokenFile}; is that file from this server? pass --admin-token or PASARELA_ADMIN_TOKEN)`,
    );
    // sim commands use the same credential.
    const sim = await cli.run(['sim', 'fail']);
    expect(sim.exitCode).toBe(3);
    expect(sim.stderr).toContain(`read from ${defaultTokenFile}`);
  });

  it('the right token in that file works for a server on this machine (127.0.0.1 or localhost)', async () => {
    writeFileSync(defaultTokenFile, `${s.adminToken}\n`);
    const [ip, name] = await Promise.all([
      cli.run(['admin', 'client', 'list', '--json']),
      cli.run(['admin', 'client', 'list', '--json', '--url', s.url.replace('127.0.0.1', 'localhost')]),
    ]);
    expect(expectJsonOnly(ip)).toHaveProperty('clientes');
    expect(expectJsonOnly(name)).toHaveProperty('clientes');
  });

  it('is not read, nor sent, for a server elsewhere; --data-dir names a file for any server', async () => {
    writeFileSync(defaultTokenFile, `${s.adminToken}\n`);
    const remote = 'http://192.0.2.10:8080';
    const r = await cli.run(['admin', 'client', 'list', '--url', remote]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('no operator token');
    expect(r.stderr).toContain(`${defaultTokenFile} belongs to a server on this machine, and ${remote} is not one`);
    expect(r.stderr).toContain('--data-dir');
  });

  it('a refused token from --admin-token, PASARELA_ADMIN_TOKEN or a profile says so', async () => {
    const [flag, env] = await Promise.all([
      cli.run(['admin', 'client', 'list', '--admin-token', WRONG]),
      cli.run(['admin', 'client', 'list'], { env: { PASARELA_ADMIN_TOKEN: WRONG } }),
    ]);
    expect(flag.exitCode).toBe(3);
    expect(flag.stderr).toContain('invalid operator token (from --admin-token)');
    expect(env.exitCode).toBe(3);
    expect(env.stderr).toContain('(from PASARELA_ADMIN_TOKEN');
    expect((await cli.run(['config', 'set', 'admin_token', WRONG, '--profile', 'ops'])).exitCode).toBe(0);
    const profile = await cli.run(['admin', 'client', 'list', '--profile', 'ops']);
    expect(profile.exitCode).toBe(3);
    expect(profile.stderr).toContain('the admin_token saved in profile "ops"');
    // --json: the server's body on stdout, the explanation on stderr.
    const j = await cli.run(['admin', 'client', 'list', '--admin-token', WRONG, '--json']);
    expect(j.exitCode).toBe(3);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: false });
  });
});

describe('key rotation asks first', () => {
  let a: Seeded;
  beforeAll(async () => {
    a = await seedClient(s);
  });
  const op = { env: { PASARELA_ADMIN_TOKEN: undefined as string | undefined } };
  beforeAll(() => {
    op.env.PASARELA_ADMIN_TOKEN = s.adminToken;
  });

  it('off a TTY, without --yes: exit 2 and the keys still work', async () => {
    const [client, celular] = await Promise.all([
      cli.run(['admin', 'client', 'rotate-key', String(a.clienteId)], op),
      cli.run(['admin', 'celular', 'rotate-key', String(a.celularId)], op),
    ]);
    for (const r of [client, celular]) {
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain('--yes');
      expect(r.stdout).toBe('');
    }
    expect((await api(s.url, 'GET', '/api/info.php', { key: a.clientKey })).status).toBe(200);
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.celularKey })).status).toBe(200);
  });

  it('with --yes: the new key is printed and the old one stops working', async () => {
    const b = await seedClient(s);
    const r = expectJsonOnly(await cli.run(['admin', 'celular', 'rotate-key', String(b.celularId), '--yes', '--json'], op));
    expect(r.api_key).toMatch(/^WA_/);
    expect((await api(s.url, 'GET', `/api/celular.php?id=${b.celularId}`, { key: b.celularKey })).status).toBe(401);
    const c = await cli.run(['admin', 'client', 'rotate-key', String(b.clienteId), '-y'], op);
    expect(c.exitCode, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/^Client key\tWAC_/);
    expect((await api(s.url, 'GET', '/api/info.php', { key: b.clientKey })).status).toBe(401);
  });
});

describe('celular link', () => {
  it("prints the new line's key on stdout, like celular create, before the QR content", async () => {
    const a = await seedClient(s);
    const numero = `5215577${String(Date.now()).slice(-6)}`;
    const r = await cli.run(['celular', 'link', numero], { env: { PASARELA_KEY: a.clientKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Celular key\tWA_\d+_/);
    expect(lines[1]).toMatch(/^2@/);
    expect(r.stderr).toMatch(/Registered celular \d+/);
    expect(r.stderr).not.toMatch(/WA_\d+_/);
  });
});
