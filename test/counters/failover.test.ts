import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { Core } from '../../src/core/context.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';
import { checkDuplicate } from '../../src/core/sending/dedupe.js';
import { AppError } from '../../src/core/api/errors.js';
import { FailoverCounters } from '../../src/counters/failover.js';
import { RedisCounters } from '../../src/counters/redis.js';
import { describeWith, dropRedisPrefix, redis, REDIS_URL, uniqueNamespace } from '../helpers/services.js';
import { closedPort, startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/poll.js';

/**
 * Redis unreachable (docs/decisions.md D-42): the counters fail
 * open to this node's memory with one warning per outage, never an error to
 * the caller, and come back to Redis when it answers again (logged too). The
 * outage is a proxy in front of the real Redis, cut or stalled mid-test.
 */

const LONG = 60_000;

interface Logged {
  level: 'warn' | 'info';
  obj: object;
  msg: string;
}

describeWith(redis, 'Redis counters when Redis is unreachable', () => {
  const prefix = uniqueNamespace('redis');
  const clock = new ManualClock(1_000_000);
  const target = new URL(REDIS_URL);
  /** Straight to Redis, to see what it holds. */
  const direct = new RedisCounters({ url: REDIS_URL, prefix, clock });
  let proxy: TcpProxy;
  let open: FailoverCounters[] = [];

  function failover(url: string, logs: Logged[]): FailoverCounters {
    const u = new URL(REDIS_URL);
    const to = new URL(url);
    u.hostname = to.hostname;
    u.port = to.port;
    const f = new FailoverCounters(
      new RedisCounters({ url: u.toString(), prefix, clock, commandTimeoutMs: 1000, connectTimeoutMs: 1000 }),
      new MemoryCounters(clock),
      {
        clock,
        probeMs: 20,
        log: { warn: (obj, msg) => logs.push({ level: 'warn', obj, msg }), info: (obj, msg) => logs.push({ level: 'info', obj, msg }) },
      },
    );
    open.push(f);
    return f;
  }

  beforeAll(async () => {
    await direct.connect();
    proxy = await startTcpProxy(target.hostname, Number(target.port) || 6379);
  });
  afterEach(async () => {
    await Promise.all(open.map((f) => f.close()));
    open = [];
    proxy.stall(false);
    await proxy.restore();
  });
  afterAll(async () => {
    await proxy?.close();
    await direct.close();
    await dropRedisPrefix(prefix);
  });

  it('a closed port at start: the counters start on memory, warn once, and keep their rules', async () => {
    const logs: Logged[] = [];
    const f = failover(`redis://127.0.0.1:${await closedPort()}`, logs);
    await f.start();
    expect(f.backend()).toBe('redis (unreachable: memory)');
    expect(f.unreachable).toMatch(/ECONNREFUSED/);
    // The store's kv, where a block is also written for when the counters answer degraded (core/sending/dedupe.ts).
    const kv = new Map<string, unknown>();
    const store = {
      kvGet: async (ns: string, k: string) => kv.get(`${ns}/${k}`) ?? null,
      kvSet: async (ns: string, k: string, v: unknown) => kv.set(`${ns}/${k}`, v),
    };
    const core = { counters: f, clock, store } as unknown as Core;
    for (const n of [1, 2, 3]) expect((await checkDuplicate(core, 7, 'same')).count).toBe(n);
    const refused = await checkDuplicate(core, 7, 'same').catch((e: unknown) => e);
    expect((refused as AppError).row.texto).toBe('DUPLICADO');
    expect(kv.get('dupe-block/7')).toBeGreaterThan(clock.now());
    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(logs[0]!.msg).toMatch(/unreachable.*memory/);
  });

  it('cut mid-run: calls go on in memory with one warning; restored: back to Redis, which kept its counts, with one notice', async () => {
    const logs: Logged[] = [];
    const f = failover(`redis://127.0.0.1:${proxy.port}`, logs);
    await f.start();
    expect(f.backend()).toBe('redis');
    expect((await f.incr('cut', LONG)).count).toBe(1);
    expect((await f.incr('cut', LONG)).count).toBe(2);
    expect((await direct.get('cut'))?.count).toBe(2);

    await proxy.cut();
    // Never an error to the caller: the first call after the cut already answers, from memory.
    expect((await f.incr('cut', LONG)).count).toBe(1);
    expect(f.backend()).toBe('redis (unreachable: memory)');
    for (let i = 0; i < 20; i++) await f.incr('cut', LONG);
    await f.decr('cut');
    expect((await f.get('cut'))?.count).toBe(20);
    expect(logs.map((l) => l.level)).toEqual(['warn']);
    expect((await direct.get('cut'))?.count).toBe(2);

    await proxy.restore();
    await until(() => f.backend() === 'redis', { what: 'the counters back on Redis' });
    expect(logs.map((l) => l.level)).toEqual(['warn', 'info']);
    expect(logs[1]!.msg).toMatch(/reachable again/);
    // Redis' count from before the outage goes on; the per-node count of the outage is left behind.
    expect((await f.incr('cut', LONG)).count).toBe(3);
    expect((await direct.get('cut'))?.count).toBe(3);
  });

  it('a hung Redis (connected, silent): a call waits one command timeout at most once, then memory answers at once', async () => {
    const logs: Logged[] = [];
    const f = failover(`redis://127.0.0.1:${proxy.port}`, logs);
    await f.start();
    expect((await f.incr('hung', LONG)).count).toBe(1);
    proxy.stall(true);
    expect((await f.incr('hung', LONG)).count).toBe(1); // after the timeout, from memory
    expect(f.unreachable).toMatch(/timed out/i);
    expect((await f.incr('hung', LONG)).count).toBe(2); // memory, without asking Redis
    expect(logs.map((l) => l.level)).toEqual(['warn']);
    proxy.stall(false);
    await until(() => f.backend() === 'redis', { what: 'the counters back on Redis' });
    // The increment that timed out may still reach Redis once the bytes flow (TCP delivers what was sent):
    // an outage can over-count by the commands in flight, never under-count.
    const held = (await direct.get('hung'))!.count;
    expect([1, 2]).toContain(held);
    expect((await f.incr('hung', LONG)).count).toBe(held + 1);
  });

  it('unreachable at start, then Redis comes: back to Redis', async () => {
    const logs: Logged[] = [];
    await proxy.cut();
    const f = failover(`redis://127.0.0.1:${proxy.port}`, logs);
    await f.start();
    expect(f.backend()).toBe('redis (unreachable: memory)');
    await proxy.restore();
    await until(() => f.backend() === 'redis', { what: 'the counters on Redis' });
    expect((await f.incr('late', LONG)).count).toBe(1);
    expect((await direct.get('late'))?.count).toBe(1);
    expect(logs.map((l) => l.level)).toEqual(['warn', 'info']);
  });

  it('a second outage is warned about again', async () => {
    const logs: Logged[] = [];
    const f = failover(`redis://127.0.0.1:${proxy.port}`, logs);
    await f.start();
    for (let round = 0; round < 2; round++) {
      await proxy.cut();
      await f.get('twice');
      await f.get('twice');
      await proxy.restore();
      await until(() => f.backend() === 'redis', { what: 'the counters back on Redis' });
    }
    expect(logs.map((l) => l.level)).toEqual(['warn', 'info', 'warn', 'info']);
  });
});
