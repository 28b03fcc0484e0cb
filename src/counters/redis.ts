import { Redis, type Result } from 'ioredis';
import type { Clock } from '../core/time/clock.js';
import type { Counters } from '../core/ports/counters.js';

/**
 * The Counters port on Redis, shared by every node. Each operation is one Lua
 * script (ioredis sends it with EVALSHA and falls back to EVAL), so a count
 * and its window never drift apart between two nodes.
 *
 * Time: a window's length runs on Redis' clock (PEXPIRE), the only clock
 * every node agrees on. What the port returns, `resetAt`, is put on this
 * node's injected clock as now + the key's remaining PTTL, so the callers'
 * "seconds left" arithmetic stays on one clock. The consequence: advancing an
 * injected test clock does not end a Redis window; only real time does.
 */

/** Counts one; the first count of a window (or a key somehow without one) sets its expiry. Returns {count, ms left}. */
const INCR = `
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

/** {count, ms left}, or nil when there is no live window. */
const GET = `
local n = redis.call('GET', KEYS[1])
if not n then return nil end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return nil end
return {tonumber(n), ttl}`;

/** Takes one back, never below zero; DECR keeps the key's expiry, so the window is unchanged. */
const DECR = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then return redis.call('DECR', KEYS[1]) end
return 0`;

/** Holds KEYS[1] for ARGV[1] for ARGV[2] ms unless another holder (not ARGV[3]) has it. Returns {holder, ms left}. */
const HOLD = `
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] and cur ~= ARGV[3] then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl >= 0 then return {cur, ttl} end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {ARGV[1], tonumber(ARGV[2])}`;

/** Deletes KEYS[1] if ARGV[1] holds it. */
const UNHOLD = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    pasarelaIncr(key: string, windowMs: number): Result<[number, number], Context>;
    pasarelaGet(key: string): Result<[number, number] | null, Context>;
    pasarelaDecr(key: string): Result<number, Context>;
    pasarelaHold(key: string, holder: string, ttlMs: number, from: string): Result<[string, number], Context>;
    pasarelaUnhold(key: string, holder: string): Result<number, Context>;
  }
}

export interface RedisCountersOptions {
  /** redis:// or rediss:// URL (user, password and database number as Redis URLs have them). */
  url: string;
  /** Put before every key, so several installations can share one Redis; "pasarela:" by default. */
  prefix?: string;
  clock: Clock;
  /** A command not answered within this fails (the caller falls back); 500 ms by default. */
  commandTimeoutMs?: number;
  /** Time to open a connection; 1000 ms by default. */
  connectTimeoutMs?: number;
}

export const DEFAULT_PREFIX = 'pasarela:';

/** The URL without its password, for logs and the banner. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid URL)';
  }
}

export class RedisCounters implements Counters {
  readonly prefix: string;
  readonly url: string;
  private readonly redis: Redis;
  private readonly clock: Clock;
  /** The last connection error, for the reason given when Redis is unreachable. */
  private lastError = '';

  constructor(opts: RedisCountersOptions) {
    this.prefix = opts.prefix ?? DEFAULT_PREFIX;
    this.url = redactUrl(opts.url);
    this.clock = opts.clock;
    this.redis = new Redis(opts.url, {
      lazyConnect: true,
      connectTimeout: opts.connectTimeoutMs ?? 1000,
      commandTimeout: opts.commandTimeoutMs ?? 500,
      // Fail at once while disconnected instead of queueing: the caller has a fallback and a send must not wait.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // A command that failed over to memory must not be replayed into Redis on reconnection.
      autoResendUnfulfilledCommands: false,
      // Keeps reconnecting for as long as the process runs, at most once a second.
      retryStrategy: (times) => Math.min(times * 100, 1000),
    });
    // Errors reach the callers through rejected commands; this only keeps the reason (and keeps ioredis quiet).
    this.redis.on('error', (err: Error) => {
      this.lastError = err.message;
    });
    this.redis.defineCommand('pasarelaIncr', { numberOfKeys: 1, lua: INCR });
    this.redis.defineCommand('pasarelaGet', { numberOfKeys: 1, lua: GET });
    this.redis.defineCommand('pasarelaDecr', { numberOfKeys: 1, lua: DECR });
    this.redis.defineCommand('pasarelaHold', { numberOfKeys: 1, lua: HOLD });
    this.redis.defineCommand('pasarelaUnhold', { numberOfKeys: 1, lua: UNHOLD });
  }

  /** The first connection: rejects with the reason when Redis does not answer (reconnection goes on in the background). */
  async connect(): Promise<void> {
    try {
      await this.redis.connect();
      await this.redis.ping();
    } catch (err) {
      throw new Error(this.lastError || (err as Error).message);
    }
  }

  /** One round trip; rejects when Redis is unreachable or slow. */
  async ping(): Promise<void> {
    await this.call(() => this.redis.ping());
  }

  /**
   * A command that timed out leaves the connection with a reply owed; the
   * connection is dropped and opened again, so later commands are not queued
   * behind a hung one (whether the timed-out command was applied is unknown).
   */
  private async call<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      if (/timed out/i.test((err as Error).message)) this.redis.disconnect(true);
      throw err;
    }
  }

  /** Why Redis is not answering, as well as is known. */
  reason(err: unknown): string {
    const m = err instanceof Error ? err.message : String(err);
    return /Stream isn't writeable|Connection is closed/.test(m) && this.lastError ? `${this.lastError} (${m})` : m;
  }

  async incr(key: string, windowMs: number): Promise<{ count: number; resetAt: number }> {
    const [count, ttl] = await this.call(() => this.redis.pasarelaIncr(this.prefix + key, Math.max(1, Math.ceil(windowMs))));
    return { count, resetAt: this.clock.now() + ttl };
  }

  async get(key: string): Promise<{ count: number; resetAt: number } | null> {
    const r = await this.call(() => this.redis.pasarelaGet(this.prefix + key));
    return r ? { count: r[0], resetAt: this.clock.now() + r[1] } : null;
  }

  async decr(key: string): Promise<void> {
    await this.call(() => this.redis.pasarelaDecr(this.prefix + key));
  }

  async delete(key: string): Promise<void> {
    await this.call(() => this.redis.del(this.prefix + key));
  }

  async hold(key: string, holder: string, ttlMs: number, from?: string): Promise<{ holder: string; resetAt: number }> {
    // An empty `from` matches no holder: holder ids are never empty.
    const [who, ttl] = await this.call(() => this.redis.pasarelaHold(this.prefix + key, holder, Math.max(1, Math.ceil(ttlMs)), from ?? ''));
    return { holder: who, resetAt: this.clock.now() + ttl };
  }

  async unhold(key: string, holder: string): Promise<void> {
    await this.call(() => this.redis.pasarelaUnhold(this.prefix + key, holder));
  }

  backend(): string {
    return 'redis';
  }

  /** Ends the connection and its reconnection (every command of a closing server has been answered by then). */
  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
