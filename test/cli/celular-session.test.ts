import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SIM_PUSH_NAME, type SimGateway } from '../../src/gateways/sim.js';
import { injectTransport } from '../helpers/inject-http.js';
import { until } from '../helpers/poll.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine } from '../server/send-helpers.js';
import { Cli, expectJsonOnly, fields } from './helpers.js';

/**
 * `pasarela celular logout ID` and `celular restart ID` off a terminal:
 * logout needs --yes there (exit 2 without), --json prints the server's
 * answer alone, refusals take their DESIGN §9 exit codes; `show` and
 * `status` name the linked phone (and no engine node: the simulator has none). The question on a TTY is in
 * celular-session.slow.test.ts.
 */
let s: TestServer;
let cli: Cli;
const sim = () => s.core.gateway as SimGateway;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});
afterEach(() => sim().setOutage(false));

describe('celular logout and restart', () => {
  it('logout off a TTY needs --yes (exit 2, nothing done); with --yes --json the answer alone; again: exit 1, saying there is no session', async () => {
    const L = await linkedLine(s);
    const env = { env: { PASARELA_KEY: L.clientKey } };
    const no = await cli.run(['celular', 'logout', String(L.celularId)], env);
    expect(no.exitCode).toBe(2);
    expect(no.stderr).toContain('--yes required when not running interactively');
    expect((await s.core.store.getCelular(L.celularId))!.last_status).toBe('connected');

    const out = expectJsonOnly(await cli.run(['celular', 'logout', String(L.celularId), '--yes', '--json'], env));
    expect(out).toMatchObject({ ok: true, celular_id: L.celularId, status: 'logged_out', estado: 'desconectado', vinculado: false });

    const again = await cli.run(['celular', 'logout', String(L.celularId), '-y'], env);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain(`celular ${L.celularId} has no session to act on (it is logged out): link it first`);
  });

  it('logout in words: on stderr, naming what to do next; stdout stays empty', async () => {
    const L = await linkedLine(s);
    const r = await cli.run(['celular', 'logout', String(L.celularId), '--yes'], { env: { PASARELA_KEY: L.celularKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `Logged out celular ${L.celularId}: status logged_out, estado desconectado. Link it again with: pasarela celular qr ${L.celularId}`,
    );
  });

  it('restart asks nothing: --json is the answer; the line connects again by itself', async () => {
    const L = await linkedLine(s);
    const env = { env: { PASARELA_KEY: L.clientKey } };
    const r = expectJsonOnly(await cli.run(['celular', 'restart', String(L.celularId), '--json'], env));
    expect(r).toMatchObject({ ok: true, celular_id: L.celularId, status: 'connecting', vinculado: true });
    await until(async () => (await s.core.store.getCelular(L.celularId))!.last_status === 'connected', { what: 'connected again' });
    const words = await cli.run(['celular', 'restart', String(L.celularId)], env);
    expect(words.exitCode, words.stderr).toBe(0);
    expect(words.stderr).toContain(`Restarted celular ${L.celularId}: status connecting; it connects again by itself`);
  });

  it('exit codes: unknown line 4, wrong key 3, gateway down 7, no id 2, never linked 1', async () => {
    const L = await linkedLine(s);
    const M = await linkedLine(s, { link: false });
    const env = { env: { PASARELA_KEY: L.clientKey } };
    expect((await cli.run(['celular', 'restart', '99999999'], env)).exitCode).toBe(4);
    expect((await cli.run(['celular', 'logout', '99999999', '--yes'], env)).exitCode).toBe(4);
    expect((await cli.run(['celular', 'restart', String(L.celularId)], { env: { PASARELA_KEY: 'WAC_1_nope' } })).exitCode).toBe(3);
    expect((await cli.run(['celular', 'restart'], env)).exitCode).toBe(2);
    expect((await cli.run(['celular', 'restart', 'abc'], env)).exitCode).toBe(2);
    expect((await cli.run(['celular', 'restart', String(M.celularId)], { env: { PASARELA_KEY: M.clientKey } })).exitCode).toBe(1);
    sim().setOutage(true);
    const down = await cli.run(['celular', 'restart', String(L.celularId), '--json'], env);
    expect(down.exitCode).toBe(7);
    expect(JSON.parse(down.stdout)).toMatchObject({ ok: false, api_codigo: 700 });
  });

  it('show and status name the linked phone; --json carries perfil; a line not linked shows none', async () => {
    const L = await linkedLine(s);
    const env = { env: { PASARELA_KEY: L.clientKey } };
    const show = await cli.run(['celular', 'show', String(L.celularId)], env);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(fields(show.stdout).telefono).toBe(`${SIM_PUSH_NAME} · +${L.numero}`);
    const st = expectJsonOnly(await cli.run(['celular', 'status', String(L.celularId), '--json'], env));
    expect(st.perfil).toEqual({ nombre: SIM_PUSH_NAME, numero: L.numero });
    const status = await cli.run(['celular', 'status', String(L.celularId)], env);
    expect(fields(status.stdout).telefono).toBe(`${SIM_PUSH_NAME} · +${L.numero}`);
    // Only the in-process engine has a node holding the line (D-137; test/server/engine-holder.slow.test.ts).
    expect(st).not.toHaveProperty('motor_nodo');
    expect(fields(status.stdout)).not.toHaveProperty('node');
    const M = await linkedLine(s, { link: false });
    const none = expectJsonOnly(await cli.run(['celular', 'show', String(M.celularId), '--json'], { env: { PASARELA_KEY: M.clientKey } }));
    expect(none.perfil).toBeNull();
    expect((await api(s.url, 'GET', `/api/celular.php?id=${M.celularId}`, { key: M.clientKey })).body.perfil).toBeNull();
  });
});
