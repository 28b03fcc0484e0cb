import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numeroNuevo } from '../helpers/expect.js';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, waitForText } from './helpers.js';

let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
  a = await seedClient(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

const asClient = () => ({ env: { PASARELA_KEY: a.clientKey } });
const asOperator = () => ({ env: { PASARELA_ADMIN_TOKEN: s.adminToken } });

describe('celular link --pairing-code', () => {
  it('--wait follows the line until the phone types the code (sim scan --code), then exits 0', async () => {
    const numero = numeroNuevo();
    const proc = cli.spawn(['celular', 'link', numero, '--pairing-code', '--wait', '--interval', '200', '--timeout', '20'], asClient());
    const code = /\n([A-Z0-9]{4}-[A-Z0-9]{4})\n/.exec(await waitForText(proc.stdout, /\n[A-Z0-9]{4}-[A-Z0-9]{4}\n/))![1]!;
    const id = (await s.core.store.getCelularByNumero(numero))!.id;
    const scan = await cli.run(['sim', 'scan', String(id), '--code', code], asOperator());
    expect(scan.exitCode, scan.stderr).toBe(0);
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout)).toMatch(new RegExp(`^Celular key\tWA_${id}_\\S+\n${code}\n$`));
    expect(String(r.stderr)).toContain(`celular ${id} is connected`);
  });
});

describe('serve: gateway flags are checked before anything starts (exit 2)', () => {
  const dataDir = () => join(cli.home, 'never-made');
  const serve = (args: string[], env: Record<string, string> = {}) =>
    cli.run(['serve', '--port', '0', '--data-dir', dataDir(), ...args], { env, timeoutMs: 15_000 });

  it('--gateway evolution without --gateway-url', async () => {
    const r = await serve(['--gateway', 'evolution', '--gateway-key', 'k']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--gateway-url');
    expect(r.stderr).not.toContain('listening');
    expect(r.stdout).toBe('');
  });

  it('--gateway evolution with neither flag names --gateway-url; from the environment too', async () => {
    const r = await serve(['--gateway', 'evolution']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--gateway-url');
    expect(r.stderr).toContain('PASARELA_GATEWAY_URL');
    const e = await serve([], { PASARELA_GATEWAY: 'evolution', PASARELA_GATEWAY_URL: 'http://127.0.0.1:1' });
    expect(e.exitCode).toBe(2);
    expect(e.stderr).toContain('--gateway-key');
  });

  it('--gateway waha with a --gateway-url that is not a URL', async () => {
    const r = await serve(['--gateway', 'waha', '--gateway-url', 'notaurl', '--gateway-key', 'k']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--gateway-url');
    expect(r.stderr).toContain('notaurl');
    const cb = await serve(['--gateway', 'waha', '--gateway-url', 'http://127.0.0.1:1', '--gateway-key', 'k', '--gateway-callback-url', 'ftp://x']);
    expect(cb.exitCode).toBe(2);
    expect(cb.stderr).toContain('--gateway-callback-url');
  });

  it('an unknown --gateway, a bad --health-interval, a --gateway-timeout under 100ms, a header timeout past the request timeout', async () => {
    const r = await serve(['--gateway', 'nope']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('nope');
    expect(r.stderr).toMatch(/sim.*evolution.*waha/);
    expect((await serve(['--health-interval', 'often'])).exitCode).toBe(2);
    const t = await serve(['--gateway-timeout', '50ms']);
    expect(t.exitCode).toBe(2);
    expect(t.stderr).toContain('--gateway-timeout');
    const h = await serve(['--header-timeout', '15m']);
    expect(h.exitCode).toBe(2);
    expect(h.stderr).toContain('--header-timeout may not be longer than --request-timeout');
    // None of the refusals made the data directory.
    expect(existsSync(dataDir())).toBe(false);
  });
});
