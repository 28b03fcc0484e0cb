import { getCountryCallingCode, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

/**
 * Phone numbers in and out of the service: digits only, country code first, no
 * `+` (docs/design.md §5). Validation uses libphonenumber's full metadata so a
 * number that cannot exist is refused with a reason instead of reaching the
 * gateway.
 */
export type NumeroResult = { ok: true; numero: string; country: CountryCode | undefined } | { ok: false; reason: string };

const SEPARATORS = /[\s\-.()/]/g;

/**
 * Mexican mobiles were dialled as +52 1 XXXXXXXXXX until 2019 and many systems
 * still send the `1`. The network knows them as +52 XXXXXXXXXX.
 */
function mexicanLegacyMobile(digits: string): string {
  return digits.length === 13 && digits.startsWith('521') ? `52${digits.slice(3)}` : digits;
}

export function normalizeNumero(raw: string, defaultCountry?: CountryCode): NumeroResult {
  const compact = String(raw ?? '')
    .trim()
    .replace(SEPARATORS, '');
  if (compact === '') return { ok: false, reason: 'the number is empty' };
  let international = false;
  let digits = compact;
  if (digits.startsWith('+')) {
    international = true;
    digits = digits.slice(1);
  } else if (digits.startsWith('00')) {
    international = true;
    digits = digits.slice(2);
  }
  if (!/^[0-9]+$/.test(digits)) return { ok: false, reason: `"${raw}" has characters other than digits, +, spaces and punctuation` };
  if (digits.length < 7 || digits.length > 15) return { ok: false, reason: `"${raw}" has ${digits.length} digits; a phone number has 7 to 15` };

  const asInternational = () => {
    const n = parsePhoneNumberFromString(`+${mexicanLegacyMobile(digits)}`);
    return n?.isValid() ? ({ ok: true, numero: n.number.slice(1), country: n.country } as const) : null;
  };
  const asNational = () => {
    if (international || !defaultCountry) return null;
    const n = parsePhoneNumberFromString(digits, defaultCountry);
    return n?.isValid() ? ({ ok: true, numero: n.number.slice(1), country: n.country } as const) : null;
  };
  // Without + or 00, digits that do not start with the line's country code are read as a national
  // number of that country first: "477 234 5678" from a Mexican line is León, not Norway.
  const nationalFirst = !international && defaultCountry !== undefined && !digits.startsWith(getCountryCallingCode(defaultCountry));
  const found = nationalFirst ? (asNational() ?? asInternational()) : (asInternational() ?? asNational());
  if (found) return found;
  return {
    ok: false,
    reason: defaultCountry
      ? `"${raw}" is not a valid number, neither with its country code nor as a national number of ${defaultCountry}`
      : `"${raw}" is not a valid number with country code (for example 5215512345678 or 14155552671)`,
  };
}

/** Parsed once per line, not per send: parsing with full metadata was a tenth of an accept's CPU. */
const countries = new Map<string, CountryCode | undefined>();
const COUNTRIES_MAX = 10_000;

/** The country of a stored, normalised number; used to read bare national recipients. */
export function countryOf(numero: string): CountryCode | undefined {
  if (countries.has(numero)) return countries.get(numero);
  const country = parsePhoneNumberFromString(`+${numero}`)?.country;
  if (countries.size >= COUNTRIES_MAX) countries.clear();
  countries.set(numero, country);
  return country;
}
