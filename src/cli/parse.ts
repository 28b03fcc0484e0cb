import { InvalidArgumentError } from 'commander';
import { isIP } from 'node:net';
import { usage } from './exit-codes.js';

/** Argument parsers for commander: a bad value is a usage error (exit 2). */
export function int(min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^-?[0-9]+$/.test(value.trim())) throw new InvalidArgumentError('not an integer');
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`must be from ${min} to ${max}`);
    return n;
  };
}

export const positiveInt = int(1);

/** An integer, or `none` for null (caps that may be removed). */
export function intOrNone(min: number, max: number) {
  const parse = int(min, max);
  return (value: string): number | null => (value === 'none' || value === 'null' ? null : parse(value));
}

/** For positional ids parsed inside an action: a bad one is a usage error with its name. */
export function idArg(value: string, name = 'id'): number {
  try {
    return positiveInt(value);
  } catch (err) {
    throw usage(`${name} "${value}": ${(err as Error).message}; expected a positive integer`);
  }
}

/** HOST:PORT, [IPv6]:PORT or :PORT (every address), as `--metrics-listen` takes it; empty for none. */
export function hostPort(value: string): { host: string; port: number } | null {
  if (value.trim() === '') return null;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]*)):([0-9]{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new InvalidArgumentError('expected HOST:PORT, [IPv6]:PORT or :PORT (port 0 to 65535)');
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** A URL of one of `protocols` with a host. A refusal never echoes the URL's password. */
export function serviceUrl(flag: string, v: string, protocols: RegExp, expected: string): string {
  const t = v.trim();
  let u: URL | undefined;
  try {
    u = new URL(t);
  } catch {
    u = undefined;
  }
  if (!u || !protocols.test(u.protocol) || !u.hostname) {
    throw usage(`${flag}: "${t.replace(/\/\/[^@/]*@/, '//***@')}" is not ${expected}`);
  }
  return t;
}

/** A flag that is either a plain word (the built-in default) or such a URL: --counters memory|redis://..., --store sqlite|postgres://... */
export function wordOrUrl(flag: string, v: string, word: string, protocols: RegExp, example: string): string {
  const t = v.trim();
  if (t === '' || t.toLowerCase() === word) return word;
  return serviceUrl(flag, t, protocols, `"${word}" nor ${example}`);
}

/**
 * Checks that mirror the server's patterns and ranges, so a value it would
 * refuse is a usage error (exit 2) naming the flag, before any request. Each
 * is a commander parser (throws InvalidArgumentError; commander names the
 * option); `checkArg` applies one to a positional argument.
 */

/** A positional argument through a parser: a refusal names the argument. */
export function checkArg<T>(name: string, value: string, parse: (v: string) => T): T {
  try {
    return parse(value);
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw usage(`${name} "${value}": ${err.message}`);
    throw err;
  }
}

/** Characters as the server counts them (code points), not UTF-16 units. */
const chars = (s: string) => [...s].length;

/** Text of `min` to `max` characters. */
export function text(min: number, max: number) {
  return (value: string): string => {
    const n = chars(value);
    if (n < min) throw new InvalidArgumentError(min === 1 ? 'must not be empty' : `at least ${min} characters`);
    if (n > max) throw new InvalidArgumentError(`at most ${max} characters (this one has ${n})`);
    return value;
  };
}

/**
 * A time of day for --desde/--hasta: H:MM, HH:MM or HH:MM:SS, sent as
 * HH:MM[:SS] (the server's pattern wants two-digit hours).
 */
export function hora(value: string): string {
  const m = /^([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?$/.exec(value.trim());
  if (m && Number(m[1]) <= 23 && Number(m[2]) <= 59 && (m[3] === undefined || Number(m[3]) <= 59)) {
    return `${m[1]!.padStart(2, '0')}:${m[2]}${m[3] !== undefined ? `:${m[3]}` : ''}`;
  }
  throw new InvalidArgumentError('expected a time of day H:MM or HH:MM from 00:00 to 23:59, such as 8:00 or 20:30');
}

/**
 * A phone number as the server first checks it: digits with optional +/00,
 * spaces and punctuation, 7 to 15 digits. Whether the number exists is the
 * server's call (it knows the line's country).
 */
export function phone(maxLength = 32) {
  return (value: string): string => {
    const compact = value.trim().replace(/[\s\-.()/]/g, '');
    const digits = compact.replace(/^(\+|00)/, '');
    if (value.length > maxLength || !/^[0-9]{7,15}$/.test(digits)) {
      throw new InvalidArgumentError('expected a phone number with its country code, 7 to 15 digits, such as 5215512345678 (+, spaces and dashes are fine)');
    }
    return value;
  };
}

/** A sender: a phone number as phone() takes it, or a gateway contact id (`…@lid`), printable ASCII without spaces, as is. */
export function sender(maxLength = 32) {
  const number = phone(maxLength);
  return (value: string): string => {
    if (!value.includes('@')) return number(value);
    if (value.length > maxLength || !/^[\x21-\x7e]+@[\x21-\x7e]+$/.test(value)) {
      throw new InvalidArgumentError(
        `expected a phone number with its country code, or a contact id such as 123456789012345@lid (at most ${maxLength} characters, no spaces)`,
      );
    }
    return value;
  };
}

/** Printable ASCII without spaces (secrets, tokens, keys), `min` to `max` characters. */
export function token(min: number, max: number) {
  return (value: string): string => {
    if (!/^[\x21-\x7e]*$/.test(value)) throw new InvalidArgumentError('printable ASCII characters only, no spaces');
    if (value.length < min || value.length > max)
      throw new InvalidArgumentError(`${min === max ? min : `${min} to ${max}`} characters (this one has ${value.length})`);
    return value;
  };
}

/**
 * An Idempotency-Key: 1 to 255 printable ASCII characters; spaces only
 * inside (HTTP would trim them from the ends and change the key).
 */
export function idempotencyKey(value: string): string {
  if (!/^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/.test(value)) {
    throw new InvalidArgumentError('expected 1 to 255 printable ASCII characters, with no space at either end');
  }
  return value;
}

/** An http(s) URL with a host, at most `maxLength` characters. */
export function httpUrl(maxLength: number) {
  return (value: string): string => {
    let u: URL | undefined;
    try {
      u = new URL(value.trim());
    } catch {
      u = undefined;
    }
    if (!u || !/^https?:$/.test(u.protocol) || !u.hostname) throw new InvalidArgumentError('expected an http:// or https:// URL');
    if (value.length > maxLength) throw new InvalidArgumentError(`at most ${maxLength} characters`);
    return value.trim();
  };
}

/** An email address, roughly (the server has the last word), at most 254 characters. */
export function email(value: string): string {
  if (value.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) throw new InvalidArgumentError('expected an email address such as ana@example.com');
  return value;
}

/** A name of a gateway server (the server's SERVER_NAME_PATTERN). */
export function serverName(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(value)) {
    throw new InvalidArgumentError('1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit');
  }
  return value;
}

/** Names proxy-addr (Fastify's trustProxy) takes for ranges. */
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** One trusted proxy: an address, ADDRESS/BITS, IPv4/NETMASK, or one of PROXY_RANGES. */
function proxyAddress(v: string): boolean {
  if (PROXY_RANGES.has(v)) return true;
  const [addr = '', bits, ...rest] = v.split('/');
  const family = isIP(addr);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  if (family === 4 && isIP(bits) === 4) return true;
  return /^[0-9]{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/**
 * `--trust-proxy`'s value: a hop count (1 to 100) or a comma list of trusted
 * proxy addresses and ranges. Given with no value, commander passes no value
 * here and the flag means one hop (cli/commands/serve.ts).
 */
export function trustProxy(value: string): number | string[] {
  const t = value.trim();
  if (/^[0-9]+$/.test(t)) {
    const n = Number(t);
    if (n < 1 || n > 100) throw new InvalidArgumentError('a hop count must be from 1 to 100');
    return n;
  }
  const list = t
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  const bad = list.find((a) => !proxyAddress(a));
  if (list.length === 0 || bad !== undefined)
    throw new InvalidArgumentError(
      `${bad === undefined ? 'empty' : `"${bad}" is not an address`}: expected a hop count, or proxy addresses and CIDR ranges separated by commas (10.0.0.0/8,::1; also loopback, linklocal, uniquelocal)`,
    );
  return list;
}
