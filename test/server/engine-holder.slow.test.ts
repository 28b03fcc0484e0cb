import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeNetwork, type FakeNetwork } from '../fakewa/index.js';
import { Cli, expectJsonOnly, fields } from '../cli/helpers.js';
import { expectOk, numeroNuevo } from '../helpers/expect.js';
import { injectTransport } from '../helpers/inject-http.js';
import { until } from '../helpers/poll.js';
import { api, seedClient, startTestServer, tempDir, type Seeded, type TestServer } from '../helpers/server.js';

/**
 * Which node holds a linked line (D-137) on one `serve --gateway baileys`
 * (SQLite) against the fake network: once linked, the line's holder is this
 * node, named the same in celular_status.php, the operator's client page,
 * `celular status`, the panel's line page, lines page and overview, and /metrics; the
 * take is audited and logged. A restart gives the line back (audited as a
 * stop) and the new process takes it again, with no new scan.
 */
let fake: FakeNetwork;
let s: TestServer;
let A: Seeded;
let cli: Cli;
const dataDir = tempDir('pasarela-holder-');
const LINE = numeroNuevo();

const start = async () => {
  s = await startTestServer({ dataDir, gateway: 'baileys', baileysWsUrl: fake.wsUrl, engine: { ca: fake.ca }, allowPrivateUrls: true });
  cli = new Cli(s.url, injectTransport(s.app));
};
const thisNode = async () => (await s.core.store.nodes(s.core.clock.now()))[0]!;
const status = async () => (await api(s.url, 'GET', `/api/celular_status.php?id=${A.celularId}`, { key: A.clientKey })).body;
const audited = async () =>
  (await api(s.url, 'GET', `/admin/auditoria?accion=celular.motor_nodo&cliente_id=${A.clienteId}`, { key: s.adminToken })).body.registros;

/** A metric's value as the exposition shows it (`name{labels} value`), null when absent. */
function metric(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

/** Signs in to the panel with `credencial` (through inject: fetch would follow the redirect); the session cookie. */
async function signIn(credencial: string): Promise<string> {
  const r = await s.app.inject({ method: 'POST', url: '/panel/login', payload: { credencial } });
  expect(r.statusCode, r.body).toBe(303);
  return String(r.headers['set-cookie']).split(';')[0]!;
}
const page = async (cookie: string, url: string) => {
  const r = await s.app.inject({ method: 'GET', url, headers: { cookie } });
  return { status: r.statusCode, text: r.body };
};

beforeAll(async () => {
  fake = await startFakeNetwork();
  await fake.trustInProcess();
  await start();
  A = await seedClient(s, { numero: LINE, saldo: 10 });
  const qr = await api(s.url, 'POST', `/api/celular_qr.php?id=${A.celularId}`, { key: A.clientKey, json: {} });
  expectOk(qr);
  await fake.scanQr(qr.body.qr as string, LINE);
  await until(async () => (await status()).status === 'connected', { what: 'the line connected', timeoutMs: 30_000 });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
  await fake?.close();
});

describe('the node holding a linked line', () => {
  it('is this node, in celular_status.php and the operator API', async () => {
    const n = await thisNode();
    expect(n.label).toMatch(/^pasarela serve pid \d+ on /);
    const holder = { id: n.id, etiqueta: n.label, presente: true };
    expect((await status()).motor_nodo).toEqual(holder);
    const op = await api(s.url, 'GET', `/admin/clientes/${A.clienteId}`, { key: s.adminToken });
    expect(op.body.celulares).toEqual([expect.objectContaining({ id: A.celularId, motor_nodo: holder })]);
    // `admin client show` adds the node to its table of lines.
    const show = await cli.run(['admin', 'client', 'show', String(A.clienteId)], { env: { PASARELA_ADMIN_TOKEN: s.adminToken } });
    expect(show.exitCode, show.stderr).toBe(0);
    const row = show.stdout.split('\n').find((l) => l.startsWith(`${A.celularId}\t`));
    expect(row!.split('\t')).toEqual([String(A.celularId), LINE, 'activo', '0', 'connected', '', n.label]);
  });

  it('celular status shows it on a node line; --json is the API body with motor_nodo', async () => {
    const env = { env: { PASARELA_KEY: A.clientKey } };
    const n = await thisNode();
    const human = await cli.run(['celular', 'status', String(A.celularId)], env);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(fields(human.stdout).node).toBe(n.label);
    const json = expectJsonOnly(await cli.run(['celular', 'status', String(A.celularId), '--json'], env));
    expect(json.motor_nodo).toEqual({ id: n.id, etiqueta: n.label, presente: true });
    // A line not linked yet: no node holds it.
    const c = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
    expect(c.status, c.text).toBe(201);
    const other = await cli.run(['celular', 'status', String(c.body.celular_id)], env);
    expect(fields(other.stdout).node).toBe('none (no node holds its session now)');
    expect(expectJsonOnly(await cli.run(['celular', 'status', String(c.body.celular_id), '--json'], env)).motor_nodo).toBeNull();
    expectOk(await api(s.url, 'POST', `/api/celular_eliminar.php?id=${c.body.celular_id}`, { key: A.clientKey }));
  });

  it("the panel's line page, lines page and overview name it", async () => {
    const n = await thisNode();
    const cookie = await signIn(s.adminToken);
    const line = await page(cookie, `/panel/c/${A.clienteId}/celulares/${A.celularId}`);
    expect(line.status, line.text).toBe(200);
    expect(line.text).toMatch(new RegExp(`<dt>Engine node</dt>\\s*<dd>${n.label}</dd>`));
    const lines = await page(cookie, `/panel/c/${A.clienteId}/celulares`);
    expect(lines.text).toMatch(new RegExp(`<td data-label="engine node">${n.label}</td>`));
    const overview = await page(cookie, '/panel/');
    expect(overview.status).toBe(200);
    expect(overview.text).toContain('Engine sessions by node');
    expect(overview.text).toContain(n.label);
    // The client sees the same on its own line page.
    const own = await signIn(A.clientKey);
    expect((await page(own, `/panel/c/${A.clienteId}/celulares/${A.celularId}`)).text).toContain(n.label);
  });

  it('/metrics: the line held here, and the take counted as free', async () => {
    const text = (await api(s.url, 'GET', '/metrics', { key: s.adminToken })).text;
    expect(metric(text, 'pasarela_engine_sessions_held')).toBe(1);
    expect(metric(text, 'pasarela_engine_session_moves_total{reason="free"}')).toBe(1);
    expect(metric(text, 'pasarela_engine_session_moves_total{reason="gone"}')).toBe(0);
  });

  it('the take is audited once and logged', async () => {
    const n = await thisNode();
    const rows = await audited();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor: 'sistema',
      objeto_id: A.celularId,
      cliente_id: A.clienteId,
      detalle: { antes: { nodo: null }, despues: { nodo: n.label, nodo_id: n.id }, motivo: 'free' },
    });
    const logged = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === 'line.holder');
    expect(logged).toEqual([expect.objectContaining({ to: n.id, from: null, reason: 'free', msg: "line's engine session changed hands" })]);
  });

  it('a restart: the stop gives the line back (audited), the new process takes it from the stored state with no scan', async () => {
    const old = await thisNode();
    await s.close();
    await start();
    await until(async () => (await status()).status === 'connected', { what: 'connected after the restart', timeoutMs: 30_000 });
    const n = await thisNode();
    expect(n.id).not.toBe(old.id);
    await until(async () => (await status()).motor_nodo?.id === n.id, { what: 'held by the new process' });
    // Written just after the take, which the status may have overtaken.
    await until(async () => (await audited()).length === 3, { what: 'the new take audited' });
    const rows = await audited();
    expect(rows.map((r: { detalle: { motivo: string } }) => r.detalle.motivo)).toEqual(['free', 'stop', 'free']);
    expect(rows[1].detalle).toEqual({ antes: { nodo: old.label, nodo_id: old.id }, despues: { nodo: null, nodo_id: null }, motivo: 'stop' });
    expect(fake.maxConcurrent(LINE)).toBe(1);
  });
});
