import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, cliCommandLine, HAS_SCRIPT } from './helpers.js';
import { runTtyAnswering } from './tty.js';

/**
 * Saved profiles and the precedence of every setting: flag, then
 * environment, then the saved profile. The steps build on each other.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;
const DEAD = 'http://127.0.0.1:1';

const savedFile = () => JSON.parse(readFileSync(cli.configFile, 'utf8')) as { current: string; profiles: Record<string, Record<string, string>> };

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url);
  a = await seedClient(s);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('login: where the key comes from', () => {
  it.skipIf(!HAS_SCRIPT)('on a TTY, PASARELA_KEY is saved only after a yes', async () => {
    const env = { PASARELA_KEY: a.clientKey, PASARELA_URL: s.url };
    const no = await runTtyAnswering(
      cli,
      cliCommandLine(['login', '--profile', 'asked']),
      [
        [/Save that key in profile "asked"\?/, 'n'],
        // Refused: the key is asked for instead; Ctrl-C leaves.
        [/API key/, '\u0003'],
      ],
      env,
    );
    expect(no.exitCode).not.toBe(0);
    expect(savedFile().profiles).not.toHaveProperty('asked');
    const yes = await runTtyAnswering(cli, cliCommandLine(['login', '--profile', 'asked']), [[/Save that key in profile "asked"\?/, 'y']], env);
    expect(yes.exitCode, yes.output).toBe(0);
    expect(yes.output).toContain('from PASARELA_KEY');
    expect(savedFile().profiles.asked).toEqual({ url: s.url, key: a.clientKey });
  });
});

describe('login: the server before the key', () => {
  it.skipIf(!HAS_SCRIPT)('on a TTY, a URL with no server behind it is told before the key is asked for (exit 8)', async () => {
    const r = await runTtyAnswering(cli, cliCommandLine(['login', '--url', DEAD, '--profile', 'nowhere']), [[/API key/, '\u0003']], {
      PASARELA_KEY: undefined,
      PASARELA_URL: undefined,
    });
    expect(r.exitCode, r.output).toBe(8);
    expect(r.output).not.toMatch(/API key/);
    expect(r.output).toContain('127.0.0.1:1');
    expect(savedFile().profiles).not.toHaveProperty('nowhere');
  });
});

describe('config remove', () => {
  it.skipIf(!HAS_SCRIPT)('on a TTY asks first, naming what the profile holds; no keeps it', async () => {
    expect((await cli.run(['config', 'set', 'url', DEAD, '--profile', 'asked2'])).exitCode).toBe(0);
    const no = await runTtyAnswering(cli, cliCommandLine(['config', 'remove', 'asked2']), [
      [/Delete profile "asked2" \(URL http:\/\/127\.0\.0\.1:1\)\? This cannot be undone/, 'n'],
    ]);
    expect(no.exitCode).toBe(0);
    expect(no.output).toContain('nothing deleted');
    expect(savedFile().profiles).toHaveProperty('asked2');
    const yes = await runTtyAnswering(cli, cliCommandLine(['config', 'remove', 'asked2']), [[/This cannot be undone/, 'y']]);
    expect(yes.exitCode).toBe(0);
    expect(savedFile().profiles).not.toHaveProperty('asked2');
  });
});
