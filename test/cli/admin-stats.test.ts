import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { injectTransport } from '../helpers/inject-http.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, expectJsonOnly, expectPlain } from './helpers.js';

/** `pasarela admin stats`: the chart's figures as a table (the busy bars) or JSON (every bar), and its refusals. */
let s: TestServer;
let a: Seeded;
let cli: Cli;

const asOperator = () => ({ env: { PASARELA_ADMIN_TOKEN: s.adminToken } });

beforeAll(async () => {
  s = await startTestServer({}, { inject: true });
  a = await seedClient(s, { saldo: 10 });
  await s.core.store.updateCelular(a.celularId, { estado: 'activo', last_status: 'connected', vinculado: 1 }, s.clock.now());
  for (let i = 0; i < 3; i += 1) {
    const r = await api(s.url, 'POST', '/api/mensaje_enviar_texto.php', { key: a.celularKey, json: { destinatario: '5215512345678', mensaje: `m${i}` } });
    expect(r.status, r.text).toBe(200);
  }
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('admin stats', () => {
  it('prints the bars with sends, one tab-separated line each, and a summary', async () => {
    const r = await cli.run(['admin', 'stats', '--celular', String(a.celularId)], asOperator());
    expect(r.exitCode, r.stderr).toBe(0);
    expectPlain(r);
    const lines = r.stdout.trim().split('\n');
    const minute = new Date(Math.floor(s.clock.now() / 60_000) * 60_000).toISOString();
    expect(lines.some((l) => l.startsWith(`${minute}\t`) && l.endsWith('\t3'))).toBe(true);
    expect(r.stdout).toContain('3 messages created from');
    expect(r.stdout).toContain('59 empty bars not shown');
  });

  it('--json: every bar, and the samples for everyone', async () => {
    const body = expectJsonOnly(await cli.run(['admin', 'stats', '--rango', '24h', '--json'], asOperator()));
    expect(body).toMatchObject({ ok: true, rango: '24h', paso_s: 900, cliente_id: null });
    expect(body.envios).toHaveLength(96);
    expect(body.muestras).toHaveLength(96);
  });

  it('refuses a range it does not know before asking, and an unknown client with the API error', async () => {
    const bad = await cli.run(['admin', 'stats', '--rango', '2h'], asOperator());
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain('2h');
    const none = await cli.run(['admin', 'stats', '--cliente', '999999'], asOperator());
    expect(none.exitCode).not.toBe(0);
    expect(none.stderr).toContain('cliente_id 999999: no such client');
  });
});
