import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, ESC, expectJsonOnly, expectCleanExit, rows, SGR } from './helpers.js';

/**
 * What the CLI prints off a TTY: --json is one JSON document and nothing
 * else; errors under --json carry the server's body on stdout and a message
 * on stderr; human output has no escape codes unless FORCE_COLOR says so.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
  a = await seedClient(s, { saldo: 25 });
  // A linked line, so that status/list have something to colour.
  await api(s.url, 'POST', `/api/celular_qr.php?id=${a.celularId}`, { key: a.clientKey });
  const scan = await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: a.celularId } });
  expect(scan.status).toBe(200);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('--json prints one JSON document and nothing else', () => {
  it('client commands: info, saldo, celular list/show/status/qr/create', async () => {
    const k = { env: { PASARELA_KEY: a.clientKey } };
    const id = String(a.celularId);
    const create = await cli.run(['celular', 'create', '5215500001111', '--nombre', 'Soporte', '--json'], k);
    const [info, saldo, list, show, status, qr] = await Promise.all([
      cli.run(['info', '--json'], k),
      cli.run(['saldo', '--json', '--celular', id], k),
      cli.run(['celular', 'list', '--json'], k),
      cli.run(['--json', 'celular', 'show', id], k),
      cli.run(['celular', 'status', id, '--json'], k),
      cli.run(['celular', 'qr', id, '--json'], k),
    ]);
    expect(expectJsonOnly(info)).toMatchObject({ ok: true, cliente: { id: a.clienteId }, saldo_global: 25 });
    expect(expectJsonOnly(saldo)).toMatchObject({ ok: true, cliente_id: a.clienteId, celular_id: a.celularId, saldo_celular: 0 });
    const l = expectJsonOnly(list);
    expect(l).toMatchObject({ ok: true, total: 2 });
    expect(l.celulares).toContainEqual(expect.objectContaining({ id: a.celularId, estado: 'activo' }));
    expect(expectJsonOnly(show).celular).toMatchObject({ id: a.celularId, numero: a.numero });
    expect(expectJsonOnly(status)).toMatchObject({ ok: true, celular_id: a.celularId, status: 'connected' });
    // Already linked: qr reports connected, still as one document.
    expect(expectJsonOnly(qr)).toMatchObject({ celular_id: a.celularId, status: 'connected' });
    const c = expectJsonOnly(create);
    expect(c).toMatchObject({ ok: true, estado: 'desconectado', celular: { numero: '525500001111', nombre_interno: 'Soporte' } });
    expect(c.api_key).toMatch(new RegExp(`^WA_${c.celular_id}_`));
  });

  it('operator commands: admin client list/show, admin celular legacy-token ID TOKEN, sim fail (list)', async () => {
    const op = { env: { PASARELA_ADMIN_TOKEN: s.adminToken } };
    const legacy = 'legacy-token-0123456789abcdef';
    const [list, show, legacySet, fails] = await Promise.all([
      cli.run(['admin', 'client', 'list', '--json'], op),
      cli.run(['admin', 'client', 'show', String(a.clienteId), '--json'], op),
      cli.run(['admin', 'celular', 'legacy-token', String(a.celularId), legacy, '--json'], op),
      cli.run(['sim', 'fail', '--json'], op),
    ]);
    expect(expectJsonOnly(list).clientes).toContainEqual(expect.objectContaining({ cliente: expect.objectContaining({ id: a.clienteId }) }));
    expect(expectJsonOnly(show)).toMatchObject({
      cliente: { id: a.clienteId },
      celulares: expect.arrayContaining([expect.objectContaining({ id: a.celularId })]),
    });
    expect(expectJsonOnly(legacySet)).toMatchObject({ ok: true, celular_id: a.celularId, generado: false });
    expect(expectJsonOnly(fails)).toMatchObject({ ok: true, reglas: [] });
    // The token set by the operator works as a key.
    expect((await api(s.url, 'GET', '/api/info.php', { key: legacy })).status).toBe(200);
  });

  it('an error under --json: the server body on stdout, a message on stderr, the exit code of the status', async () => {
    const [unauth, missing] = await Promise.all([
      cli.run(['info', '--json', '--key', 'WAC_1_not-a-real-key']),
      cli.run(['celular', 'show', '99999', '--json', '--key', a.clientKey]),
    ]);
    expect(unauth.exitCode).toBe(3);
    expect(JSON.parse(unauth.stdout)).toMatchObject({ ok: false, api_codigo: 200, api_texto: 'NO_AUTORIZADO', error: expect.any(String) });
    expect(unauth.stderr).toMatch(/^error: .+\n$/);
    expect(missing.exitCode).toBe(4);
    const body = JSON.parse(missing.stdout);
    expect(body).toMatchObject({ ok: false, api_codigo: 600, api_texto: 'CELULAR_NO_ENCONTRADO' });
    expect(missing.stderr).toBe(`error: ${body.error}\n`);
    for (const r of [unauth, missing]) expect(r.stdout + r.stderr).not.toContain(ESC);
  });
});

describe('human output off a TTY', () => {
  it('celular list has no escape codes and is tab-separated without headers; FORCE_COLOR turns colour on, NO_COLOR wins over it', async () => {
    const k = { PASARELA_KEY: a.clientKey };
    // (show, info, status and the rest are checked for escape codes in walkthrough.test.ts.)
    const [plain, forced, noColor] = await Promise.all([
      cli.run(['celular', 'list'], { env: k }),
      cli.run(['celular', 'list'], { env: { ...k, FORCE_COLOR: '1' } }),
      cli.run(['celular', 'list'], { env: { ...k, FORCE_COLOR: '1', NO_COLOR: '1' } }),
    ]);
    const table = rows(expectCleanExit(plain));
    expect(table.length).toBe(2);
    for (const r of table) {
      expect(r).toHaveLength(9);
      expect(r[0]).toMatch(/^\d+$/);
    }
    expect(plain.stdout).not.toMatch(/NUMERO|numero/);

    expect(forced.exitCode).toBe(0);
    expect(forced.stdout).toMatch(SGR);
    expect(forced.stdout).toContain(`${ESC}[32mactivo${ESC}[39m`);
    // Still the script-friendly layout: no header, tabs.
    expect(forced.stdout.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '')).toBe(plain.stdout);

    expect(noColor.exitCode).toBe(0);
    expect(noColor.stdout).toBe(plain.stdout);
  });
});
