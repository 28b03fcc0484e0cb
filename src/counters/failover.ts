import type { Clock } from '../core/time/clock.js';
import type { Counters } from '../core/ports/counters.js';
import type { RedisCounters } from './redis.js';

export interface CountersLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface FailoverOptions {
  clock: Clock;
  log: CountersLog;
  /** While Redis is unreachable, how often it is pinged to come back to it; 1000 ms by default. */
  probeMs?: number;
}

/**
 * Redis counters that fail open to this node's memory (docs/decisions.md
 * D-42). The first failed command (refused, dropped, or slower
 * than the command timeout) switches every call to memory at once and logs one
 * warning; a ping in the background switches back when Redis answers, and
 * logs that too. A send never waits on a dead Redis for more than one command
 * timeout, and never fails because of it: duplicate protection and the auth
 * throttle just count per node meanwhile. Caps do not live here (they are in
 * the store), so they hold whatever happens to Redis.
 */
export class FailoverCounters implements Counters {
  private outage: { since: number; reason: string } | null = null;
  private probe: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly redis: RedisCounters,
    private readonly memory: Counters,
    private readonly opts: FailoverOptions,
  ) {}

  /** Connects; an unreachable Redis at start is an outage like any other (the node starts, on memory). */
  async start(): Promise<void> {
    try {
      await this.redis.connect();
    } catch (err) {
      this.fail(err);
    }
  }

  /** Why Redis is not in use now, or null when it is. */
  get unreachable(): string | null {
    return this.outage?.reason ?? null;
  }

  backend(): string {
    return this.outage ? 'redis (unreachable: memory)' : 'redis';
  }

  degraded(): boolean {
    return this.outage !== null;
  }

  incr(key: string, windowMs: number): Promise<{ count: number; resetAt: number }> {
    return this.run((c) => c.incr(key, windowMs));
  }

  get(key: string): Promise<{ count: number; resetAt: number } | null> {
    return this.run((c) => c.get(key));
  }

  decr(key: string): Promise<void> {
    return this.run((c) => c.decr(key));
  }

  delete(key: string): Promise<void> {
    return this.run((c) => c.delete(key));
  }

  hold(key: string, holder: string, ttlMs: number, from?: string): Promise<{ holder: string; resetAt: number }> {
    return this.run((c) => c.hold(key, holder, ttlMs, from));
  }

  unhold(key: string, holder: string): Promise<void> {
    return this.run((c) => c.unhold(key, holder));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.probe) clearTimeout(this.probe);
    this.probe = null;
    await this.redis.close();
  }

  private async run<T>(op: (c: Counters) => Promise<T>): Promise<T> {
    if (!this.outage) {
      try {
        return await op(this.redis);
      } catch (err) {
        this.fail(err);
      }
    }
    return op(this.memory);
  }

  private fail(err: unknown): void {
    if (this.outage) return;
    const reason = this.redis.reason(err);
    this.outage = { since: this.opts.clock.now(), reason };
    this.opts.log.warn(
      { counters: this.redis.url, err: reason },
      "Redis counters unreachable: counting in this node's memory until Redis answers (duplicate protection and the auth throttle are per node meanwhile)",
    );
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.closed) return;
    this.probe = setTimeout(() => {
      this.probe = null;
      this.redis.ping().then(
        () => this.recover(),
        () => this.scheduleProbe(),
      );
    }, this.opts.probeMs ?? 1000);
    this.probe.unref();
  }

  private recover(): void {
    if (!this.outage || this.closed) return;
    const downMs = this.opts.clock.now() - this.outage.since;
    this.outage = null;
    this.opts.log.info({ counters: this.redis.url, down_ms: downMs }, 'Redis counters reachable again: counting in Redis');
  }
}
