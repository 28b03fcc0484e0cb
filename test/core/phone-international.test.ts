import { getCountries, getCountryCallingCode, getExampleNumber } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { describe, expect, it } from 'vitest';
import { byLibrary, fastInternational } from '../../src/core/accounts/phone.js';

/**
 * fastInternational (core/accounts/phone.ts, D-154) answers what libphonenumber
 * answers for `+digits`, or nothing: over every calling code, random digits of
 * every length a number may have after it, and every country's example mobile
 * with its last digits changed (mostly valid numbers), from a fixed seed.
 */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function inputs(): string[] {
  const rnd = seeded(39);
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(rnd() * 10)).join('');
  const out = new Set<string>();
  const codes = new Set(getCountries().map((c) => getCountryCallingCode(c)));
  for (const cc of codes) for (let len = 7; len <= 15; len++) for (let k = 0; k < 60 && len > cc.length; k++) out.add(cc + digits(len - cc.length));
  for (const country of getCountries()) {
    const n = getExampleNumber(country, examples);
    if (!n) continue;
    const e164 = n.number.slice(1);
    out.add(e164);
    for (let k = 0; k < 150; k++) {
      const keep = e164.length - 1 - Math.floor(rnd() * Math.min(6, e164.length - 2));
      out.add(e164.slice(0, keep) + digits(e164.length - keep));
    }
  }
  for (const s of ['5215512345678', '525512345678', '14155552671', '79161234567', '447911123456', '0123456789', '8001234567']) out.add(s);
  return [...out];
}

describe('fastInternational', () => {
  it("answers libphonenumber's reading of every number it answers, and answers most", () => {
    const all = inputs();
    let answered = 0;
    let valid = 0;
    for (const d of all) {
      const fast = fastInternational(d);
      if (fast === undefined) continue;
      const lib = byLibrary(d);
      if (fast === null ? lib !== null : lib === null || lib.numero !== fast.numero || lib.country !== fast.country)
        expect({ d, fast }).toEqual({ d, fast: lib });
      answered++;
      if (fast) valid++;
    }
    expect(all.length).toBeGreaterThan(100_000);
    expect(answered).toBeGreaterThan(all.length / 2);
    expect(valid).toBeGreaterThan(5_000);
  });

  it('answers nothing for what it does not read alone: a shared calling code, a national prefix', () => {
    expect(fastInternational('14155552671')).toBeUndefined();
    expect(fastInternational('79161234567')).toBeUndefined();
    expect(fastInternational('525512345678')).toEqual({ ok: true, numero: '525512345678', country: 'MX' });
  });
});
