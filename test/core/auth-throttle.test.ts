import { describe, expect, it } from 'vitest';
import { checkThrottle, fingerprint, recordFailure, recordSuccess, ADDRESS_FACTOR } from '../../src/core/auth/auth-throttle.js';
import { ManualClock } from '../../src/core/time/clock.js';
import type { Core } from '../../src/core/context.js';
import { MemoryCounters } from '../../src/core/nodes/counters-memory.js';
import { ERRORS } from '../../src/core/api/errors.js';
import { rejectionOf } from '../helpers/expect.js';

/** Throttling of failed authentication (core/auth/auth-throttle.ts) on the in-memory Counters and a driven clock. */
const MAX = 3;
const WINDOW = 60_000;
function setup() {
  const clock = new ManualClock(Date.UTC(2026, 3, 1, 12));
  const core = { clock, counters: new MemoryCounters(clock), config: { authMaxFailures: MAX, authWindowMs: WINDOW } } as Pick<
    Core,
    'clock' | 'counters'
  > as Core;
  return { clock, core };
}
const IP = '203.0.113.7';
const stale = fingerprint(['clave-vieja']);

async function fail(core: Core, fp: string, n: number, ip = IP, realm: 'client' | 'operator' = 'client'): Promise<void> {
  for (let i = 0; i < n; i++) await recordFailure(core, realm, ip, fp);
}

describe('auth throttling', () => {
  it('a credential that failed the limit times from an address is refused unchecked, with the wait of its window', async () => {
    const { core, clock } = setup();
    await fail(core, stale, MAX - 1);
    await checkThrottle(core, 'client', IP, stale);
    await fail(core, stale, 1);
    clock.advance(15_000);
    const err = await rejectionOf(checkThrottle(core, 'client', IP, stale));
    expect(err.row).toBe(ERRORS.AUTH_THROTTLED);
    expect(err.extras.retryAfter).toBe(45);
    expect(err.message).toMatch(/with this credential from this address/);
    clock.advance(45_000);
    await checkThrottle(core, 'client', IP, stale);
  });

  it('one stale key locks only itself: other credentials and other addresses go on', async () => {
    const { core } = setup();
    await fail(core, stale, MAX);
    await checkThrottle(core, 'client', IP, fingerprint(['otra']));
    await checkThrottle(core, 'client', '198.51.100.1', stale);
  });

  it('a spray of keys from one address locks the address for unproven credentials; a proven one keeps working', async () => {
    const { core } = setup();
    const good = fingerprint(['la-buena']);
    await recordSuccess(core, 'client', IP, good);
    for (let i = 0; i < MAX * ADDRESS_FACTOR; i++) await fail(core, fingerprint([`guess-${i}`]), 1);
    const err = await rejectionOf(checkThrottle(core, 'client', IP, fingerprint(['another-guess'])));
    expect(err.message).toMatch(/from this address/);
    await checkThrottle(core, 'client', IP, good);
  });

  it('client and operator failures are counted apart', async () => {
    const { core } = setup();
    await fail(core, stale, MAX, IP, 'client');
    await checkThrottle(core, 'operator', IP, stale);
  });

  it('the fingerprint is of the set of credentials presented, and shows none of them', () => {
    expect(fingerprint(['a', 'b'])).toBe(fingerprint(['b', 'a', 'b']));
    expect(fingerprint(['a'])).not.toBe(fingerprint(['a', 'b']));
    expect(fingerprint(['secreto-largo-123'])).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(fingerprint(['secreto-largo-123'])).not.toContain('secreto');
  });
});
