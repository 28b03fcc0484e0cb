import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkThrottle, fingerprint, recordFailure, recordSuccess, ADDRESS_FACTOR } from '../../src/core/auth/auth-throttle.js';
import { ManualClock } from '../../src/core/time/clock.js';
import type { Core } from '../../src/core/context.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';
import { checkDuplicate, DUPE_BLOCK_MS, DUPE_MAX, DUPE_WINDOW_MS } from '../../src/core/sending/dedupe.js';
import { AppError } from '../../src/core/api/errors.js';
import type { Counters } from '../../src/core/ports/counters.js';
import { RedisCounters } from '../../src/counters/redis.js';
import { describeWith, dropRedisPrefix, redis, REDIS_URL, uniqueNamespace } from '../helpers/services.js';

/**
 * The Counters port's contract, run against every adapter: fixed windows,
 * their reset, the decrement floor, delete, atomic increments, and the two
 * users' rules (duplicate protection, the auth throttle) on top.
 *
 * A Redis window runs on Redis' clock, so "time passes" is real time for it
 * (plus the same step on the injected clock, which `resetAt` is expressed on):
 * expiry is tested with windows of a few tens of milliseconds, and "still in
 * the window" with windows of a minute, so no check depends on timing.
 */

interface Subject {
  counters: Counters;
  clock: ManualClock;
  /** Lets `ms` pass for the counters. */
  elapse(ms: number): Promise<void>;
}

const SHORT = 40;
const LONG = 60_000;
/** How far a Redis resetAt may drift from the memory one: the real time between two calls. */
const SLACK = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function contract(name: string, subject: () => Subject): void {
  let s: Subject;
  let seq = 0;
  /** A key of its own for each use, so tests never see each other's counts. */
  const k = (tag = 'k') => `${tag}:${++seq}:${randomBytes(3).toString('hex')}`;
  beforeAll(() => {
    s = subject();
  });

  describe(`Counters contract: ${name}`, () => {
    it('counts within a window; resetAt is now + the window and does not move', async () => {
      const key = k();
      const t0 = s.clock.now();
      const a = await s.counters.incr(key, LONG);
      expect(a.count).toBe(1);
      expect(a.resetAt).toBeGreaterThan(t0 + LONG - SLACK);
      expect(a.resetAt).toBeLessThanOrEqual(t0 + LONG);
      const b = await s.counters.incr(key, LONG);
      const c = await s.counters.incr(key, LONG);
      expect([b.count, c.count]).toEqual([2, 3]);
      expect(Math.abs(c.resetAt - a.resetAt)).toBeLessThan(SLACK);
    });

    it('get reads without counting; an unknown key is null', async () => {
      const key = k();
      expect(await s.counters.get(key)).toBeNull();
      const a = await s.counters.incr(key, LONG);
      const g = await s.counters.get(key);
      expect(g?.count).toBe(1);
      expect(Math.abs(g!.resetAt - a.resetAt)).toBeLessThan(SLACK);
      expect((await s.counters.get(key))?.count).toBe(1);
    });

    it('a window ends: after it the key is gone and counting starts again at 1 with a new window', async () => {
      const key = k();
      await s.counters.incr(key, SHORT);
      await s.counters.incr(key, SHORT);
      await s.elapse(SHORT + 30);
      expect(await s.counters.get(key)).toBeNull();
      const t1 = s.clock.now();
      const again = await s.counters.incr(key, LONG);
      expect(again.count).toBe(1);
      expect(again.resetAt).toBeGreaterThan(t1 + LONG - SLACK);
    });

    it('a later incr with another window length does not stretch the open window', async () => {
      const key = k();
      await s.counters.incr(key, SHORT);
      await s.counters.incr(key, LONG);
      await s.elapse(SHORT + 30);
      expect(await s.counters.get(key)).toBeNull();
    });

    it('decr takes one back, never below zero, and keeps the window', async () => {
      const key = k();
      const a = await s.counters.incr(key, LONG);
      await s.counters.incr(key, LONG);
      await s.counters.decr(key);
      expect((await s.counters.get(key))?.count).toBe(1);
      await s.counters.decr(key);
      await s.counters.decr(key);
      const g = await s.counters.get(key);
      expect(g?.count).toBe(0);
      expect(Math.abs(g!.resetAt - a.resetAt)).toBeLessThan(SLACK);
      expect((await s.counters.incr(key, LONG)).count).toBe(1);

      const short = k();
      await s.counters.incr(short, SHORT);
      await s.counters.decr(short);
      await s.elapse(SHORT + 30);
      expect(await s.counters.get(short)).toBeNull();
    });

    it('decr of an unknown key makes nothing', async () => {
      const key = k();
      await s.counters.decr(key);
      expect(await s.counters.get(key)).toBeNull();
      expect((await s.counters.incr(key, LONG)).count).toBe(1);
    });

    it('delete ends the window at once', async () => {
      const key = k();
      await s.counters.incr(key, LONG);
      await s.counters.incr(key, LONG);
      await s.counters.delete(key);
      expect(await s.counters.get(key)).toBeNull();
      expect((await s.counters.incr(key, LONG)).count).toBe(1);
      await s.counters.delete(k()); // unknown: fine
    });

    it('keys are independent', async () => {
      const [a, b] = [k(), k()];
      await s.counters.incr(a, LONG);
      await s.counters.incr(a, LONG);
      expect((await s.counters.incr(b, LONG)).count).toBe(1);
    });

    it('concurrent increments each get their own count', async () => {
      const key = k();
      const counts = (await Promise.all(Array.from({ length: 50 }, () => s.counters.incr(key, LONG)))).map((r) => r.count);
      expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    });

    it('hold: one holder at a time; its holder renews it; unhold by another holder changes nothing; `from` takes it over', async () => {
      const key = k('hold');
      const t0 = s.clock.now();
      const a = await s.counters.hold(key, 'node-a', LONG);
      expect(a.holder).toBe('node-a');
      expect(a.resetAt).toBeGreaterThan(t0 + LONG - SLACK);
      expect((await s.counters.hold(key, 'node-b', LONG)).holder).toBe('node-a');
      expect((await s.counters.hold(key, 'node-a', LONG)).holder).toBe('node-a');
      await s.counters.unhold(key, 'node-b');
      expect((await s.counters.hold(key, 'node-c', LONG)).holder).toBe('node-a');
      // Taken over from a holder found gone, and only from that one.
      expect((await s.counters.hold(key, 'node-c', LONG, 'node-x')).holder).toBe('node-a');
      expect((await s.counters.hold(key, 'node-c', LONG, 'node-a')).holder).toBe('node-c');
      await s.counters.unhold(key, 'node-c');
      expect((await s.counters.hold(key, 'node-b', LONG)).holder).toBe('node-b');
      await s.counters.unhold(key, 'node-b');
    });

    it('a hold ends with its time', async () => {
      const key = k('hold');
      await s.counters.hold(key, 'node-a', SHORT);
      await s.elapse(SHORT * 2);
      expect((await s.counters.hold(key, 'node-b', LONG)).holder).toBe('node-b');
    });

    describe('duplicate protection on top', () => {
      const core = (): Core => ({ counters: s.counters, clock: s.clock }) as unknown as Core;
      const line = () => 1_000_000 + Math.floor(Math.random() * 1e9);

      it(`${DUPE_MAX} identical sends count 1..${DUPE_MAX}; the next blocks the whole line for ${DUPE_BLOCK_MS / 1000} s`, async () => {
        const cel = line();
        const other = line();
        for (const n of [1, 2, 3]) expect((await checkDuplicate(core(), cel, 'h1')).count).toBe(n);
        const refused = await checkDuplicate(core(), cel, 'h1').catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(AppError);
        expect((refused as AppError).row.texto).toBe('DUPLICADO');
        expect((refused as AppError).extras.retryAfter).toBe(DUPE_BLOCK_MS / 1000);
        // Every send of the line, whatever its content, and the seconds left count down.
        const again = (await checkDuplicate(core(), cel, 'other content').catch((e: unknown) => e)) as AppError;
        expect(again.row.texto).toBe('DUPLICADO');
        expect(again.extras.retryAfter).toBeGreaterThan(DUPE_BLOCK_MS / 1000 - 2);
        expect(again.extras.retryAfter).toBeLessThanOrEqual(DUPE_BLOCK_MS / 1000);
        // Another line is not affected.
        expect((await checkDuplicate(core(), other, 'h1')).count).toBe(1);
      });

      it('a refused send gives its count back', async () => {
        const cel = line();
        await checkDuplicate(core(), cel, 'h');
        const second = await checkDuplicate(core(), cel, 'h');
        expect(second.count).toBe(2);
        await second.release();
        expect((await checkDuplicate(core(), cel, 'h')).count).toBe(2);
      });

      it(`the count window is ${DUPE_WINDOW_MS / 1000} s long`, async () => {
        const cel = line();
        const t0 = s.clock.now();
        await checkDuplicate(core(), cel, 'w');
        const w = await s.counters.get(`dupe:${cel}:w`);
        expect(w!.resetAt).toBeGreaterThan(t0 + DUPE_WINDOW_MS - SLACK);
        expect(w!.resetAt).toBeLessThanOrEqual(t0 + DUPE_WINDOW_MS);
      });
    });

    describe('auth throttle on top', () => {
      const MAX = 3;
      const core = (): Core => ({ counters: s.counters, clock: s.clock, config: { authMaxFailures: MAX, authWindowMs: LONG } }) as unknown as Core;
      const ip = () => `10.${seq++ % 250}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      const throttled = (p: Promise<void>) =>
        p.then(
          () => null,
          (e: AppError) => e,
        );

      it('a credential is refused after MAX failures from one address; another credential still is checked', async () => {
        const addr = ip();
        const fp = fingerprint([randomBytes(8).toString('hex')]);
        for (let i = 0; i < MAX; i++) {
          expect(await throttled(checkThrottle(core(), 'client', addr, fp))).toBeNull();
          await recordFailure(core(), 'client', addr, fp);
        }
        const e = await throttled(checkThrottle(core(), 'client', addr, fp));
        expect(e?.row.texto).toBe('DEMASIADOS_INTENTOS');
        expect(e?.extras.retryAfter).toBeGreaterThan(LONG / 1000 - 2);
        expect(e?.extras.retryAfter).toBeLessThanOrEqual(LONG / 1000);
        expect(await throttled(checkThrottle(core(), 'client', addr, fingerprint(['another'])))).toBeNull();
        // Realms apart, addresses apart.
        expect(await throttled(checkThrottle(core(), 'operator', addr, fp))).toBeNull();
        expect(await throttled(checkThrottle(core(), 'client', ip(), fp))).toBeNull();
      });

      it('past the address ceiling only credentials proven from that address get through', async () => {
        const addr = ip();
        const proven = fingerprint(['proven key']);
        await recordSuccess(core(), 'client', addr, proven);
        for (let i = 0; i < MAX * ADDRESS_FACTOR; i++) await recordFailure(core(), 'client', addr, fingerprint([`guess ${i}`]));
        expect((await throttled(checkThrottle(core(), 'client', addr, fingerprint(['fresh guess']))))?.row.texto).toBe('DEMASIADOS_INTENTOS');
        expect(await throttled(checkThrottle(core(), 'client', addr, proven))).toBeNull();
      });

      it('failures end with their window', async () => {
        const addr = ip();
        const fp = fingerprint(['short']);
        const c = { counters: s.counters, clock: s.clock, config: { authMaxFailures: MAX, authWindowMs: SHORT } } as unknown as Core;
        for (let i = 0; i < MAX; i++) await recordFailure(c, 'client', addr, fp);
        expect(await throttled(checkThrottle(c, 'client', addr, fp))).not.toBeNull();
        await s.elapse(SHORT + 30);
        expect(await throttled(checkThrottle(c, 'client', addr, fp))).toBeNull();
      });
    });
  });
}

contract('memory', () => {
  const clock = new ManualClock(1_000_000);
  return {
    counters: new MemoryCounters(clock),
    clock,
    elapse: async (ms) => clock.advance(ms),
  };
});

describeWith(redis, 'Redis counters', () => {
  const prefix = uniqueNamespace('redis');
  const clock = new ManualClock(1_000_000);
  const counters = new RedisCounters({ url: REDIS_URL, prefix, clock, commandTimeoutMs: 10_000 });
  beforeAll(() => counters.connect());
  afterAll(async () => {
    await counters.close();
    await dropRedisPrefix(prefix);
  });

  contract('redis', () => ({
    counters,
    clock,
    elapse: async (ms) => {
      await sleep(ms);
      clock.advance(ms);
    },
  }));

  it('keys carry the prefix', async () => {
    await counters.incr('visible', LONG);
    const probe = new RedisCounters({ url: REDIS_URL, prefix: '', clock });
    await probe.connect();
    try {
      expect((await probe.get(`${prefix}visible`))?.count).toBe(1);
      expect(await probe.get('visible')).toBeNull();
    } finally {
      await probe.close();
    }
  });
});
