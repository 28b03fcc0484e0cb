import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT } from './helpers.js';
import { runTtyAnswering } from './tty.js';

/**
 * Operator-token provenance (a refusal says where the token came from; the
 * default data directory's token goes only to a server on this machine),
 * confirmation before key rotation and deletion, and the new line's key of
 * `celular link` on stdout.
 */
let s: TestServer;
let cli: Cli;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
  const dir = join(cli.home, '.local', 'share', 'pasarela');
  mkdirSync(dir, { recursive: true });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
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

  it.skipIf(!HAS_SCRIPT)('on a TTY the question names the client; no changes nothing; a wrong id is exit 4 before any question', async () => {
    const no = await runTtyAnswering(cli, cliCommandLine(['admin', 'client', 'rotate-key', String(a.clienteId)]), [[/Rotate the key of client/, 'n']], op.env);
    expect(no.exitCode, JSON.stringify(no.output)).toBe(0);
    expect(no.output).toMatch(new RegExp(`Rotate the key of client ${a.clienteId} “Cliente \\d+” \\(c\\d+@example\\.com\\)\\?`));
    expect(no.output).toContain('nothing changed');
    expect((await api(s.url, 'GET', '/api/info.php', { key: a.clientKey })).status).toBe(200);
    const missing = await runTtyAnswering(cli, cliCommandLine(['admin', 'client', 'rotate-key', '99999']), [], op.env);
    expect(missing.exitCode).toBe(4);
    expect(missing.output).not.toContain('Rotate the key');
    const yes = await runTtyAnswering(
      cli,
      cliCommandLine(['admin', 'celular', 'rotate-key', String(a.celularId)]),
      [[/Rotate the key of celular \d+\?/, 'y']],
      op.env,
    );
    expect(yes.exitCode).toBe(0);
    expect(yes.output).toMatch(/WA_\d+_/);
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.celularKey })).status).toBe(401);
  });
});

describe.skipIf(!HAS_SCRIPT)('admin celular move on a TTY', () => {
  it('asks first, naming the line and the server: no sends nothing; yes makes the request', async () => {
    const a = await seedClient(s);
    const env = { PASARELA_ADMIN_TOKEN: s.adminToken };
    const line = () => cliCommandLine(['admin', 'celular', 'move', String(a.celularId), 'evo-nueva']);
    const question = new RegExp(`Move celular ${a.celularId} to gateway server "evo-nueva"\\?`);
    const no = await runTtyAnswering(cli, line(), [[question, 'n']], env);
    expect(no.exitCode, JSON.stringify(no.output)).toBe(0);
    expect(no.output).toContain('nothing changed');
    // Yes: the request is made (and this sim server says why it cannot move lines).
    const yes = await runTtyAnswering(cli, line(), [[question, 'y']], env);
    expect(yes.exitCode, JSON.stringify(yes.output)).toBe(1);
    expect(yes.output).toMatch(/gateway servers are for evolution or waha/);
  });
});

describe.skipIf(!HAS_SCRIPT)('celular delete on a TTY', () => {
  it('a wrong id is exit 4 before any question; the question names the line; no keeps it, yes deletes it', async () => {
    const a = await seedClient(s);
    const env = { PASARELA_KEY: a.clientKey };
    expect((await api(s.url, 'POST', `/api/celular_editar.php?id=${a.celularId}`, { key: a.clientKey, json: { nombre_interno: 'Ventas' } })).status).toBe(200);
    const missing = await runTtyAnswering(cli, cliCommandLine(['celular', 'delete', '99999']), [], env);
    expect(missing.exitCode).toBe(4);
    expect(missing.output).not.toContain('Delete celular');
    const question = new RegExp(`Delete celular ${a.celularId} “Ventas” \\(\\+${a.numero}\\)\\? This cannot be undone`);
    const no = await runTtyAnswering(cli, cliCommandLine(['celular', 'delete', String(a.celularId)]), [[question, 'n']], env);
    expect(no.exitCode, no.output).toBe(0);
    expect(no.output).toContain('nothing deleted');
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(200);
    const yes = await runTtyAnswering(cli, cliCommandLine(['celular', 'delete', String(a.celularId)]), [[question, 'y']], env);
    expect(yes.exitCode, yes.output).toBe(0);
    expect(yes.output).toContain(`Deleted celular ${a.celularId}`);
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(404);
  });
});
