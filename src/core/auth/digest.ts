import * as crypto from 'node:crypto';

/**
 * A digest of a string (UTF-8) in one call. `crypto.hash` (Node 20.12+) does
 * it without a Hash object: about half the CPU of createHash().update().digest()
 * for the few hashes every request pays (key, throttle fingerprint, dedupe;
 * D-145). Older Node 20 takes the long way, with the same result.
 */
export function digest(algorithm: 'sha256' | 'md5', data: string, encoding: 'hex' | 'base64url'): string;
export function digest(algorithm: 'sha256' | 'md5', data: string, encoding: 'buffer'): Buffer;
export function digest(algorithm: 'sha256' | 'md5', data: string, encoding: 'hex' | 'base64url' | 'buffer'): string | Buffer {
  if (oneShot) return encoding === 'buffer' ? oneShot(algorithm, data, 'buffer') : oneShot(algorithm, data, encoding);
  const h = crypto.createHash(algorithm).update(data, 'utf8');
  return encoding === 'buffer' ? h.digest() : h.digest(encoding);
}

const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;
