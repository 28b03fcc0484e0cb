import { getCountryCallingCode, Metadata, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

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

/**
 * Numbers this process has already found canonical: given back as they are,
 * they are read the same way again (international first, on their digits
 * alone), so their parse is skipped. Most clients send the canonical form,
 * and the parse with full metadata was most of an accept's number handling.
 */
const canonical = new Map<string, CountryCode | undefined>();
const CANONICAL_MAX = 10_000;
const DIGITS = /^[0-9]{7,15}$/;

/** Read international first: no line country, or digits that start with its calling code (parseNumero's order). */
function internationalFirst(digits: string, defaultCountry: CountryCode | undefined): boolean {
  return defaultCountry === undefined || digits.startsWith(callingCode(defaultCountry));
}

/** A country's calling code, looked up once: libphonenumber builds a metadata object on every call, and every send asks. */
const callingCodes = new Map<CountryCode, string>();
function callingCode(country: CountryCode): string {
  let code = callingCodes.get(country);
  if (code === undefined) {
    code = getCountryCallingCode(country);
    callingCodes.set(country, code);
  }
  return code;
}

export function normalizeNumero(raw: string, defaultCountry?: CountryCode): NumeroResult {
  // Digits alone, read international first: what parseNumero would try first is all that is tried.
  const plain = typeof raw === 'string' && DIGITS.test(raw) && internationalFirst(raw, defaultCountry);
  if (!plain) return parseNumero(raw, defaultCountry);
  if (canonical.has(raw)) return { ok: true, numero: raw, country: canonical.get(raw) };
  // parseNumero's first reading for these digits; it depends on the digits alone, so it is the same for every line country.
  const r = asInternational(raw);
  if (!r) return parseNumero(raw, defaultCountry);
  if (r.numero === raw) {
    if (canonical.size >= CANONICAL_MAX) canonical.clear();
    canonical.set(raw, r.country);
  }
  return r;
}

type Found = Extract<NumeroResult, { ok: true }>;

/** Digits (without + or 00) read as a number with its country code, or null when that is not a valid number. */
function asInternational(digits: string): Found | null {
  const d = mexicanLegacyMobile(digits);
  const fast = fastInternational(d);
  return fast === undefined ? byLibrary(d) : fast;
}

/** libphonenumber's reading of `+digits` (exported for the test that proves fastInternational the same). */
export function byLibrary(digits: string): Found | null {
  const n = parsePhoneNumberFromString(`+${digits}`);
  return n?.isValid() ? { ok: true, numero: n.number.slice(1), country: n.country } : null;
}

/**
 * What libphonenumber answers for `+digits`, from its own metadata, in the
 * common case only (D-154): a calling code of one country, and digits after it
 * that its national prefix pattern does not match, so none is stripped. Then
 * its parse keeps those digits as the national number and that country, and
 * its isValid is the general pattern and one type's (lengths and pattern)
 * matching them: the same tests here, with each regular expression built once
 * (libphonenumber builds every one again on every call: most of its cost).
 * undefined: not that case, libphonenumber reads it. A property test holds it to
 * libphonenumber's answer over many numbers of every calling code.
 */
export function fastInternational(digits: string): Found | null | undefined {
  for (let i = 1; i <= 3 && i < digits.length; i++) {
    const plan = planOf(digits.slice(0, i));
    if (plan === undefined) continue;
    if (plan === null) return undefined;
    const national = digits.slice(i);
    if (national.length < 2 || national.length > 17 || plan.prefix?.test(national)) return undefined;
    return plan.valid(national) ? { ok: true, numero: digits, country: plan.country } : null;
  }
  return undefined;
}

interface Plan {
  country: CountryCode;
  /** The national prefix for parsing, anchored at the start (libphonenumber's extractNationalNumberFromPossiblyIncompleteNumber). */
  prefix: RegExp | null;
  /** libphonenumber's isValidNumber on a national number of this country (helpers/getNumberType.js). */
  valid: (national: string) => boolean;
}

/** libphonenumber's metadata API, beyond what its types declare. */
interface MetadataApi {
  hasCallingCode(code: string): boolean;
  getCountryCodesForCallingCode(code: string): string[] | undefined;
  selectNumberingPlan(countryOrCode: string): void;
  numberingPlan: { nationalPrefixForParsing(): string | undefined };
  nationalNumberPattern(): string;
  hasTypes(): boolean;
  type(t: string): { pattern(): string; possibleLengths(): number[] | undefined } | undefined;
}

/** getNumberType's order: any of them found makes a number valid. */
const TYPES = ['FIXED_LINE', 'MOBILE', 'PREMIUM_RATE', 'TOLL_FREE', 'SHARED_COST', 'VOIP', 'PERSONAL_NUMBER', 'PAGER', 'UAN', 'VOICEMAIL'];

/** By calling code: undefined when not one, null when not the fast path's case. */
const plans = new Map<string, Plan | null | undefined>();
function planOf(code: string): Plan | null | undefined {
  if (plans.has(code)) return plans.get(code);
  const plan = makePlan(code);
  plans.set(code, plan);
  return plan;
}

function makePlan(code: string): Plan | null | undefined {
  // Its metadata as its code uses it: the published types declare only part of the class.
  const made: object = new Metadata();
  const m = made as MetadataApi;
  if (!m.hasCallingCode(code)) return undefined;
  const countries = m.getCountryCodesForCallingCode(code);
  if (countries?.length !== 1 || countries[0] === '001') return null;
  m.selectNumberingPlan(code);
  const npfp = m.numberingPlan.nationalPrefixForParsing();
  const country = countries[0] as CountryCode;
  m.selectNumberingPlan(country);
  const entire = (pattern: string) => new RegExp(`^(?:${pattern})$`);
  const general = entire(m.nationalNumberPattern());
  const prefix = npfp ? new RegExp(`^(?:${npfp})`) : null;
  if (!m.hasTypes()) return { country, prefix, valid: (n) => general.test(n) };
  const types = TYPES.flatMap((t) => {
    const def = m.type(t);
    return def?.pattern() ? [{ re: entire(def.pattern()), lengths: def.possibleLengths() }] : [];
  });
  return {
    country,
    prefix,
    valid: (n) => general.test(n) && types.some((t) => (!t.lengths || t.lengths.includes(n.length)) && t.re.test(n)),
  };
}

/** The parse itself, without the canonical fast path (exported for the test that proves them equal). */
export function parseNumero(raw: string, defaultCountry?: CountryCode): NumeroResult {
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

  const asNational = () => {
    if (international || !defaultCountry) return null;
    const n = parsePhoneNumberFromString(digits, defaultCountry);
    return n?.isValid() ? ({ ok: true, numero: n.number.slice(1), country: n.country } as const) : null;
  };
  // Without + or 00, digits that do not start with the line's country code are read as a national
  // number of that country first: "477 234 5678" from a Mexican line is León, not Norway.
  const nationalFirst = !international && defaultCountry !== undefined && !digits.startsWith(callingCode(defaultCountry));
  const found = nationalFirst ? (asNational() ?? asInternational(digits)) : (asInternational(digits) ?? asNational());
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
