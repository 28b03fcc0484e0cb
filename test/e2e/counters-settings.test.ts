import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { pgSchema } from '../contract/adapters.js';
import { api, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { closedPort } from '../helpers/tcp-proxy.js';
import { Cli } from '../cli/helpers.js';

/**
 * The counters (`--counters`, `--counters-prefix`) are a setting of the
 * cluster: a node of a PostgreSQL store whose duplicate protection and auth
 * throttle would count elsewhere than the other nodes' is refused at start,
 * naming the setting, and `serve` exits non-zero. The same Redis under
 * another address is the same counters.
 */

const servers: TestServer[] = [];
const drops: Array<() => Promise<void>> = [];
const cli = new Cli();
const prefix = uniqueNamespace('redis');
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  for (const d of drops) await d();
  await dropRedisPrefix(prefix);
  cli.cleanup();
});

async function storeUrl(): Promise<string> {
  const s = await pgSchema();
  drops.push(s.drop);
  const u = new URL(schemaUrl(s.schema));
  return u.toString();
}

/** The test Redis under another name (localhost for 127.0.0.1, or the reverse), database `db`. */
function otherName(db: number): string {
  const u = new URL(REDIS_URL);
  u.hostname = u.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
  u.pathname = `/${db}`;
  return u.toString();
}

describeWith(postgres, 'counters settings across the nodes of a store', () => {
  it.skipIf(!redis.available)('a node counting elsewhere is refused, naming the setting; the same Redis under another name joins', async () => {
    const store = await storeUrl();
    const first = await startTestServer({ store, counters: REDIS_URL, countersPrefix: prefix });
    servers.push(first);
    const same = await startTestServer({ store, dataDir: tempDir(), counters: otherName(0), countersPrefix: prefix });
    servers.push(same);
    expect((await api(first.url, 'GET', '/health')).body.nodos_vivos).toBe(2);

    await expect(startTestServer({ store, dataDir: tempDir(), counters: REDIS_URL, countersPrefix: `${prefix}other:` })).rejects.toThrow(
      /disagrees with the other nodes of this store on the counters key prefix \(--counters-prefix\)/,
    );
    await expect(startTestServer({ store, dataDir: tempDir(), counters: 'memory' })).rejects.toThrow(
      /on the counters \(--counters: memory, or which Redis database\): this node "memory", the other nodes "redis database 0"/,
    );
    await expect(startTestServer({ store, dataDir: tempDir(), counters: otherName(3), countersPrefix: prefix })).rejects.toThrow(
      /this node "redis database 3", the other nodes "redis database 0"/,
    );
    // Nothing of the refused nodes is left counted.
    expect((await api(first.url, 'GET', '/health')).body.nodos_vivos).toBe(2);
  });

  it('serve with an unreachable Redis and the default prefix, joining nodes on another prefix: exit 1, naming --counters-prefix', async () => {
    const store = await storeUrl();
    const first = await startTestServer({ store, counters: REDIS_URL, countersPrefix: 'nw:' });
    servers.push(first);
    const r = await cli.run([
      'serve',
      '--port',
      '0',
      '--data-dir',
      join(cli.home, 'data'),
      '--store',
      store,
      '--counters',
      `redis://127.0.0.1:${await closedPort()}`,
    ]);
    expect(r.exitCode, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /^error: cannot start: this node disagrees with the other nodes of this store on the counters key prefix \(--counters-prefix\): this node "pasarela:", the other nodes "nw:"/,
    );
  });
});
