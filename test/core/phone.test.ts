import { describe, expect, it } from 'vitest';
import { countryOf, normalizeNumero } from '../../src/core/accounts/phone.js';

describe('normalizeNumero', () => {
  it.each([
    ['5215512345678', '525512345678'],
    ['+52 1 55 1234 5678', '525512345678'],
    ['+52 (55) 1234-5678', '525512345678'],
    ['0052 55 1234 5678', '525512345678'],
    ['+1 415-555-2671', '14155552671'],
    ['34 612 34 56 78', '34612345678'],
    ['5491123456789', '5491123456789'],
  ])('%s -> %s', (raw, want) => {
    const r = normalizeNumero(raw);
    expect(r).toMatchObject({ ok: true, numero: want });
  });

  it('reads a bare national number in the given country', () => {
    expect(normalizeNumero('55 1234 5678', 'MX')).toMatchObject({ ok: true, numero: '525512345678', country: 'MX' });
    expect(normalizeNumero('(415) 555-2671', 'US')).toMatchObject({ ok: true, numero: '14155552671' });
  });

  it.each([
    ['', 'empty'],
    ['abc', 'characters'],
    ['+1555', 'digits'],
    ['1234567890123456', 'digits'],
    ['+99912345678', 'not a valid number'],
  ])('refuses %j with a reason', (raw, reason) => {
    const r = normalizeNumero(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });

  it('knows the country of a stored number', () => {
    expect(countryOf('525512345678')).toBe('MX');
    expect(countryOf('34612345678')).toBe('ES');
  });
});
