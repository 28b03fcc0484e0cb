import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEvolutionFake, type EvolutionFake } from '../fakes/evolution.js';
import { numeroNuevo } from '../helpers/expect.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly, expectPlain } from './helpers.js';

/**
 * `pasarela admin gateway list|add|drain|undrain` and `admin celular move`,
 * run as the real binary against a server on `--gateway evolution` whose
 * `--gateway-url` is one fake Evolution server; a second fake is added.
 */
let a: EvolutionFake;
let b: EvolutionFake;
let s: TestServer;
let cli: Cli;

beforeAll(async () => {
  a = await startEvolutionFake({ apiKey: 'cli-key-of-server-a-0123' });
  b = await startEvolutionFake({ apiKey: 'cli-key-of-server-b-4567' });
  s = await startTestServer({ gateway: 'evolution', gatewayUrl: a.url, gatewayKey: a.apiKey, allowPrivateUrls: true, healthIntervalMs: 0 });
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
  await a?.close();
  await b?.close();
});

const asOperator = (input?: string) => ({ env: { PASARELA_ADMIN_TOKEN: s.adminToken }, ...(input !== undefined ? { input } : {}) });
const noKeys = (text: string) => {
  expect(text).not.toContain(a.apiKey);
  expect(text).not.toContain(b.apiKey);
};

describe('admin gateway', () => {
  it('list --json: the default server (the --gateway-url one), with tiene_key and no key', async () => {
    const r = await cli.run(['admin', 'gateway', 'list', '--json'], asOperator());
    const body = expectJsonOnly(r);
    expect(body).toMatchObject({ ok: true, tipo: 'evolution', servidores: [{ nombre: 'default', url: a.url, estado: 'activo', lineas: 0, tiene_key: true }] });
    noKeys(r.stdout);
  });

  it('add with the key on stdin; list without a TTY prints one tab-separated line per server', async () => {
    const r = await cli.run(['admin', 'gateway', 'add', 'b', '--gateway-url', b.url, '--gateway-key', '-', '--max-lineas', '50'], asOperator(`${b.apiKey}\n`));
    expect(r.exitCode, r.stderr).toBe(0);
    expectPlain(r);
    expect(r.stdout).toContain('nombre\tb');
    expect(r.stdout).toContain('max_lineas\t50');
    expect(r.stdout).toContain('key\tset (never shown)');
    noKeys(r.stdout + r.stderr);
    const l = await cli.run(['admin', 'gateway', 'list'], asOperator());
    expect(l.exitCode, l.stderr).toBe(0);
    expect(l.stdout.trim().split('\n')).toEqual([`default\tevolution\t${a.url}\tactivo\t0\tunlimited`, `b\tevolution\t${b.url}\tactivo\t0\t50`]);
    // The key reached the server: a line put on b is made there with it.
    expect((await s.core.store.getGatewayServerByNombre('b'))?.key).toBe(b.apiKey);
  });

  it('drain and undrain: --json answers the server in its new state', async () => {
    const d = expectJsonOnly(await cli.run(['admin', 'gateway', 'drain', 'b', '--json'], asOperator()));
    expect(d).toMatchObject({ ok: true, nombre: 'b', estado: 'drenando' });
    const u = expectJsonOnly(await cli.run(['admin', 'gateway', 'undrain', 'b', '--json'], asOperator()));
    expect(u).toMatchObject({ ok: true, nombre: 'b', estado: 'activo' });
  });

  it('celular move: the line goes to the named server and is told to link again', async () => {
    const c = await api(s.url, 'POST', '/admin/clientes', { key: s.adminToken, json: { nombre: 'CLI', email: 'cli-gw@example.com' } });
    const cel = await api(s.url, 'POST', '/api/celular_crear.php', { key: c.body.api_key, json: { numero: numeroNuevo() } });
    const id = cel.body.celular_id as number;
    const where = (await s.core.store.getGatewayServer((await s.core.store.getCelular(id))!.servidor_id!))!.nombre;
    const to = where === 'default' ? 'b' : 'default';
    // The operator sees which server a line is on: `admin client show`, a column at the end, and its JSON.
    const lineOf = async () =>
      (await cli.run(['admin', 'client', 'show', String(c.body.cliente.id)], asOperator())).stdout.split('\n').find((l) => l.startsWith(`${id}\t`));
    expect((await lineOf())?.split('\t').at(-1)).toBe(where);
    const r = await cli.run(['admin', 'celular', 'move', String(id), to], asOperator());
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`servidor\t${to}`);
    expect(r.stderr).toContain(`pasarela celular qr ${id}`);
    expect((await s.core.store.getCelular(id))!.servidor_id).toBe((await s.core.store.getGatewayServerByNombre(to))!.id);
    expect((await lineOf())?.split('\t').at(-1)).toBe(to);
    const json = expectJsonOnly(await cli.run(['admin', 'client', 'show', String(c.body.cliente.id), '--json'], asOperator()));
    expect(json.celulares).toEqual([expect.objectContaining({ id, servidor: to })]);
  });

  it('errors keep the exit-code contract: unknown server 4, duplicate 1, bad URL 1, no token 3, missing option 2', async () => {
    const unknown = await cli.run(['admin', 'gateway', 'drain', 'nope'], asOperator());
    expect(unknown.exitCode).toBe(4);
    expect(unknown.stderr).toContain('nope');
    const dup = await cli.run(['admin', 'gateway', 'add', 'b', '--gateway-url', b.url, '--gateway-key', 'k'], asOperator());
    expect(dup.exitCode).toBe(1);
    expect(dup.stderr).toContain('already exists');
    // A URL the server would refuse is a usage error before any request.
    const url = await cli.run(['admin', 'gateway', 'add', 'c', '--gateway-url', 'ftp://x.example', '--gateway-key', 'k', '--json'], asOperator());
    expect(url.exitCode).toBe(2);
    expect(url.stderr).toContain('--gateway-url');
    // Under --json the usage error is JSON on stdout (D-156).
    expect(JSON.parse(url.stdout)).toEqual({ ok: false, error: expect.any(String), exit_code: 2 });
    const auth = await cli.run(['admin', 'gateway', 'list'], { env: { PASARELA_ADMIN_TOKEN: 'x'.repeat(32) } });
    expect(auth.exitCode).toBe(3);
    const missing = await cli.run(['admin', 'gateway', 'add', 'c', '--gateway-url', b.url], asOperator());
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain('--gateway-key');
  });
});
