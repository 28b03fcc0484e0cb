import { digest } from './digest.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';

/**
 * Throttling of failed authentication, in the Counters port (see
 * docs/decisions.md D-15):
 *
 * - failures are counted per (address, presented credential): after
 *   `authMaxFailures` in a window that pair gets 429 without being checked,
 *   so one stale key locks only itself;
 * - failures are also counted per address, and past ADDRESS_FACTOR times that
 *   limit the address gets 429 for every credential that has not
 *   authenticated from it lately (a spray of random keys), while one that
 *   has keeps working. An unproven credential is refused unchecked, so the
 *   answer never tells a guesser that a guess was right.
 *
 * Operator and client failures are counted apart (realms): client failures
 * never lock the operator out, nor the reverse. Counter keys hold a hash of
 * the credential, never the credential.
 */
export type Realm = 'client' | 'operator';

/** The per-address ceiling, in multiples of the per-credential limit. */
export const ADDRESS_FACTOR = 10;
/** How long a credential that authenticated from an address counts as proven there. */
export const PROVEN_MS = 24 * 60 * 60 * 1000;

/**
 * 128 bits of a domain-separated SHA-256 of the credentials presented
 * together (order and repeats do not matter), so the keys differ from the
 * stored key hashes and reveal nothing of the secret.
 */
export function fingerprint(presented: readonly string[]): string {
  // One string hashed at once: the same digest as the parts fed one by one, for less work per request.
  let text = 'pasarela auth-throttle v1\0';
  for (const k of [...new Set(presented)].sort()) text += `${k}\0`;
  return digest('sha256', text, 'base64url').slice(0, 22);
}

function keys(realm: Realm, ip: string, fp: string) {
  return { pair: `authfail:${realm}:${ip}:${fp}`, address: `authfail:${realm}:${ip}`, proven: `authok:${realm}:${ip}:${fp}` };
}

function throttled(core: Pick<Core, 'clock'>, resetAt: number, what: string): never {
  const retryAfter = Math.max(1, Math.ceil((resetAt - core.clock.now()) / 1000));
  fail('AUTH_THROTTLED', `too many failed authentications ${what}; retry in ${retryAfter} s`, { retryAfter });
}

/** 429 when this credential, or (for an unproven one) this address, is over its limit. */
export async function checkThrottle(core: Pick<Core, 'counters' | 'clock' | 'config'>, realm: Realm, ip: string, fp: string): Promise<void> {
  const k = keys(realm, ip, fp);
  const max = core.config.authMaxFailures;
  const [pair, address] = await Promise.all([core.counters.get(k.pair), core.counters.get(k.address)]);
  if (pair && pair.count >= max) throttled(core, pair.resetAt, 'with this credential from this address');
  if (address && address.count >= max * ADDRESS_FACTOR && !(await core.counters.get(k.proven))) {
    throttled(core, address.resetAt, 'from this address');
  }
}

export async function recordFailure(core: Pick<Core, 'counters' | 'config'>, realm: Realm, ip: string, fp: string): Promise<void> {
  const k = keys(realm, ip, fp);
  const w = core.config.authWindowMs;
  await Promise.all([core.counters.incr(k.pair, w), core.counters.incr(k.address, w)]);
}

/** Marks the credential as proven from this address (what lets it through a spray). */
export async function recordSuccess(core: Pick<Core, 'counters'>, realm: Realm, ip: string, fp: string): Promise<void> {
  await core.counters.incr(keys(realm, ip, fp).proven, PROVEN_MS);
}
