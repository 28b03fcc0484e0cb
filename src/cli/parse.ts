import { InvalidArgumentError } from 'commander';
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
