import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInfo, runSaldo } from '../../src/cli/commands/account.js';
import { runClientShow } from '../../src/cli/commands/admin-clients.js';
import { runConfigPath } from '../../src/cli/commands/config.js';
import { Ctx, type GlobalFlags } from '../../src/cli/context.js';
import { CliError } from '../../src/cli/exit-codes.js';
import { EXIT } from '../../src/shared/exit-codes.js';
import { makeTerm } from '../../src/cli/io.js';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, fakeIO, fields } from './helpers.js';

/**
 * A command's run function called directly (GitHub CLI style): its options,
 * a Ctx made of fake IO and an environment, and a real server. What the
 * builder adds (argument parsing, exit codes) is main's, tested through Cli.run.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
  a = await seedClient(s, { saldo: 7 });
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

/** A Ctx as main builds it for one invocation, writing to fake IO. */
function ctxWith(flags: GlobalFlags, env = cli.env()) {
  const fake = fakeIO();
  return { ctx: new Ctx(makeTerm(fake.io, env), env, flags), ...fake };
}

describe('run functions take (options, ctx)', () => {
  it('runInfo and runSaldo print the account off a TTY, as `pasarela info` and `pasarela saldo` do', async () => {
    const info = ctxWith({ key: a.clientKey });
    await runInfo(info.ctx);
    expect(fields(info.stdout())).toMatchObject({ cliente: expect.stringMatching(new RegExp(`^${a.clienteId} `)), saldo_global: '7' });
    expect(info.stdout()).toBe((await cli.run(['info'], { env: { PASARELA_KEY: a.clientKey } })).stdout);
    expect(info.stderr()).toBe('');

    const saldo = ctxWith({ key: a.clientKey });
    await runSaldo({ celular: a.celularId }, saldo.ctx);
    expect(fields(saldo.stdout())).toMatchObject({ saldo_global: '7', celular: String(a.celularId), saldo_celular: '0' });
    const viaMain = await cli.run(['saldo', '--celular', String(a.celularId)], { env: { PASARELA_KEY: a.clientKey } });
    expect(viaMain.stdout).toBe(saldo.stdout());
  });

  it('runClientShow with --json prints the server body; a wrong token is a CliError with exit 3 naming its source', async () => {
    const shown = ctxWith({ json: true }, cli.env({ PASARELA_ADMIN_TOKEN: s.adminToken }));
    await runClientShow({ id: String(a.clienteId) }, shown.ctx);
    expect(JSON.parse(shown.stdout())).toMatchObject({ cliente: { id: a.clienteId }, saldo_global: 7 });

    const refused = ctxWith({ adminToken: 'not-the-token' });
    const err = await runClientShow({ id: String(a.clienteId) }, refused.ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(EXIT.AUTH);
    expect((err as CliError).message).toContain('from --admin-token');
    expect(refused.stdout()).toBe('');
  });

  it('runConfigPath needs no server: the config file of the environment', () => {
    const p = ctxWith({});
    runConfigPath(p.ctx);
    expect(p.stdout()).toBe(`${cli.configFile}\n`);
  });
});
