import { afterAll, afterEach, expect, it } from 'vitest';
import { systemClock } from '../../src/core/time/clock.js';
import { DUPE_MAX } from '../../src/core/sending/dedupe.js';
import { pgSchema } from '../contract/adapters.js';
import { expectError } from '../helpers/expect.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { describeWith, dropRedisPrefix, postgres, redis, REDIS_URL, uniqueNamespace, schemaUrl } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { linkedLine, numeroNuevo, send, TEXT, uniqueText, type Line } from './send-helpers.js';

/**
 * Duplicate protection when one Redis command is slow (N11): a node whose
 * counters time out answers from its own memory, which does not hold a
 * block another node (or it, before) put in Redis. A block already made
 * must still refuse the line's sends: it is read from the store then.
 *
 * Redis is reached through a TCP proxy that the test stalls: Redis itself
 * is healthy, one node just does not hear it in time (a loaded machine).
 * The command timeout is a second, so that this machine's own load does not
 * fail a node over before the stall.
 */

const redisPort = Number(new URL(REDIS_URL).port || 6379);
const redisHost = new URL(REDIS_URL).hostname || '127.0.0.1';
const viaProxy = (p: TcpProxy) => {
  const u = new URL(REDIS_URL);
  u.hostname = '127.0.0.1';
  u.port = String(p.port);
  return u.toString();
};

/** Blocks `line` through `s`: DUPE_MAX identical sends, then the one that blocks. */
async function block(s: TestServer, line: Line): Promise<void> {
  const body = { destinatario: numeroNuevo(), mensaje: uniqueText('repetido') };
  for (let i = 0; i < DUPE_MAX; i++) expect((await send(s, line, TEXT, body)).status).toBe(200);
  expectError(await send(s, line, TEXT, body), 429, 306);
}

describeWith(redis, 'a blocked line while Redis is slow for one node', () => {
  const prefix = uniqueNamespace('redis');
  const servers: TestServer[] = [];
  const proxies: TcpProxy[] = [];
  let schema: { schema: string; drop: () => Promise<void> } | undefined;
  afterEach(() => {
    for (const p of proxies) p.stall(false);
  });
  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    for (const p of proxies) await p.close();
    await schema?.drop();
    await dropRedisPrefix(prefix);
  });

  it('one node: the block it made holds when its next Redis command times out', async () => {
    const proxy = await startTcpProxy(redisHost, redisPort);
    proxies.push(proxy);
    const s = await startTestServer({ counters: viaProxy(proxy), countersPrefix: prefix, countersTimeoutMs: 1000, queue: { gapMinMs: 0, gapMaxMs: 0 } });
    servers.push(s);
    const line = await linkedLine(s);
    await block(s, line);
    proxy.stall(true);
    const r = await send(s, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('nuevo') });
    expectError(r, 429, 306);
    expect(r.body.retry_after).toBeGreaterThan(0);
    expect(s.core.counters.backend()).toBe('redis (unreachable: memory)');
  });

  describeWith(postgres, 'two nodes on PostgreSQL', () => {
    it('a block made on one node holds on another whose Redis command times out', async () => {
      schema = await pgSchema();
      const u = new URL(schemaUrl(schema.schema));
      const proxy = await startTcpProxy(redisHost, redisPort);
      proxies.push(proxy);
      const common = { store: u.toString(), countersPrefix: `${prefix}pg:`, clock: systemClock, queue: { gapMinMs: 0, gapMaxMs: 0 } };
      const a = await startTestServer({ ...common, counters: REDIS_URL, countersTimeoutMs: 10_000 });
      servers.push(a);
      const b = await startTestServer({ ...common, counters: viaProxy(proxy), countersTimeoutMs: 1000, dataDir: tempDir() });
      servers.push(b);
      const line = await linkedLine(a);
      await block(a, line);
      // Node b never saw the block; its next Redis command is not answered in time.
      proxy.stall(true);
      expectError(await send(b, line, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('nuevo') }), 429, 306);
      expect(b.core.counters.backend()).toBe('redis (unreachable: memory)');
      // Another line, never blocked, still sends on b meanwhile: failing closed is for a known block only.
      const other = await linkedLine(a);
      expect((await send(b, other, TEXT, { destinatario: numeroNuevo(), mensaje: uniqueText('otra') })).status).toBe(200);
    });
  });
});
