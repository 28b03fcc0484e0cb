import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, tempDir } from '../helpers/server.js';
import { killAllServeChildren, startServeChild, stop, type ServeChild } from '../helpers/serve-child.js';
import { Cli } from '../cli/helpers.js';

/**
 * `serve --trust-proxy` behind a proxy that appends to X-Forwarded-For (nginx's
 * proxy_add_x_forwarded_for): the client writes the left end, so the client
 * is the right-most address no trusted proxy added. A client varying the
 * left end must not get a fresh auth-throttle budget per forged address.
 */

const cli = new Cli();
const started: ServeChild[] = [];
afterAll(async () => {
  for (const s of started) await stop(s).catch(() => undefined);
  killAllServeChildren();
  cli.cleanup();
});

async function serve(...flags: string[]): Promise<ServeChild> {
  const s = await startServeChild(join(tempDir(), 'data'), flags);
  started.push(s);
  return s;
}

/** One wrong client credential, presented `n` times, each with the X-Forwarded-For `xff(i)` gives. */
async function wrongKey(s: ServeChild, n: number, xff: (i: number) => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await api(s.url, 'GET', '/api/info.php', { key: `WAC_1_${'q'.repeat(43)}`, headers: { 'x-forwarded-for': xff(i) } });
    statuses.push(r.status);
  }
  return statuses;
}

const throttled = [...Array<number>(20).fill(401), ...Array<number>(20).fill(429)];

describe('serve --trust-proxy', () => {
  it('given alone (as scripts have it): one hop, so forged left-most entries do not dodge the auth throttle (20x401, then 429)', async () => {
    const s = await serve('--trust-proxy');
    expect(await wrongKey(s, 40, (i) => `10.9.${i}.1, 198.51.100.7`)).toEqual(throttled);
    // The proxy's own entry is still the client's address: another client behind it has its own budget.
    expect(await wrongKey(s, 20, (i) => `10.9.${i}.1, 198.51.100.8`)).toEqual(Array<number>(20).fill(401));
  });

  it('a hop count: the client is the entry that many hops from this server', async () => {
    const s = await serve('--trust-proxy', '2');
    // Two proxies: the outer one appended the client (198.51.100.7), the inner one the outer's address.
    expect(await wrongKey(s, 40, (i) => `10.9.${i}.1, 198.51.100.7, 10.0.0.${i + 1}`)).toEqual(throttled);
  });

  it('proxy addresses and ranges: every trusted proxy is skipped from the right, never an entry the client wrote', async () => {
    const s = await serve('--trust-proxy', '127.0.0.1,10.0.0.0/8');
    expect(await wrongKey(s, 40, (i) => `10.9.${i}.1, 198.51.100.7, 10.1.${i}.2`)).toEqual(throttled);
  });

  it('a value that is neither a hop count nor addresses is a usage error (exit 2) naming it', async () => {
    for (const bad of ['0', 'proxy.example.com', '10.0.0.0/33', '1.2.3.4,nope']) {
      const r = await cli.run(['serve', '--port', '0', '--data-dir', join(cli.home, 'data'), '--trust-proxy', bad]);
      expect(r.exitCode, `${bad}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain('--trust-proxy');
    }
  });
});
