import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimGateway } from '../../src/gateways/sim.js';
import { numeroNuevo } from '../helpers/expect.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly, expectPlain } from './helpers.js';

/**
 * The CLI side of the gateway features: linking by pairing code
 * (`celular link --pairing-code`), typing the code on the simulated phone
 * (`sim scan --code`), and the checks `serve` makes of the gateway flags
 * before it starts anything.
 */
const CODE = /^[A-Z0-9]{4}-[A-Z0-9]{4}$/;

let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
  a = await seedClient(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const asClient = () => ({ env: { PASARELA_KEY: a.clientKey } });
const asOperator = () => ({ env: { PASARELA_ADMIN_TOKEN: s.adminToken } });

describe('celular link --pairing-code', () => {
  it("--json prints one JSON document with the codigo and the new line's key, nothing on stderr", async () => {
    const numero = numeroNuevo();
    const r = await cli.run(['celular', 'link', numero, '--pairing-code', '--json'], asClient());
    const body = expectJsonOnly(r);
    expect(body).toMatchObject({ ok: true, numero, creado: true, status: 'need_scan', estado: 'desconectado' });
    expect(body.codigo).toMatch(CODE);
    expect(body.api_key).toMatch(/^WA_\d+_/);
    expect(body.gateway_instancia).toBe(`pasarela-${body.celular_id}`);
    // The code is the one the server holds for the line.
    const same = await api(s.url, 'POST', `/api/celular_codigo.php?id=${body.celular_id}`, { key: a.clientKey });
    expect(same.body.codigo).toBe(body.codigo);
  });

  it('without --json and without a TTY: the new key, then the code on stdout, the hint on stderr; a second run reuses the line', async () => {
    const numero = numeroNuevo();
    const r = await cli.run(['celular', 'link', numero, '--pairing-code'], asClient());
    expect(r.exitCode, r.stderr).toBe(0);
    expectPlain(r);
    // The key is shown once, so it goes where a script can keep it (as `celular create` does).
    expect(r.stdout).toMatch(/^Celular key\tWA_\d+_\S+\n[A-Z0-9]{4}-[A-Z0-9]{4}\n$/);
    const code = r.stdout.trimEnd().split('\n')[1]!;
    expect(r.stderr).toMatch(/Registered celular \d+/);
    expect(r.stderr).not.toMatch(/WA_\d+_/);
    expect(r.stderr).toContain('Link with phone number');
    const id = Number(/Registered celular (\d+)/.exec(r.stderr)![1]);

    const again = await cli.run(['celular', 'link', numero, '--pairing-code'], asClient());
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toBe(`${code}\n`);
    expect(again.stderr).toContain(`Celular ${id} already registered`);
    expect(again.stderr).not.toMatch(/WA_\d+_/);
  });

  it('when the gateway cannot start the link: the line is registered and its key shown, but no empty code and exit 7', async () => {
    const gw = s.core.gateway as SimGateway;
    const numero = numeroNuevo();
    gw.setOutage(true);
    try {
      const r = await cli.run(['celular', 'link', numero, '--pairing-code'], asClient());
      expect(r.exitCode).toBe(7);
      expect(r.stdout).toMatch(/^Celular key\tWA_\d+_\S+\n$/);
      expect(r.stderr).toMatch(/Registered celular \d+/);
      expect(r.stderr).toMatch(/error: .*ask for the pairing code again/);
      expect(r.stderr).not.toContain('Link with phone number');
      // --json: the server's answer (with the key) on stdout all the same.
      const numero2 = numeroNuevo();
      const j = await cli.run(['celular', 'link', numero2, '--pairing-code', '--json', '--wait', '--timeout', '5'], asClient());
      expect(j.exitCode).toBe(7);
      expect(JSON.parse(j.stdout)).toMatchObject({
        numero: numero2,
        creado: true,
        status: 'unknown',
        codigo: '',
        api_key: expect.stringMatching(/^WA_/),
        aviso: expect.any(String),
      });
    } finally {
      gw.setOutage(false);
    }
    const again = await cli.run(['celular', 'link', numero, '--pairing-code'], asClient());
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}\n$/);
  });

  it('a celular key may not link a number: exit 3', async () => {
    const r = await cli.run(['celular', 'link', numeroNuevo(), '--pairing-code'], { env: { PASARELA_KEY: a.celularKey } });
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: /);
  });
});

describe('sim scan --code', () => {
  it('the issued code connects the line (activo); a wrong one is refused (exit 1) and changes nothing', async () => {
    const b = await seedClient(s);
    const issued = await api(s.url, 'POST', `/api/celular_codigo.php?id=${b.celularId}`, { key: b.clientKey });
    const code = issued.body.codigo as string;
    expect(code).toMatch(CODE);

    const wrong = await cli.run(['sim', 'scan', String(b.celularId), '--code', code.startsWith('A') ? `B${code.slice(1)}` : `A${code.slice(1)}`], asOperator());
    expect(wrong.exitCode).toBe(1);
    expect(wrong.stderr).toContain('pairing code');
    expect((await s.core.store.getCelular(b.celularId))!.estado).toBe('desconectado');

    const r = await cli.run(['sim', 'scan', String(b.celularId), '--code', code, '--json'], asOperator());
    expect(expectJsonOnly(r)).toMatchObject({ ok: true, celular_id: b.celularId, status: 'connected' });
    const st = await cli.run(['celular', 'status', String(b.celularId), '--json'], { env: { PASARELA_KEY: b.clientKey } });
    expect(expectJsonOnly(st)).toMatchObject({ status: 'connected', estado: 'activo', status_actualizado_desde_gateway: true });
  });
});
