import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadBaileys } from '../../src/gateways/baileys/library.js';

/**
 * The library defect (DESIGN §13): baileys 7.0.0-rc14's `Curve.verify`
 * accepted any 64-byte signature. The engine corrects it where it loads the
 * library; the library's own call sites (the server's certificate chain in
 * noise-handler.js, the pairing's account signature in validate-connection.js)
 * read the same `Curve` object from `Utils/crypto.js`, so they see the fix.
 */
describe('the engine corrects Curve.verify when it loads baileys', () => {
  it('accepts a real signature and refuses forged ones', async () => {
    const lib = await loadBaileys();
    const key = lib.Curve.generateKeyPair();
    const other = lib.Curve.generateKeyPair();
    const msg = Buffer.from('certificate details');
    const sig = lib.Curve.sign(key.private, msg);
    expect(lib.Curve.verify(key.public, msg, sig)).toBe(true);
    // Each of these passed before the correction.
    expect(lib.Curve.verify(key.public, Buffer.from('other details'), sig)).toBe(false);
    expect(lib.Curve.verify(other.public, msg, sig)).toBe(false);
    expect(lib.Curve.verify(key.public, msg, randomBytes(64))).toBe(false);
    // Malformed input is a refusal, never a throw.
    expect(lib.Curve.verify(key.public, msg, randomBytes(63))).toBe(false);
    expect(lib.Curve.verify(Buffer.alloc(5), msg, sig)).toBe(false);
  });

  it("is the object the library's call sites read", async () => {
    const lib = await loadBaileys();
    // The module noise-handler.js and validate-connection.js import `Curve` from.
    const crypto = (await import('baileys/lib/Utils/crypto.js')) as { Curve: typeof lib.Curve };
    expect(crypto.Curve).toBe(lib.Curve);
    const key = lib.Curve.generateKeyPair();
    expect(crypto.Curve.verify(key.public, Buffer.from('x'), randomBytes(64))).toBe(false);
  });

  it('is applied once, however many times the engine loads the library', async () => {
    const [a, b] = await Promise.all([loadBaileys(), loadBaileys()]);
    expect(a).toBe(b);
    const verify = a.Curve.verify;
    await loadBaileys();
    expect(a.Curve.verify).toBe(verify);
  });
});
