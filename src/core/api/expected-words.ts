/**
 * What a request field expects, in words: a query filter refused by its
 * schema (`?page=0`, `?por_pagina=abc`, `?estado=bogus`) is told as the CLI
 * tells a bad flag and as core tells a bad day (`DAY_OR_INSTANT_EXPECTED`),
 * `field: "value": expected ...`, never in the validator's text. The API's
 * 400, the panel (beside its filter) and the CLI say it alike.
 */

/** The parts of a JSON schema the words are made of. */
export interface SchemaLike {
  type?: string | string[];
  enum?: readonly unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
}

const typesOf = (s: SchemaLike): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);

function range(s: SchemaLike, noun: string): string {
  const { minimum: min, maximum: max } = s;
  if (min !== undefined && max !== undefined) return `${noun} from ${min} to ${max}`;
  if (min !== undefined) return `${noun}, ${min} or more`;
  if (max !== undefined) return `${noun}, at most ${max}`;
  return noun;
}

/** What `schema` expects, as "expected ...", or null when it cannot be said (the validator's text is kept then). */
export function expectedOf(schema: SchemaLike | undefined): string | null {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return `expected one of ${schema.enum.map(String).join(', ')}`;
  const types = typesOf(schema);
  if (types.includes('integer')) return `expected ${range(schema, 'a whole number')}`;
  if (types.includes('number')) return `expected ${range(schema, 'a number')}`;
  if (types.includes('boolean')) return 'expected true or false (1 or 0)';
  if (types.includes('string')) {
    const { minLength: lo, maxLength: hi } = schema;
    if (schema.format === 'email') return 'expected an email address';
    if (lo !== undefined && lo > 0 && hi !== undefined) return `expected ${lo} to ${hi} characters${schema.pattern ? ' in the expected format' : ''}`;
    if (hi !== undefined && !schema.pattern) return `expected at most ${hi} characters`;
    if (lo === 1 && !schema.pattern) return 'expected a value, not an empty one';
    if (schema.pattern) return 'expected a value in the expected format';
  }
  return null;
}

/** A value as the refusal quotes it: cut, so a long one (or a pasted secret) does not fill the message. */
export function quoted(value: unknown): string {
  const s = Array.isArray(value) ? value.map(String).join(',') : String(value);
  return `"${s.length > 40 ? `${s.slice(0, 39)}…` : s}"`;
}

/** The refusal of one field's value: `name: "value": expected ...`, or null when the schema cannot be said in words. */
export function refusedInWords(name: string, value: unknown, schema: SchemaLike | undefined): string | null {
  const expected = expectedOf(schema);
  if (expected === null) return null;
  return value === undefined ? `${name}: ${expected}` : `${name}: ${quoted(value)}: ${expected}`;
}
