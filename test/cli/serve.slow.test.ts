import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/server.js';
import { Cli, waitForText, freePort } from './helpers.js';

/** `pasarela serve` as a real child process: banner, health, operator token file, signals, env, port in use. */
const cli = new Cli();
afterAll(() => cli.cleanup());

const listening = /listening on (http:\/\/\S+)/;

describe('serve', () => {
  it('prints a banner with URL, data directory and a SIMULATOR warning; serves; never shows the token; SIGTERM stops it with exit 0', async () => {
    const dataDir = join(cli.home, 'data-flag');
    const proc = cli.spawn(['serve', '--port', '0', '--data-dir', dataDir]);
    const banner = await waitForText(proc.stderr, /SIMULATOR[\s\S]*real gateway\./);
    const url = listening.exec(banner)?.[1];
    expect(url, banner).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(banner).toContain(`data directory   ${dataDir}`);
    expect(banner).toMatch(/!!! SIMULATOR/);
    expect(banner).toContain('Nothing is delivered to real phones');

    const health = await api(url!, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ ok: true, gateway: 'sim', simulado: true });

    const tokenFile = join(dataDir, 'admin-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(token.length).toBeGreaterThanOrEqual(16);
    // Requests that carry the token, in a header and in a query string, are logged without it.
    expect((await api(url!, 'GET', '/admin/clientes', { key: token })).status).toBe(200);
    expect((await api(url!, 'GET', `/api/info.php?key=${encodeURIComponent(token)}`)).status).toBe(401);

    proc.kill('SIGTERM');
    const r = await proc;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const stdout = String(r.stdout);
    const stderr = String(r.stderr);
    expect(stderr).toContain('SIGTERM');
    expect(stderr).toMatch(/stopped\n$/);
    expect(stdout).toContain('/admin/clientes'); // the request log is there ...
    expect(stdout).not.toContain(token); // ... without the token
    expect(stderr).not.toContain(token);
  });

  it('honours PASARELA_PORT and PASARELA_DATA_DIR (and stops on SIGINT)', async () => {
    const port = await freePort();
    const dataDir = join(cli.home, 'data-env');
    const proc = cli.spawn(['serve'], { env: { PASARELA_PORT: String(port), PASARELA_DATA_DIR: dataDir } });
    const banner = await waitForText(proc.stderr, /API reference/);
    expect(listening.exec(banner)?.[1]).toBe(`http://127.0.0.1:${port}`);
    expect(banner).toContain(`data directory   ${dataDir}`);
    expect(existsSync(join(dataDir, 'admin-token'))).toBe(true);
    expect((await api(`http://127.0.0.1:${port}`, 'GET', '/health')).status).toBe(200);
    proc.kill('SIGINT');
    const r = await proc;
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr)).toContain('stopped');
  });

  it('a second serve on a data directory in use exits 1 naming the directory and the holder; the first keeps serving', async () => {
    const dataDir = join(cli.home, 'data-shared');
    const first = cli.spawn(['serve', '--port', '0', '--data-dir', dataDir]);
    const url = listening.exec(await waitForText(first.stderr, /API reference/))?.[1];
    const second = await cli.run(['serve', '--port', '0', '--data-dir', dataDir]);
    expect(second.exitCode).toBe(1);
    expect(second.stderr).toContain(`data directory ${dataDir} is in use by another pasarela serve (pid ${first.pid} on `);
    expect(second.stderr).not.toMatch(/\n\s+at /);
    expect((await api(url!, 'GET', '/health')).status).toBe(200);
    // Once the first stops, the directory is free again.
    first.kill('SIGTERM');
    expect((await first).exitCode).toBe(0);
    const again = cli.spawn(['serve', '--port', '0', '--data-dir', dataDir]);
    await waitForText(again.stderr, /API reference/);
    again.kill('SIGTERM');
    expect((await again).exitCode).toBe(0);
  });

  it('a port already in use exits 1 with a clear message', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const { port } = busy.address() as AddressInfo;
    try {
      const r = await cli.run(['serve', '--port', String(port), '--data-dir', join(cli.home, 'data-busy')]);
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });

  // Under /proc mkdir answers ENOENT though the parent exists: Node's recursive mkdir retried it forever.
  it.skipIf(!existsSync('/proc/self'))('a data directory that cannot be made (under /proc) exits 1 at once with one error line', async () => {
    for (const dir of ['/proc/nope', '/proc/nope/pasarela']) {
      const r = await cli.run(['serve', '--port', '0', '--data-dir', dir], { timeoutMs: 15_000 });
      expect(r.exitCode, r.stderr).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^error: cannot start: cannot create the data directory ${dir}: ENOENT[^\n]*\n$`));
      expect(r.stdout).toBe('');
    }
  });

  it('a data directory that is a file, or under one, exits 1 with one error line', async () => {
    const file = join(cli.home, 'a-file');
    writeFileSync(file, 'x');
    const asDir = await cli.run(['serve', '--port', '0', '--data-dir', file]);
    expect(asDir.exitCode).toBe(1);
    expect(asDir.stderr).toBe(`error: cannot start: the data directory ${file} is not a directory\n`);
    const under = await cli.run(['serve', '--port', '0', '--data-dir', join(file, 'data')]);
    expect(under.exitCode).toBe(1);
    expect(under.stderr).toMatch(/^error: cannot start: cannot create the data directory .*a-file\/data: ENOTDIR[^\n]*\n$/);
  });

  it('PASARELA_GATEWAY_FETCHES_MEDIA takes yes or no, never anything else as a silent yes', async () => {
    const r = await cli.run(['serve', '--port', '0', '--data-dir', join(cli.home, 'data-fetch')], { env: { PASARELA_GATEWAY_FETCHES_MEDIA: 'maybe' } });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('PASARELA_GATEWAY_FETCHES_MEDIA: "maybe" is not 1/true/yes or 0/false/no');
    const help = await cli.run(['serve', '--help']);
    expect(help.stdout).toContain('--gateway-fetches-media');
  });

  it('--counters / PASARELA_COUNTERS take memory or a redis:// URL (its password never echoed); the prefix has no wildcards', async () => {
    const dir = join(cli.home, 'data-counters');
    const bad = await cli.run(['serve', '--port', '0', '--data-dir', dir], { env: { PASARELA_COUNTERS: 'http://user:hunter2@example.com' } });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('is not "memory" nor a redis:// URL');
    expect(bad.stderr).not.toContain('hunter2');
    const prefix = await cli.run(['serve', '--port', '0', '--data-dir', dir, '--counters', 'redis://127.0.0.1:6379', '--counters-prefix', 'a b*']);
    expect(prefix.exitCode).toBe(2);
    expect(prefix.stderr).toContain('--counters-prefix');
    const help = await cli.run(['serve', '--help']);
    expect(help.stdout).toContain('--counters <where>');
    expect(help.stdout).toContain('PASARELA_COUNTERS');
  });

  it('--store / PASARELA_STORE take sqlite or a postgres:// URL (its password never echoed)', async () => {
    const dir = join(cli.home, 'data-store');
    const bad = await cli.run(['serve', '--port', '0', '--data-dir', dir], { env: { PASARELA_STORE: 'mysql://user:hunter2@db.example/x' } });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--store: "mysql://***@db.example/x" is not "sqlite" nor a postgres:// URL');
    expect(bad.stderr).not.toContain('hunter2');
    const help = await cli.run(['serve', '--help']);
    expect(help.stdout).toContain('--store <where>');
    expect(help.stdout).toContain('PASARELA_STORE');
  });
});
