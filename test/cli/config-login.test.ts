import { existsSync, readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { Cli, expectJsonOnly, expectOk, fields, rows } from './helpers.js';

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
  it('keeps the saved profile\'s URL, so `login --key K` works in a script', async () => {
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
    const table = rows(expectOk(list));
    expect(table).toContainEqual(['*', 'default', s.url, expect.stringMatching(/^WAC_…\*+$/), '', '']);
    expect(table).toContainEqual(['', 'dead', DEAD, expect.stringMatching(/^WAC_…\*+$/), expect.stringMatching(/\*{6}$/), '']);
    const lj = expectJsonOnly(listJson);
    expect(lj).toMatchObject({ ok: true, current: 'default', path: cli.configFile });
    expect(lj.profiles.dead.url).toBe(DEAD);
    expect(expectOk(getKey).trim()).toMatch(/^WAC_…\*+$/);
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
    expect(fields(expectOk(profileOnly)).cliente).toMatch(new RegExp(`^${a.clienteId} `));
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

  it('the profile\'s admin_token serves operator commands', async () => {
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
