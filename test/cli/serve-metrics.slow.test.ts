import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Cli, waitForText } from './helpers.js';

/** `pasarela serve --metrics-listen` as a real child process: the value checked, the banner, the open listener, an address in use. */
const cli = new Cli();
afterAll(() => cli.cleanup());

describe('serve --metrics-listen', () => {
  it('refuses a value that is not HOST:PORT (exit 2, naming the flag); --help lists it with its variable', async () => {
    const dir = join(cli.home, 'data-bad');
    for (const v of ['9464', 'host:99999', 'a b:1']) {
      const r = await cli.run(['serve', '--port', '0', '--data-dir', dir, '--metrics-listen', v]);
      expect(r.exitCode, `${v}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain('--metrics-listen');
    }
    const help = await cli.run(['serve', '--help']);
    expect(help.stdout).toContain('--metrics-listen <host:port>');
    expect(help.stdout).toContain('PASARELA_METRICS_LISTEN');
  });

  it('PASARELA_METRICS_LISTEN opens a listener the banner names, serving /metrics without credentials; the API port still wants the token', async () => {
    const proc = cli.spawn(['serve', '--port', '0', '--data-dir', join(cli.home, 'data-open')], { env: { PASARELA_METRICS_LISTEN: '127.0.0.1:0' } });
    const banner = await waitForText(proc.stderr, /API reference/);
    const m = /metrics +(http:\/\/127\.0\.0\.1:\d+)\/metrics \(operator token\), (http:\/\/127\.0\.0\.1:\d+\/metrics) \(no credentials\)/.exec(banner);
    expect(m, banner).not.toBeNull();
    const open = await fetch(m![2]!);
    expect(open.status).toBe(200);
    expect(await open.text()).toMatch(/^pasarela_info\{version="[^"]+",store="sqlite",gateway="sim"\} 1$/m);
    expect((await fetch(`${m![1]}/metrics`)).status).toBe(401);
    proc.kill('SIGTERM');
    expect((await proc).exitCode).toBe(0);
  });

  it('an address in use stops the start (exit 1), naming --metrics-listen', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const { port } = busy.address() as AddressInfo;
      const r = await cli.run(['serve', '--port', '0', '--data-dir', join(cli.home, 'data-busy'), '--metrics-listen', `127.0.0.1:${port}`]);
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toContain(`--metrics-listen 127.0.0.1:${port}`);
      expect(r.stderr).toContain('EADDRINUSE');
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });
});
