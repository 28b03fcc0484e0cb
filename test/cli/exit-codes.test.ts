import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitForStatus } from '../../src/cli/exit-codes.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, ROOT, type RunResult } from './helpers.js';

/**
 * Exit codes of docs/design.md §9: 0 ok, 1 other, 2 usage, 3 bad credentials, 4 not found, 5 balance, 6 rate,
 * 7 server, 8 unreachable, 9 refused now by state, 10 message refused for good, 11 timed out.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC' });
  cli = new Cli(s.url);
  a = await seedClient(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const code = (r: RunResult) => ({ exitCode: r.exitCode, stderr: r.stderr });

describe('0: help and version', () => {
  it('--help and --version exit 0 and print on stdout', async () => {
    const [help, version] = await Promise.all([cli.run(['--help']), cli.run(['--version'])]);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('Usage: pasarela');
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toMatch(/^ +9 {2}refused now by state.*301, 302, 303, 603, 639/m);
    expect(help.stdout).toMatch(/^ +10 {2}message refused for good \(502 with api_codigo 704\)/m);
    expect(help.stdout).toMatch(/^ +11 {2}a watch or wait timed out/m);
    expect(version.exitCode).toBe(0);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(version.stdout.trim()).toBe(pkg.version);
  });

  // `pasarela help [command]` is help asked for: commander ends it with exit code 0, which main
  // keeps.
  it('`pasarela help celular` (help asked for) exits 0', async () => {
    const r = await cli.run(['help', 'celular']);
    expect(r.stdout).toContain('Usage: pasarela celular');
    expect(r.exitCode).toBe(0);
  });
});

describe('2: usage errors (checked before any request)', () => {
  it('unknown command, unknown option, missing required option, bad integer, missing subcommand', async () => {
    const [unknownCmd, unknownOpt, missingReq, badInt, noSub, nothingToEdit] = await Promise.all([
      cli.run(['celuar', 'list']),
      cli.run(['celular', 'list', '--bogus']),
      cli.run(['admin', 'client', 'create', '--nombre', 'X']),
      cli.run(['celular', 'edit', '1', '--por-minuto', 'abc']),
      cli.run(['celular']),
      cli.run(['celular', 'edit', String(a.celularId), '--key', a.clientKey]),
    ]);
    expect(code(unknownCmd)).toEqual({ exitCode: 2, stderr: expect.stringContaining("unknown command 'celuar'") });
    expect(unknownCmd.stderr).toContain('celular'); // the suggestion
    expect(code(unknownOpt)).toEqual({ exitCode: 2, stderr: expect.stringContaining("unknown option '--bogus'") });
    expect(code(missingReq)).toEqual({ exitCode: 2, stderr: expect.stringContaining('--email') });
    expect(code(badInt)).toEqual({ exitCode: 2, stderr: expect.stringContaining('not an integer') });
    expect(noSub.exitCode).toBe(2);
    expect(noSub.stderr).toContain('Usage: pasarela celular');
    expect(noSub.stdout).toBe('');
    expect(code(nothingToEdit)).toEqual({ exitCode: 2, stderr: expect.stringContaining('nothing to change') });
  });

  it('celular delete without --yes off a TTY refuses (exit 2) and deletes nothing', async () => {
    const r = await cli.run(['celular', 'delete', String(a.celularId), '--key', a.clientKey]);
    expect(code(r)).toEqual({ exitCode: 2, stderr: expect.stringContaining('--yes') });
    expect((await api(s.url, 'GET', `/api/celular.php?id=${a.celularId}`, { key: a.clientKey })).status).toBe(200);
  });

  // A malformed --url / PASARELA_URL is a usage error naming the URL, checked before any request.
  it('a malformed --url is a usage error (exit 2) that names the URL', async () => {
    const r = await cli.run(['info', '--url', 'not-a-url', '--key', a.clientKey]);
    expect(r.stderr).toContain('not-a-url');
    expect(r.exitCode).toBe(2);
  });
});

describe('3: authentication', () => {
  it('401 unknown key, 403 celular key on a client-key action, no key, no operator token', async () => {
    const [bad, forbidden, noKey, noOperator] = await Promise.all([
      cli.run(['info', '--key', `WAC_${a.clienteId}_wrongwrongwrongwrongwrong`]),
      cli.run(['celular', 'create', '5215577778888', '--key', a.celularKey]),
      cli.run(['celular', 'list']),
      // HOME is an empty temp dir, so the default data directory has no admin-token file.
      cli.run(['admin', 'client', 'list']),
    ]);
    expect(code(bad)).toEqual({ exitCode: 3, stderr: 'error: invalid credential (the key from --key)\n' });
    expect(code(forbidden)).toEqual({ exitCode: 3, stderr: expect.stringContaining('client key') });
    expect(code(noKey)).toEqual({ exitCode: 3, stderr: expect.stringContaining('no API key') });
    expect(code(noOperator)).toEqual({ exitCode: 3, stderr: expect.stringContaining('--admin-token') });
    expect(noOperator.stderr).toContain(join(cli.home, '.local', 'share', 'pasarela', 'admin-token'));
  });
});

describe('9: refused now by the state of the line or the account (403 with api_codigo 301, 302, 303, 603, 639)', () => {
  const linked = async (opts: Parameters<typeof seedClient>[1] = {}) => {
    const b = await seedClient(s, { saldo: 10, ...opts });
    await api(s.url, 'POST', `/api/celular_qr.php?id=${b.celularId}`, { key: b.celularKey });
    await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: b.celularId } });
    return b;
  };
  const send = (key: string, extra: string[] = [], env: Record<string, string> = {}) =>
    cli.run(['send', 'text', '5215598765432', `hola ${Math.random()}`, '--directo', ...extra], { env: { PASARELA_KEY: key, ...env } });

  it('a line that is not linked (301) exits 9; a bad key still exits 3', async () => {
    const b = await seedClient(s, { saldo: 10 });
    const r = await send(b.celularKey, ['--json']);
    expect(r.exitCode, r.stderr).toBe(9);
    expect(JSON.parse(r.stdout)).toMatchObject({ api_codigo: 301 });
    expect((await send(`WA_${b.celularId}_wrongwrongwrongwrongwrong`)).exitCode).toBe(3);
  });

  it('a client that is not active (302) exits 9, for a send and for a celular create', async () => {
    const b = await linked();
    expect((await cli.run(['admin', 'client', 'edit', String(b.clienteId), '--estado', 'suspendido', '--admin-token', s.adminToken])).exitCode).toBe(0);
    expect((await send(b.celularKey)).exitCode).toBe(9);
    expect((await cli.run(['celular', 'create', '5215577770001', '--key', b.clientKey])).exitCode).toBe(9);
  });

  it("a direct send outside the line's hours (303) exits 9, even with --retry; --wait-window waits, then gives up with 9", async () => {
    const b = await linked();
    // A half hour two hours from now (server clock, UTC): closed now, never wrapping past midnight.
    const hh = String((new Date(s.clock.now()).getUTCHours() + 2) % 24).padStart(2, '0');
    await api(s.url, 'POST', `/api/celular_editar.php?id=${b.celularId}`, {
      key: b.clientKey,
      json: { hora_inicio_permitido: `${hh}:00`, hora_fin_permitido: `${hh}:30` },
    });
    const r = await send(b.celularKey, ['--retry', '3', '--json'], { PASARELA_MAX_WAIT_MS: '0' });
    expect(r.exitCode).toBe(9);
    expect(JSON.parse(r.stdout)).toMatchObject({ api_codigo: 303, retry_after: expect.any(Number) });
    expect(r.stderr).not.toContain('retry 1/3');
    // The server's clock does not move here, so the window never opens: a few waits, then 9.
    const waited = await send(b.celularKey, ['--wait-window'], { PASARELA_MAX_WAIT_MS: '0' });
    expect(waited.exitCode).toBe(9);
    expect(waited.stderr).toMatch(/outside the allowed hours .*; waiting \d+ s.* for the window to open \(--wait-window\)/);
  });

  it("the client's line cap (603) exits 9", async () => {
    const b = await seedClient(s, { max_celulares: 1 });
    const r = await cli.run(['celular', 'create', '5215577770002', '--key', b.clientKey]);
    expect(r.exitCode, r.stderr).toBe(9);
  });

  it('the table: 403 is 3 unless its api_codigo says "not now"; 704 is 10 (502 now, 422 from an older server); 409 stays 1', () => {
    expect([301, 302, 303, 603, 639].map((c) => exitForStatus(403, c))).toEqual([9, 9, 9, 9, 9]);
    expect([201, undefined, 999].map((c) => exitForStatus(403, c))).toEqual([3, 3, 3]);
    expect([exitForStatus(401, 200), exitForStatus(502, 704), exitForStatus(422, 100), exitForStatus(409, 607), exitForStatus(409, 608)]).toEqual([
      3, 10, 1, 1, 1,
    ]);
    expect([exitForStatus(422, 704), exitForStatus(502, 700), exitForStatus(502, 705)]).toEqual([10, 7, 7]);
  });
});

describe('1, 4, 8: conflict, not found, unreachable', () => {
  it('409 duplicate number exits 1, 404 exits 4, a closed port exits 8', async () => {
    const [dup, notFoundAdmin, unreachable] = await Promise.all([
      cli.run(['celular', 'create', a.numero, '--key', a.clientKey]),
      cli.run(['admin', 'client', 'show', '99999', '--data-dir', s.dataDir]),
      cli.run(['info', '--url', 'http://127.0.0.1:1', '--key', a.clientKey]),
    ]);
    expect(code(dup)).toEqual({ exitCode: 1, stderr: expect.stringContaining('already registered') });
    expect(code(notFoundAdmin)).toEqual({ exitCode: 4, stderr: expect.stringContaining('client 99999 not found') });
    expect(code(unreachable)).toEqual({ exitCode: 8, stderr: expect.stringContaining('cannot reach the server at http://127.0.0.1:1') });
  });
});

describe('5, 6, 7: balance, rate limit, server error (from a stub server)', () => {
  // Answers like a pasarela server would on a bad day; reached through inject (no socket).
  const stub = Fastify();
  stub.all('/*', async (req, reply) => {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      reply
        .code(status)
        .headers({ 'content-type': 'application/json', ...headers })
        .send(JSON.stringify(body));
    if (req.url.startsWith('/api/saldo.php')) return send(402, { ok: false, error: 'saldo insuficiente', api_codigo: 300 });
    if (req.url.startsWith('/api/celulares.php')) return send(429, { ok: false, error: 'too many attempts', retry_after: 42 }, { 'retry-after': '42' });
    if (req.url.startsWith('/api/info.php')) return send(503, { ok: false, error: 'the server is stopping', api_codigo: 901 });
    return reply.code(200).header('content-type', 'text/html').send('<html>not pasarela</html>');
  });
  const stubUrl = 'http://stub.invalid';
  const stubCli = new Cli(stubUrl, injectTransport(stub));
  afterAll(async () => {
    stubCli.cleanup();
    await stub.close();
  });

  it('402 exits 5, 429 exits 6 (with the retry delay), 5xx exits 7, a non-JSON answer exits 1', async () => {
    const k = ['--url', stubUrl, '--key', 'WAC_1_x'];
    const [balance, rate, server, html] = await Promise.all([
      stubCli.run(['saldo', ...k]),
      stubCli.run(['celular', 'list', ...k, '--json']),
      stubCli.run(['info', ...k]),
      stubCli.run(['celular', 'show', '1', ...k]),
    ]);
    expect(code(balance)).toEqual({ exitCode: 5, stderr: 'error: saldo insuficiente\n' });
    expect(code(rate)).toEqual({ exitCode: 6, stderr: 'error: too many attempts (retry in 42 s)\n' });
    expect(JSON.parse(rate.stdout)).toEqual({ ok: false, error: 'too many attempts', retry_after: 42 });
    expect(code(server)).toEqual({ exitCode: 7, stderr: 'error: the server is stopping\n' });
    expect(code(html)).toEqual({ exitCode: 1, stderr: expect.stringContaining('not JSON') });
  });
});
