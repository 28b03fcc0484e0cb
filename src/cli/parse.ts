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
