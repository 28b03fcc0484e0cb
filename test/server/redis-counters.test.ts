import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { banner } from '../../src/server/serve.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { expectError } from '../helpers/expect.js';
import { describeWith, dropRedisPrefix, redis, REDIS_URL, uniqueNamespace } from '../helpers/services.js';
import { closedPort, startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { linkedLine, send, TEXT, uniqueText, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * `serve --counters redis://...`: duplicate protection and the auth throttle
 * count across every server sharing one Redis; an unreachable Redis leaves a
 * server serving, on its own memory, and says so in /health and the log.
 */

const DEST = '525598765432';
const health = async (s: TestServer) => (await api(s.url, 'GET', '/health')).body;

describeWith(redis, 'Redis counters shared by two servers', () => {
  const prefix = uniqueNamespace('redis');
  let a: TestServer;
  let b: TestServer;
  let la: Line;
  let lb: Line;
  beforeAll(async () => {
    // Two data directories, one Redis: what two nodes share once the store is shared too.
    // A generous command timeout: on a loaded machine a slow answer must not fail a server over to its own memory.
    const start = () => startTestServer({ authMaxFailures: 3, counters: REDIS_URL, countersPrefix: prefix, countersTimeoutMs: 10_000 });
    [a, b] = await Promise.all([start(), start()]);
    [la, lb] = await Promise.all([linkedLine(a), linkedLine(b)]);
    // Fresh databases number alike, so both servers hold "line 1 of client 1": the same line as far as the counters go.
    expect([lb.celularId, lb.clienteId]).toEqual([la.celularId, la.clienteId]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await dropRedisPrefix(prefix);
  });

  it('/health and the banner say the counters are in Redis', async () => {
    expect((await health(a)).counters).toBe('redis');
    expect(banner(a, 'sim')).toMatch(new RegExp(`counters +redis://127\\.0\\.0\\.1:\\d+/? \\(keys ${prefix}\\*\\)\\n`));
  });

  it('3 identical sends spread over both servers: the 4th, on either, blocks the line on both', async () => {
    const mensaje = uniqueText('compartido');
    const counts: number[] = [];
    for (const [s, l] of [
      [a, la],
      [b, lb],
      [a, la],
    ] as const) {
      const r = await send(s, l, TEXT, { destinatario: DEST, mensaje });
      expect(r.status, r.text).toBe(200);
      counts.push(r.body.anti_dupe.count);
    }
    expect(counts).toEqual([1, 2, 3]);
    const fourth = await send(b, lb, TEXT, { destinatario: DEST, mensaje });
    expectError(fourth, 429, 306);
    expect(fourth.body.retry_after).toBe(300);
    // The block is the line's, on both servers, for any content.
    expectError(await send(a, la, TEXT, { destinatario: DEST, mensaje: uniqueText() }), 429, 306);
    expectError(await send(b, lb, TEXT, { destinatario: DEST, mensaje: uniqueText() }), 429, 306);
  });

  it('failed authentications count across both servers', async () => {
    const stale = `WAC_${la.clienteId}_${'q'.repeat(43)}`;
    const info = (s: TestServer) => api(s.url, 'GET', '/api/info.php', { key: stale });
    expectError(await info(a), 401, 200);
    expectError(await info(b), 401, 200);
    expectError(await info(a), 401, 200);
    const r = await info(b);
    expectError(r, 429, 202);
    expect(r.body.retry_after).toBeGreaterThan(55);
    expectError(await info(a), 429, 202);
    // The client's real key still works on both.
    expect((await api(a.url, 'GET', '/api/info.php', { key: la.clientKey })).status).toBe(200);
    expect((await api(b.url, 'GET', '/api/info.php', { key: lb.clientKey })).status).toBe(200);
  });
});

describeWith(redis, 'a server whose Redis is unreachable', () => {
  let s: TestServer | undefined;
  let proxy: TcpProxy | undefined;
  afterAll(async () => {
    await s?.stop();
    await proxy?.close();
  });

  it('at start: it serves on its own memory, says so in /health, the banner and the log; duplicates are still caught', async () => {
    const url = `redis://127.0.0.1:${await closedPort()}`;
    const t = await startTestServer({ counters: url });
    try {
      expect((await health(t)).counters).toBe('redis (unreachable: memory)');
      expect(banner(t, 'sim')).toMatch(/counters +redis:\/\/127\.0\.0\.1:\d+\/? \(keys pasarela:\*\) - UNREACHABLE/);
      expect(t.logs.some((l) => /Redis counters unreachable at start/.test(l) && /ECONNREFUSED/.test(l))).toBe(true);
      const l = await linkedLine(t);
      const mensaje = uniqueText('sin redis');
      for (const n of [1, 2, 3]) expect((await send(t, l, TEXT, { destinatario: DEST, mensaje })).body.anti_dupe.count).toBe(n);
      expectError(await send(t, l, TEXT, { destinatario: DEST, mensaje }), 429, 306);
    } finally {
      await t.stop();
    }
  });

  it('mid-run: sends go on (never a 500), the outage and the recovery are logged once each', async () => {
    const target = new URL(REDIS_URL);
    proxy = await startTcpProxy(target.hostname, Number(target.port) || 6379);
    const prefix = uniqueNamespace('redis');
    const u = new URL(REDIS_URL);
    u.hostname = '127.0.0.1';
    u.port = String(proxy.port);
    s = await startTestServer({ counters: u.toString(), countersPrefix: prefix, countersTimeoutMs: 1000, countersProbeMs: 20 });
    try {
      const l = await linkedLine(s);
      expect((await send(s, l, TEXT, { destinatario: DEST, mensaje: uniqueText() })).status).toBe(200);
      await proxy.cut();
      for (let i = 0; i < 5; i++) {
        const r = await send(s, l, TEXT, { destinatario: DEST, mensaje: uniqueText() });
        expect(r.status, r.text).toBe(200);
      }
      expect((await health(s)).counters).toBe('redis (unreachable: memory)');
      await proxy.restore();
      await until(async () => (await health(s!)).counters === 'redis', { what: 'counters back on Redis' });
      expect((await send(s, l, TEXT, { destinatario: DEST, mensaje: uniqueText() })).status).toBe(200);
      const lines = s.logs.filter((x) => /Redis counters/.test(x));
      expect(lines).toHaveLength(2);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, msg: expect.stringMatching(/unreachable/) });
      expect(JSON.parse(lines[1]!)).toMatchObject({ level: 30, msg: expect.stringMatching(/reachable again/) });
    } finally {
      await dropRedisPrefix(prefix);
    }
  });
});

describe('serve --counters', () => {
  it('memory by default, in /health and the banner', async () => {
    const s = await startTestServer();
    try {
      expect((await health(s)).counters).toBe('memory');
      expect(banner(s, 'sim')).toContain('counters         memory (this process)');
    } finally {
      await s.stop();
    }
  });
});
