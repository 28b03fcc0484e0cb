import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly, expectCleanExit, fields, rows } from './helpers.js';

/**
 * The README walk-through as a script runs it: no TTY, no prompts, every
 * value taken from the previous command's output. The steps depend on each
 * other and run in order against one server.
 */
let s: TestServer;
let cli: Cli;
/** Operator credentials, one way per step (all three are exercised). */
let viaDataDir: string[];
let viaFlag: string[];
let viaEnv: { PASARELA_ADMIN_TOKEN: string };

const NUMERO = '5215512345678';
const FROM = '5215599998888';
let clienteId: number;
let clientKey: string;
let celularId: number;
let celularKey: string;
let legacyToken: string;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
  viaDataDir = ['--data-dir', s.dataDir];
  viaFlag = ['--admin-token', s.adminToken];
  viaEnv = { PASARELA_ADMIN_TOKEN: s.adminToken };
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('README walk-through, non-interactive', () => {
  it('admin client create --json (token read from --data-dir/admin-token) prints the client and its key', async () => {
    const b = expectJsonOnly(
      await cli.run(['admin', 'client', 'create', '--nombre', 'Tienda Sol', '--email', 'ops@sol.example', '--saldo', '100', '--json', ...viaDataDir]),
    );
    expect(b).toMatchObject({ ok: true, cliente: { nombre: 'Tienda Sol', email: 'ops@sol.example', plan: 'medido', max_celulares: null }, saldo_global: 100 });
    expect(b.cliente.id).toEqual(expect.any(Number));
    expect(b.api_key).toMatch(new RegExp(`^WAC_${b.cliente.id}_[A-Za-z0-9_-]{20,}$`));
    clienteId = b.cliente.id;
    clientKey = b.api_key;
  });

  it('login --url --key checks the key, saves the default profile (mode 0600) and says so', async () => {
    const r = await cli.run(['login', '--url', s.url, '--key', clientKey], { env: { PASARELA_URL: undefined } });
    // The confirmation is on stderr; stdout stays empty for scripts.
    expect(expectCleanExit(r)).toBe('');
    const out = r.stderr;
    expect(out).toContain(`client ${clienteId} (Tienda Sol)`);
    expect(out).toContain('"default"');
    expect(out).not.toContain(clientKey);
    expect(statSync(cli.configFile).mode & 0o777).toBe(0o600);
  });

  it('login --with-key reads the key from stdin into another profile', async () => {
    const b = expectJsonOnly(await cli.run(['login', '--with-key', '--profile', 'ci', '--url', s.url, '--json'], { input: `${clientKey}\n` }));
    expect(b).toMatchObject({ ok: true, profile: 'ci', url: s.url, cliente: { id: clienteId } });
    expect(JSON.stringify(b)).not.toContain(clientKey);
  });

  it('info and saldo use the saved profile (no URL or key in flags or env)', async () => {
    const env = { PASARELA_URL: undefined };
    const info = fields(expectCleanExit(await cli.run(['info'], { env })));
    expect(info).toMatchObject({
      cliente: `${clienteId} Tienda Sol`,
      email: 'ops@sol.example',
      estado: 'activo',
      plan: 'medido',
      saldo_global: '100',
      celulares: '0 (0 active)',
    });
    const saldo = fields(expectCleanExit(await cli.run(['saldo'], { env })));
    expect(saldo).toMatchObject({ plan: 'medido', saldo_global: '100', consumo_mes: '0' });
  });

  it('celular create NUMERO --nombre prints the celular key once, the rest on stderr', async () => {
    const r = await cli.run(['celular', 'create', NUMERO, '--nombre', 'Ventas']);
    const out = expectCleanExit(r);
    const f = fields(out);
    celularKey = f['Celular key'] ?? '';
    expect(celularKey).toMatch(/^WA_\d+_[A-Za-z0-9_-]{20,}$/);
    expect(f['Gateway token']).toMatch(/^[0-9a-f]{64}$/);
    expect((r.stdout + r.stderr).split(celularKey).length - 1).toBe(1);
    const m = /Created celular (\d+) \((\d+)\), estado desconectado/.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    celularId = Number(m![1]);
    expect(celularKey.startsWith(`WA_${celularId}_`)).toBe(true);
    expect(r.stderr).toContain(`pasarela celular qr ${celularId}`);
  });

  it('celular qr ID without a TTY prints the raw QR content and exits at once', async () => {
    const r = await cli.run(['celular', 'qr', String(celularId)]);
    const out = expectCleanExit(r).trim();
    expect(out).toMatch(/^2@[^\s]+,[^\s]+,[^\s]+,1$/);
    expect(out.split('\n')).toHaveLength(1);
  });

  it('sim scan ID (token from PASARELA_ADMIN_TOKEN) links the line', async () => {
    const b = expectJsonOnly(await cli.run(['sim', 'scan', String(celularId), '--json'], { env: viaEnv }));
    expect(b).toMatchObject({ ok: true, celular_id: celularId, status: 'connected' });
  });

  it('celular status ID shows connected', async () => {
    const f = fields(expectCleanExit(await cli.run(['celular', 'status', String(celularId)])));
    expect(f).toMatchObject({ celular: String(celularId), status: 'connected', estado: 'activo', refreshed: 'yes' });
  });

  it('celular list is one tab-separated line per celular, no header', async () => {
    const t = rows(expectCleanExit(await cli.run(['celular', 'list'])));
    expect(t).toEqual([[String(celularId), '525512345678', 'Ventas', 'activo', '0', 'connected', '12', '500', '00:00-23:59']]);
  });

  it('celular show ID prints its fields', async () => {
    const f = fields(expectCleanExit(await cli.run(['celular', 'show', String(celularId)])));
    expect(f).toMatchObject({
      id: String(celularId),
      numero: '525512345678',
      nombre_interno: 'Ventas',
      max_envios_por_minuto: '12',
      horario: '00:00-23:59',
      last_status: 'connected',
      tiene_token_legacy: 'false',
    });
  });

  it('celular edit ID --por-minuto 30 --desde 08:00 --hasta 20:00', async () => {
    const b = expectJsonOnly(await cli.run(['celular', 'edit', String(celularId), '--por-minuto', '30', '--desde', '08:00', '--hasta', '20:00', '--json']));
    expect(b.celular).toMatchObject({
      id: celularId,
      max_envios_por_minuto: 30,
      hora_inicio_permitido: '08:00',
      hora_fin_permitido: '20:00',
      max_envios_por_hora: 500,
    });
  });

  it('admin balance add to the client (token from --admin-token), then to the celular', async () => {
    const g = expectJsonOnly(await cli.run(['admin', 'balance', 'add', '--cliente', String(clienteId), '--monto', '50', '--json', ...viaFlag]));
    expect(g).toMatchObject({ ok: true, cliente_id: clienteId, saldo_global: 150, celular_id: null });
    const c = fields(
      expectCleanExit(await cli.run(['admin', ...viaFlag, 'balance', 'add', '--cliente', String(clienteId), '--celular', String(celularId), '--monto', '7'])),
    );
    expect(c).toMatchObject({ cliente: String(clienteId), celular: String(celularId), saldo_celular: '7' });
    expect(c.movimiento).toMatch(/^\d+$/);
    const check = await api(s.url, 'GET', `/api/saldo.php?celular_id=${celularId}`, { key: clientKey });
    expect(check.body).toMatchObject({ saldo_global: 150, saldo_celular: 7 });
  });

  it('admin celular legacy-token ID prints a token that then works as --key', async () => {
    const r = await cli.run(['admin', 'celular', 'legacy-token', String(celularId)], { env: viaEnv });
    const f = fields(expectCleanExit(r));
    legacyToken = f['Legacy token'] ?? '';
    expect(legacyToken.length).toBeGreaterThanOrEqual(16);
    expect(r.stdout.split(legacyToken).length - 1).toBe(1);
    const info = fields(expectCleanExit(await cli.run(['info', '--key', legacyToken], { env: { PASARELA_PROFILE: 'nonexistent' } })));
    expect(info.cliente).toBe(`${clienteId} Tienda Sol`);
  });

  it('sim receive ID --from NUM --text hola', async () => {
    const b = expectJsonOnly(await cli.run(['sim', 'receive', String(celularId), '--from', FROM, '--text', 'hola', '--json'], { env: viaEnv }));
    expect(b).toMatchObject({ ok: true, celular_id: celularId, de: '525599998888' });
    expect(b.gateway_msg_id).toEqual(expect.any(String));
  });

  it('sim fail NUM, sim fail (list), sim fail NUM --clear', async () => {
    const set = expectJsonOnly(await cli.run(['sim', 'fail', FROM, '--motivo', 'no existe', '--json', ...viaDataDir]));
    expect(set).toMatchObject({ ok: true, numero: '525599998888', motivo: 'no existe', activo: true });
    const list = rows(expectCleanExit(await cli.run(['sim', 'fail', ...viaDataDir])));
    expect(list).toEqual([['525599998888', 'no existe']]);
    const clear = expectJsonOnly(await cli.run(['sim', 'fail', FROM, '--clear', '--json'], { env: { PASARELA_DATA_DIR: s.dataDir } }));
    expect(clear).toMatchObject({ ok: true, numero: '525599998888', activo: false });
    const after = await api(s.url, 'GET', '/admin/sim/fail', { key: s.adminToken });
    expect(after.body.reglas).toEqual([]);
  });

  it('sim logout ID ends the session', async () => {
    const b = expectJsonOnly(await cli.run(['sim', 'logout', String(celularId), '--json'], { env: viaEnv }));
    expect(b).toMatchObject({ ok: true, celular_id: celularId, status: 'logged_out' });
  });

  it('admin client list / show / edit', async () => {
    const list = rows(expectCleanExit(await cli.run(['admin', 'client', 'list'], { env: viaEnv })));
    expect(list).toContainEqual([String(clienteId), 'Tienda Sol', 'ops@sol.example', 'activo', 'medido', '150', '1', '0']);
    const show = expectCleanExit(await cli.run(['admin', 'client', 'show', String(clienteId)], { env: viaEnv }));
    expect(fields(show)).toMatchObject({ id: String(clienteId), nombre: 'Tienda Sol', saldo_global: '150', max_celulares: 'unlimited' });
    // The client's celulares follow its fields, after an empty line.
    expect(show).toContain(`\n\n${celularId}\t525512345678\t`);
    const edit = expectJsonOnly(
      await cli.run(['admin', 'client', 'edit', String(clienteId), '--nombre', 'Tienda Luna', '--max-celulares', '5', '--json'], { env: viaEnv }),
    );
    expect(edit.cliente).toMatchObject({ id: clienteId, nombre: 'Tienda Luna', max_celulares: 5 });
  });

  it('celular delete ID --yes deletes it; its key stops working', async () => {
    const b = expectJsonOnly(await cli.run(['celular', 'delete', String(celularId), '--yes', '--json']));
    expect(b).toMatchObject({ ok: true, celular_id: celularId });
    const gone = await api(s.url, 'GET', `/api/celular.php?id=${celularId}`, { key: clientKey });
    expect(gone.status).toBe(404);
    expect((await api(s.url, 'GET', '/api/info.php', { key: celularKey })).status).toBe(401);
  });

  it('admin audit lists what was done, newest first, without secrets', async () => {
    const b = expectJsonOnly(await cli.run(['admin', 'audit', '--cliente', String(clienteId), '--json'], { env: viaEnv }));
    const acciones: string[] = b.registros.map((r: { accion: string }) => r.accion);
    for (const a of ['cliente.crear', 'celular.crear', 'celular.editar', 'celular.token_legacy', 'cliente.editar']) expect(acciones).toContain(a);
    const ids: number[] = b.registros.map((r: { id: number }) => r.id);
    expect([...ids].sort((x, y) => y - x)).toEqual(ids);
    const text = JSON.stringify(b);
    for (const secret of [clientKey, celularKey, legacyToken, s.adminToken]) expect(text).not.toContain(secret);
  });
});
