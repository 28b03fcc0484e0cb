import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { describe, it } from 'vitest';

/**
 * The outside services some suites need: PostgreSQL and Redis, found through
 * PASARELA_TEST_POSTGRES_URL / PASARELA_TEST_REDIS_URL (defaults: the
 * machine's own). Each is probed once per test file with a short timeout.
 * Without them their suites are skipped, with the reason in the suite name, so
 * a fresh machine still passes `npm test`; with PASARELA_REQUIRE_SERVICES=1
 * (what .ci/run sets) a missing service is a failing test instead.
 */

export const POSTGRES_URL = process.env.PASARELA_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** The test database's URL with its `search_path` on `schema`: a store of its own for a test (pgSchema makes the schema). */
export function schemaUrl(schema: string): string {
  const u = new URL(POSTGRES_URL);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}
export const REDIS_URL = process.env.PASARELA_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
export const SERVICES_REQUIRED = /^(1|true|yes)$/i.test(process.env.PASARELA_REQUIRE_SERVICES ?? '');

const PROBE_TIMEOUT_MS = 1000;

export interface Service {
  name: 'PostgreSQL' | 'Redis';
  url: string;
  available: boolean;
  /** Why it is not available (empty when it is). */
  reason: string;
}

/**
 * Opens a TCP connection, writes `hello` and resolves with the first bytes
 * answered; rejects on refusal, timeout or a close without an answer.
 */
function exchange(host: string, port: number, hello: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host, port });
    const done = (err: Error | null, data?: Buffer) => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(data!);
    };
    const timer = setTimeout(() => done(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
    sock.once('connect', () => sock.write(hello));
    sock.once('data', (d) => done(null, d));
    sock.once('error', (e) => done(e));
    sock.once('close', () => done(new Error('closed without an answer')));
  });
}

function hostPort(url: string, defaultPort: number): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(u.port) || defaultPort };
}

/** PING answered with +PONG (an -NOAUTH answer is a Redis that wants a password in the URL). */
async function probeRedis(url: string): Promise<Service> {
  const svc: Service = { name: 'Redis', url, available: false, reason: '' };
  try {
    const { host, port } = hostPort(url, 6379);
    const answer = (await exchange(host, port, Buffer.from('PING\r\n'))).toString('latin1');
    if (answer.startsWith('+PONG')) svc.available = true;
    else svc.reason = `unexpected answer to PING: ${JSON.stringify(answer.slice(0, 60))}`;
  } catch (err) {
    svc.reason = (err as Error).message;
  }
  return svc;
}

/**
 * The PostgreSQL SSLRequest packet, answered with one byte ('S' or 'N') by
 * any PostgreSQL server: no client library needed to tell it is there.
 */
async function probePostgres(url: string): Promise<Service> {
  const svc: Service = { name: 'PostgreSQL', url, available: false, reason: '' };
  try {
    const { host, port } = hostPort(url, 5432);
    const hello = Buffer.alloc(8);
    hello.writeInt32BE(8, 0);
    hello.writeInt32BE(80877103, 4);
    const answer = await exchange(host, port, hello);
    const c = String.fromCharCode(answer[0] ?? 0);
    if (c === 'S' || c === 'N') svc.available = true;
    else svc.reason = 'not a PostgreSQL server (unexpected answer to SSLRequest)';
  } catch (err) {
    svc.reason = (err as Error).message;
  }
  return svc;
}

/**
 * PASARELA_TEST_POSTGRES=off (the fast lane, vitest.config.ts): PostgreSQL is
 * left to the slow lane's `postgres` project, so its suites are skipped here
 * whatever PASARELA_REQUIRE_SERVICES says; they run there.
 */
export const POSTGRES_OFF = process.env.PASARELA_TEST_POSTGRES === 'off';
const LEFT_TO_SLOW_LANE = 'PostgreSQL runs in the slow lane (npm run test:slow)';

export const redis: Service = await probeRedis(REDIS_URL);
export const postgres: Service = POSTGRES_OFF
  ? { name: 'PostgreSQL', url: POSTGRES_URL, available: false, reason: LEFT_TO_SLOW_LANE }
  : await probePostgres(POSTGRES_URL);

/**
 * `describe` for a suite that needs `svc`: run when it answers; otherwise
 * skipped with the reason in its name, or, when services are required, one
 * failing test that says what is missing.
 */
export function describeWith(svc: Service, name: string, fn: () => void): void {
  // The slow lane picks PostgreSQL suites by name (vitest.config.ts), so the name says it.
  if (svc.name === 'PostgreSQL' && !/postgres/i.test(name)) name = `${name} (PostgreSQL)`;
  if (svc.available) {
    describe(name, fn);
  } else if (svc.name === 'PostgreSQL' && POSTGRES_OFF) {
    describe.skip(`${name} [${LEFT_TO_SLOW_LANE}]`, fn);
  } else if (SERVICES_REQUIRED) {
    describe(name, () => {
      it(`needs ${svc.name} at ${svc.url}`, () => {
        throw new Error(`${svc.name} is required (PASARELA_REQUIRE_SERVICES=1) but ${svc.url} did not answer: ${svc.reason}`);
      });
    });
  } else {
    describe.skip(`${name} [skipped: no ${svc.name} at ${svc.url}: ${svc.reason}]`, fn);
  }
}

/**
 * A namespace of its own for one test file's run (a Redis key prefix, a
 * PostgreSQL schema name): the process id and random bytes, so test files
 * running in parallel, or a run beside a leftover one, never share keys.
 */
export function uniqueNamespace(kind: 'redis' | 'postgres'): string {
  const tag = `${process.pid}_${randomBytes(4).toString('hex')}`;
  return kind === 'redis' ? `pasarela-test:${tag}:` : `pasarela_test_${tag}`;
}

/** Deletes every key under `prefix` (a test's namespace) from the test Redis. */
export async function dropRedisPrefix(prefix: string): Promise<void> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 500);
      if (keys.length > 0) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}
