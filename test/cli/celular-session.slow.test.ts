import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine } from '../server/send-helpers.js';
import { Cli, cliCommandLine, HAS_SCRIPT, needBuild } from './helpers.js';
import { runTtyAnswering } from './tty.js';

/** `celular logout` on a terminal asks first, naming the line and what a logout costs (a new scan). */
let s: TestServer;
let cli: Cli;

beforeAll(async () => {
  needBuild();
  s = await startTestServer();
  cli = new Cli(s.url);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe.skipIf(!HAS_SCRIPT)('celular logout on a TTY', () => {
  it('a wrong id is exit 4 before any question; no logs nothing out; yes does', async () => {
    const L = await linkedLine(s);
    const env = { PASARELA_KEY: L.clientKey };
    const missing = await runTtyAnswering(cli, cliCommandLine(['celular', 'logout', '99999']), [], env);
    expect(missing.exitCode).toBe(4);
    expect(missing.output).not.toContain('Log out celular');
    // The start of the question: a terminal wraps the rest (it goes on to say that linking again needs a new scan).
    const question = new RegExp(`Log out celular ${L.celularId} \\(${L.numero}\\)\\? Its session ends`);
    const no = await runTtyAnswering(cli, cliCommandLine(['celular', 'logout', String(L.celularId)]), [[question, 'n']], env);
    expect(no.exitCode, JSON.stringify(no.output)).toBe(0);
    expect(no.output).toContain('nothing logged out');
    expect(no.output.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\s+/g, ' ')).toContain('needs a new QR scan');
    expect((await s.core.store.getCelular(L.celularId))!.last_status).toBe('connected');
    const yes = await runTtyAnswering(cli, cliCommandLine(['celular', 'logout', String(L.celularId)]), [[question, 'y']], env);
    expect(yes.exitCode, JSON.stringify(yes.output)).toBe(0);
    expect(yes.output).toContain(`Logged out celular ${L.celularId}`);
    expect((await s.core.store.getCelular(L.celularId))!.last_status).toBe('logged_out');
  });
});
