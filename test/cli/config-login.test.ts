import { existsSync, readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, expectJsonOnly, expectCleanExit, fields, rows } from './helpers.js';

/**
 * Saved profiles and the precedence of every setting: flag, then
 * environment, then the saved profile. The steps build on each other.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;
const DEAD = 'http://127.0.0.1:1';
/** No PASARELA_URL: the profile decides unless a test says otherwise. */
const NO_ENV = { PASARELA_URL: undefined };

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

describe('login', () => {
  it('a wrong key exits 3 and saves nothing', async () => {
    const wrong = `WAC_${a.clienteId}_thisIsNotTheKeyxxxxxxxxxxxxxxxxxxxxxxxxxx`;
    const r = await cli.run(['login', '--url', s.url, '--key', wrong], { env: NO_ENV });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('nothing saved');
    expect(r.stdout).toBe('');
    if (existsSync(cli.configFile)) {
      const text = readFileSync(cli.configFile, 'utf8');
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(s.url);
    }
  });

  it('a good key is saved in the default profile, in a 0600 file', async () => {
    const b = expectJsonOnly(await cli.run(['login', '--url', s.url, '--key', a.clientKey, '--json'], { env: NO_ENV }));
    expect(b).toMatchObject({ ok: true, profile: 'default', url: s.url, cliente: { id: a.clienteId }, config: cli.configFile });
    expect(statSync(cli.configFile).mode & 0o777).toBe(0o600);
    expect(savedFile()).toMatchObject({ current: 'default', profiles: { default: { url: s.url, key: a.clientKey } } });
  });
});

describe('login without --url', () => {
  it("keeps the saved profile's URL, so `login --key K` works in a script", async () => {
    const p = ['--profile', 'urlonly'];
    expect((await cli.run(['config', 'set', 'url', s.url, ...p], { env: NO_ENV })).exitCode).toBe(0);
    const b = expectJsonOnly(await cli.run(['login', '--key', a.clientKey, ...p, '--json'], { env: NO_ENV }));
    expect(b).toMatchObject({ ok: true, profile: 'urlonly', url: s.url, cliente: { id: a.clienteId } });
  });

  it('without a key and without a TTY is a usage error naming --key', async () => {
    const r = await cli.run(['login', '--url', s.url], { env: NO_ENV });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--key');
  });
});

describe('config', () => {
  it('set stores settings of a named profile; list and get mask the secrets', async () => {
    const p = ['--profile', 'dead'];
    // One after the other: concurrent writers of one conf file may lose updates.
    const setUrl = await cli.run(['config', 'set', 'url', DEAD, ...p]);
    expect(setUrl.exitCode).toBe(0);
    expect(setUrl.stderr).toBe('url saved in profile "dead"\n');
    expect((await cli.run(['config', 'set', 'key', a.clientKey, ...p])).exitCode).toBe(0);
    const setToken = await cli.run(['config', 'set', 'admin_token', s.adminToken, ...p, '--json']);
    expect(expectJsonOnly(setToken)).toEqual({ ok: true, profile: 'dead', setting: 'admin_token' });
    expect(savedFile().profiles.dead).toEqual({ url: DEAD, key: a.clientKey, admin_token: s.adminToken });

    const [list, listJson, getKey] = await Promise.all([
      cli.run(['config', 'list']),
      cli.run(['config', 'list', '--json']),
      cli.run(['config', 'get', 'key', ...p]),
    ]);
    const table = rows(expectCleanExit(list));
    expect(table).toContainEqual(['*', 'default', s.url, expect.stringMatching(/^WAC_…\*+$/), '', '']);
    expect(table).toContainEqual(['', 'dead', DEAD, expect.stringMatching(/^WAC_…\*+$/), expect.stringMatching(/\*{6}$/), '']);
    const lj = expectJsonOnly(listJson);
    expect(lj).toMatchObject({ ok: true, current: 'default', path: cli.configFile });
    expect(lj.profiles.dead.url).toBe(DEAD);
    expect(expectCleanExit(getKey).trim()).toMatch(/^WAC_…\*+$/);
    for (const r of [list, listJson, getKey]) {
      expect(r.stdout).not.toContain(a.clientKey);
      expect(r.stdout).not.toContain(s.adminToken);
    }
  });

  it('rejects a URL that is not http(s) (usage, exit 2)', async () => {
    const r = await cli.run(['config', 'set', 'url', 'ftp://x']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('http://');
  });
});

describe('precedence: flag, then environment, then profile', () => {
  it('URL: the saved profile alone works; PASARELA_URL beats it; --url beats PASARELA_URL', async () => {
    const [profileOnly, envBeatsProfile, flagBeatsEnv] = await Promise.all([
      cli.run(['info'], { env: NO_ENV }),
      cli.run(['info'], { env: { PASARELA_URL: DEAD } }),
      cli.run(['info', '--url', s.url], { env: { PASARELA_URL: DEAD } }),
    ]);
    expect(fields(expectCleanExit(profileOnly)).cliente).toMatch(new RegExp(`^${a.clienteId} `));
    expect(envBeatsProfile.exitCode).toBe(8);
    expect(envBeatsProfile.stderr).toContain(DEAD);
    expect(flagBeatsEnv.exitCode).toBe(0);
  });

  it('key: PASARELA_KEY beats the profile; --key beats PASARELA_KEY', async () => {
    const bad = `WAC_${a.clienteId}_badbadbadbadbadbadbadbadbadbad`;
    const [envBeatsProfile, flagBeatsEnv] = await Promise.all([
      cli.run(['info'], { env: { PASARELA_KEY: bad } }),
      cli.run(['info', '--key', a.clientKey], { env: { PASARELA_KEY: bad } }),
    ]);
    expect(envBeatsProfile.exitCode).toBe(3);
    expect(flagBeatsEnv.exitCode).toBe(0);
  });

  it('profile: --profile and PASARELA_PROFILE select one; --profile beats PASARELA_PROFILE', async () => {
    const [flag, env, flagBeatsEnv] = await Promise.all([
      cli.run(['info', '--profile', 'dead'], { env: NO_ENV }),
      cli.run(['info'], { env: { ...NO_ENV, PASARELA_PROFILE: 'dead' } }),
      cli.run(['info', '--profile', 'default'], { env: { ...NO_ENV, PASARELA_PROFILE: 'dead' } }),
    ]);
    expect(flag.exitCode).toBe(8);
    expect(flag.stderr).toContain(DEAD);
    expect(env.exitCode).toBe(8);
    expect(flagBeatsEnv.exitCode).toBe(0);
  });

  it("the profile's admin_token serves operator commands", async () => {
    // Profile "dead" has the token but a dead URL: the flag gives the URL, the profile the token.
    const r = await cli.run(['admin', 'client', 'show', String(a.clienteId), '--profile', 'dead', '--url', s.url, '--json'], { env: NO_ENV });
    expect(expectJsonOnly(r).cliente.id).toBe(a.clienteId);
  });
});

describe('config use / unset / path', () => {
  it('use switches the current profile; unset removes a setting; path names the file', async () => {
    const use = await cli.run(['config', 'use', 'dead', '--json']);
    expect(expectJsonOnly(use)).toEqual({ ok: true, current: 'dead' });
    const [getUrl, info] = await Promise.all([cli.run(['config', 'get', 'url', '--json']), cli.run(['info'], { env: NO_ENV })]);
    expect(expectJsonOnly(getUrl)).toEqual({ ok: true, profile: 'dead', setting: 'url', value: DEAD });
    expect(info.exitCode).toBe(8);

    const unset = await cli.run(['config', 'unset', 'admin_token']);
    expect(unset.exitCode).toBe(0);
    expect(unset.stderr).toBe('admin_token removed from profile "dead"\n');
    expect(savedFile()).toMatchObject({ current: 'dead', profiles: { dead: { url: DEAD, key: a.clientKey } } });
    expect(savedFile().profiles.dead).not.toHaveProperty('admin_token');

    const path = await cli.run(['config', 'path']);
    expect(path.stdout).toBe(`${cli.configFile}\n`);
    expect(statSync(cli.configFile).mode & 0o777).toBe(0o600);
  });
});

describe('login: where the key comes from', () => {
  it('PASARELA_KEY alone is not saved off a TTY: exit 2, naming --key-stdin, and nothing written', async () => {
    const r = await cli.run(['login', '--profile', 'fromenv'], { env: { ...NO_ENV, PASARELA_KEY: a.clientKey, PASARELA_URL: s.url } });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('PASARELA_KEY is set');
    expect(r.stderr).toContain('--key-stdin');
    expect(savedFile().profiles).not.toHaveProperty('fromenv');
  });

  it('--key-stdin reads the key from stdin (trimmed) and says what it saved, the key masked', async () => {
    const r = await cli.run(['login', '--key-stdin', '--url', s.url, '--profile', 'piped'], { input: `  ${a.clientKey}\n`, env: NO_ENV });
    // The confirmation is a message: on stderr, stdout left empty.
    expect(expectCleanExit(r)).toBe('');
    const out = r.stderr;
    expect(out).toContain(`client ${a.clienteId}`);
    expect(out).toContain('from standard input');
    expect(out).toContain('"piped"');
    expect(out).toMatch(/WAC_…\*+/);
    expect(out).not.toContain(a.clientKey);
    expect(savedFile().profiles.piped).toEqual({ url: s.url, key: a.clientKey });
    const j = expectJsonOnly(await cli.run(['login', '--key-stdin', '--profile', 'piped', '--json'], { input: a.clientKey, env: NO_ENV }));
    expect(j).toMatchObject({ ok: true, profile: 'piped', key_from: 'stdin', key: expect.stringMatching(/^WAC_…\*+$/) });
    expect(JSON.stringify(j)).not.toContain(a.clientKey);
  });

  it('--key-stdin with nothing on stdin, or with --key too, is a usage error', async () => {
    const [empty, both] = await Promise.all([
      cli.run(['login', '--key-stdin', '--url', s.url, '--profile', 'nothing'], { input: '\n', env: NO_ENV }),
      cli.run(['login', '--key-stdin', '--key', a.clientKey, '--url', s.url, '--profile', 'nothing'], { input: a.clientKey, env: NO_ENV }),
    ]);
    expect(empty.exitCode).toBe(2);
    expect(empty.stderr).toContain('nothing on standard input');
    expect(both.exitCode).toBe(2);
    expect(savedFile().profiles).not.toHaveProperty('nothing');
  });
});

describe('config set --key-stdin', () => {
  it('reads a secret setting from stdin; other settings, or no value at all, are usage errors', async () => {
    const p = ['--profile', 'stdinset'];
    const set = await cli.run(['config', 'set', 'key', '--key-stdin', ...p], { input: `${a.clientKey}\n` });
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.stderr).toBe('key saved in profile "stdinset"\n');
    expect(savedFile().profiles.stdinset).toEqual({ key: a.clientKey });
    const [url, none, both] = await Promise.all([
      cli.run(['config', 'set', 'url', '--key-stdin', ...p], { input: s.url }),
      cli.run(['config', 'set', 'key', ...p]),
      cli.run(['config', 'set', 'key', 'x', '--key-stdin', ...p], { input: 'y' }),
    ]);
    expect(url.exitCode).toBe(2);
    expect(url.stderr).toContain('--key-stdin is for key and admin_token');
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('--key-stdin');
    expect(both.exitCode).toBe(2);
    expect(savedFile().profiles.stdinset).toEqual({ key: a.clientKey });
  });
});

describe('logout', () => {
  it('removes the key of the profile and keeps its URL; a second logout removes nothing', async () => {
    const p = ['--profile', 'piped'];
    const r = await cli.run(['logout', ...p]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('Removed the key of profile "piped"');
    expect(savedFile().profiles.piped).toEqual({ url: s.url });
    expect(expectJsonOnly(await cli.run(['logout', ...p, '--json']))).toEqual({ ok: true, profile: 'piped', removed: false });
    // Without the key, commands of that profile have no credential.
    const info = await cli.run(['info', ...p], { env: NO_ENV });
    expect(info.exitCode).toBe(3);
    expect(info.stderr).toContain('no API key');
  });

  it('an unknown --profile is a usage error', async () => {
    const r = await cli.run(['logout', '--profile', 'nosuch']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('no saved profile "nosuch"');
  });
});

describe('config remove', () => {
  it('off a TTY needs --yes (exit 2, nothing deleted); with it the profile is gone; `rm` is the same', async () => {
    const no = await cli.run(['config', 'remove', 'stdinset']);
    expect(no.exitCode).toBe(2);
    expect(no.stderr).toContain('--yes');
    expect(savedFile().profiles).toHaveProperty('stdinset');
    const yes = await cli.run(['config', 'remove', 'stdinset', '--yes', '--json']);
    expect(expectJsonOnly(yes)).toMatchObject({ ok: true, removed: 'stdinset' });
    expect(savedFile().profiles).not.toHaveProperty('stdinset');
    const rm = await cli.run(['config', 'rm', 'urlonly', '-y']);
    expect(rm.exitCode, rm.stderr).toBe(0);
    expect(savedFile().profiles).not.toHaveProperty('urlonly');
    const missing = await cli.run(['config', 'rm', 'urlonly', '-y']);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain('no saved profile "urlonly"');
  });

  it('removing the current profile makes "default" current again', async () => {
    expect((await cli.run(['config', 'set', 'url', DEAD, '--profile', 'gone'])).exitCode).toBe(0);
    expect((await cli.run(['config', 'use', 'gone'])).exitCode).toBe(0);
    const r = await cli.run(['config', 'remove', 'gone', '--yes']);
    expect(r.stderr).toContain('The current profile is now "default"');
    expect(savedFile().current).toBe('default');
  });
});
