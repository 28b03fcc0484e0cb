import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { digest } from '../../src/core/auth/digest.js';
import { fingerprint } from '../../src/core/auth/auth-throttle.js';
import { hashSecret, secretMatches } from '../../src/core/auth/keys.js';
import { identityHash } from '../../src/core/sending/dedupe.js';

/**
 * The one-call digests (core/auth/digest.ts) give what the Hash objects gave
 * before them: stored key hashes, throttle counters and dedupe keys written by
 * an older build keep matching.
 */
describe('digest in one call', () => {
  const texts = ['', 'WAC_12_abcdefghijklmnopqrstuvwxyz012345', 'ñandú 🚀 \u0000 x', 'a'.repeat(5000)];

  it('is createHash for sha256 and md5, in hex, base64url and bytes', () => {
    for (const t of texts) {
      for (const alg of ['sha256', 'md5'] as const) {
        expect(digest(alg, t, 'hex')).toBe(createHash(alg).update(t, 'utf8').digest('hex'));
        expect(digest(alg, t, 'base64url')).toBe(createHash(alg).update(t, 'utf8').digest('base64url'));
        expect(digest(alg, t, 'buffer').equals(createHash(alg).update(t, 'utf8').digest())).toBe(true);
      }
    }
  });

  it('leaves the key hash, the throttle fingerprint and the dedupe identity as they were', () => {
    const key = 'WAC_7_Zx9-_abcdefghijklmnop';
    expect(hashSecret(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
    expect(secretMatches(key, hashSecret(key))).toBe(true);
    expect(secretMatches(`${key}x`, hashSecret(key))).toBe(false);
    // The fingerprint as the Hash object fed it: the prefix, then each distinct key sorted, each ended by NUL.
    const old = createHash('sha256').update('pasarela auth-throttle v1\0');
    for (const k of ['a-key', 'b-key']) old.update(k).update('\0');
    expect(fingerprint(['b-key', 'a-key', 'b-key'])).toBe(old.digest('base64url').slice(0, 22));
    expect(identityHash({ tipo: 'texto', destinatario: '525512345678', parts: ['hola', undefined] })).toBe(
      createHash('md5').update('texto\u0000525512345678\u0000hola\u0000').digest('hex'),
    );
  });
});
