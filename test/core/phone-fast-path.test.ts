import { getCountries, getCountryCallingCode, getExampleNumber, type CountryCode } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { normalizeNumero, parseNumero } from '../../src/core/accounts/phone.js';

/**
 * normalizeNumero's fast path for numbers already canonical (core/accounts/phone.ts)
 * gives what the parse gives: every country's example mobile in every form a
 * client sends it, read from lines of many countries, twice (the second
 * reading is the fast one), against the parse alone.
 */
function inputs(): string[] {
  const out = new Set<string>();
  for (const country of getCountries()) {
    const n = getExampleNumber(country, examples);
    if (!n) continue;
    const e164 = n.number.slice(1);
    const cc = getCountryCallingCode(country);
    const national = String(n.nationalNumber);
    for (const s of [
      e164,
      `+${e164}`,
      `00${e164}`,
      ` ${e164} `,
      n.formatInternational(),
      n.formatNational(),
      national,
      `0${national}`,
      e164.slice(0, -1),
      `${e164}0`,
      `${cc}1${national}`,
      `${cc}0${national}`,
    ])
      out.add(s);
  }
  for (const s of [
    '5215512345678',
    '525512345678',
    '14155552671',
    '4155552671',
    '1234567',
    '123456789012345',
    '1234567890123456',
    '0000000',
    '77012345678',
    '79161234567',
    '447911123456',
    '441481712345',
    '16135550123',
    '18095551234',
    '5491123456789',
    '541123456789',
    '',
    'abc',
  ])
    out.add(s);
  return [...out];
}

// After the first country, canonical digits are found by the fast path for lines of the others.
const LINE_COUNTRIES: Array<CountryCode | undefined> = [undefined, 'MX', 'US', 'GB', 'RU', 'KZ'];

describe('normalizeNumero: the canonical fast path', () => {
  it('gives what the parse gives, for every input and line country, on a first and a repeated reading', () => {
    const all = inputs();
    expect(all.length).toBeGreaterThan(2_000);
    let compared = 0;
    for (const dc of LINE_COUNTRIES) {
      for (const raw of all) {
        const slow = parseNumero(raw, dc);
        const first = normalizeNumero(raw, dc);
        const again = normalizeNumero(raw, dc);
        if (!isDeepStrictEqual(first, slow) || !isDeepStrictEqual(again, slow))
          expect({ raw, dc, first, again }).toEqual({ raw, dc, first: slow, again: slow });
        compared++;
      }
    }
    expect(compared).toBe(all.length * LINE_COUNTRIES.length);
  });
});
