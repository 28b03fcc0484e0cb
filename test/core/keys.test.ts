import { describe, expect, it } from 'vitest';
import { celularKey, clientKey, hashSecret, newGatewayToken, newSecret, parseKey, secretMatches } from '../../src/core/auth/keys.js';

describe('keys', () => {
  it('round-trips client and celular keys, whose secrets may contain _ and -', () => {
    const s = newSecret();
    expect(parseKey(clientKey(12, s))).toEqual({ kind: 'client', id: 12, secret: s });
    expect(parseKey(celularKey(7, s))).toEqual({ kind: 'celular', id: 7, secret: s });
    expect(parseKey('WA_7_a_b-c_d-eeeeeeeeeeeeeeeeee')).toEqual({ kind: 'celular', id: 7, secret: 'a_b-c_d-eeeeeeeeeeeeeeeeee' });
  });

  it('treats anything else as a token', () => {
    expect(parseKey('WA_0_xxxxxxxxxxxxxxxxxxxx').kind).toBe('token');
    expect(parseKey('WA_7_short').kind).toBe('token');
    expect(parseKey(newGatewayToken())).toMatchObject({ kind: 'token' });
  });

  it('makes 64-hex gateway tokens and distinct secrets', () => {
    expect(newGatewayToken()).toMatch(/^[0-9a-f]{64}$/);
    expect(newSecret()).not.toBe(newSecret());
  });

  it('matches a secret against its hash only', () => {
    const s = newSecret();
    const h = hashSecret(s);
    expect(h).not.toContain(s);
    expect(secretMatches(s, h)).toBe(true);
    expect(secretMatches(`${s}x`, h)).toBe(false);
    expect(secretMatches(s, null)).toBe(false);
    expect(secretMatches(s, 'abcd')).toBe(false);
  });
});
