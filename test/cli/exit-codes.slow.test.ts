import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, type RunResult } from './helpers.js';

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

describe('the binary passes on the code main returns', () => {
  // The rest of this file runs main in-process; this is the shim's own part: the process's exit status.
  it('bin/pasarela exits 0, 2, 3, 4 and 8 with the same stderr as main', async () => {
    const [ok, usage, auth, notFound, unreachable] = await Promise.all([
      cli.runBinary(['--version']),
      cli.runBinary(['celuar', 'list']),
      cli.runBinary(['info', '--key', `WAC_${a.clienteId}_wrongwrongwrongwrongwrong`]),
      cli.runBinary(['admin', 'client', 'show', '99999', '--data-dir', s.dataDir]),
      cli.runBinary(['info', '--url', 'http://127.0.0.1:1', '--key', a.clientKey]),
    ]);
    expect(code(ok)).toEqual({ exitCode: 0, stderr: '' });
    expect(code(usage)).toEqual({ exitCode: 2, stderr: expect.stringContaining("unknown command 'celuar'") });
    expect(code(auth)).toEqual({ exitCode: 3, stderr: 'error: invalid credential (the key from --key)\n' });
    expect(code(notFound)).toEqual({ exitCode: 4, stderr: expect.stringContaining('client 99999 not found') });
    expect(code(unreachable)).toEqual({ exitCode: 8, stderr: expect.stringContaining('cannot reach the server at http://127.0.0.1:1') });
    for (const [inProcess, binary] of await Promise.all(
      [['celuar', 'list'], ['--version']].map(async (args) => [await cli.run(args), await cli.runBinary(args)] as const),
    )) {
      expect(binary).toEqual(inProcess);
    }
  });
});
