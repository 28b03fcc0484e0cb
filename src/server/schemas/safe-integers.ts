import type { FastifyServerOptions } from 'fastify';

type AjvPlugins = NonNullable<NonNullable<FastifyServerOptions['ajv']>['plugins']>;
type AjvPlugin = Extract<AjvPlugins[number], (...args: never[]) => unknown>;
type Ajv = Parameters<AjvPlugin>[0];

/** The keyword every integer-typed part of a request schema is compiled with. */
export const SAFE_INTEGER_KEYWORD = 'safeInteger';

/** Keys whose values are data, not subschemas: left as they are. */
const DATA_KEYS = new Set(['enum', 'const', 'default', 'examples', 'example']);

const isIntegerTyped = (type: unknown) => type === 'integer' || (Array.isArray(type) && type.includes('integer'));

/**
 * A copy of `schema` whose integer-typed parts carry the safe-integer
 * keyword. The route's own schema is left as it is: it is also the source of
 * /openapi.json.
 */
export function withSafeIntegers<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((s: unknown) => withSafeIntegers(s)) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = DATA_KEYS.has(k) ? v : withSafeIntegers(v);
  if (isIntegerTyped(out.type)) out[SAFE_INTEGER_KEYWORD] = true;
  return out as T;
}

const rangeOf = (parent: { minimum?: unknown; maximum?: unknown }) => {
  const min = typeof parent.minimum === 'number' ? parent.minimum : -Number.MAX_SAFE_INTEGER;
  const max = typeof parent.maximum === 'number' ? parent.maximum : Number.MAX_SAFE_INTEGER;
  return `from ${min} to ${max}`;
};

/**
 * Ajv turns a numeric string into a number before it checks the schema's
 * bounds, and never checks the result again: "Infinity" and "1e999" become
 * Infinity, which `minimum` and `maximum` skip (they only look at finite
 * numbers), so they passed every integer field given as a string (a query
 * parameter, a form field, a quoted JSON value) and reached the store. This
 * plugin adds a keyword that refuses any number that is not an integer within
 * ±(2^53 − 1), whatever it was coerced from, and compiles every schema with
 * it on its integer-typed parts: one place for every field of every route.
 */
export const safeIntegers: AjvPlugin = (ajv: Ajv) => {
  const check = (_on: boolean, data: unknown, parent?: { minimum?: unknown; maximum?: unknown }): boolean => {
    if (typeof data !== 'number' || Number.isSafeInteger(data)) return true;
    check.errors = [{ keyword: SAFE_INTEGER_KEYWORD, message: `must be an integer ${rangeOf(parent ?? {})}`, params: {} }];
    return false;
  };
  check.errors = undefined as undefined | Array<{ keyword: string; message: string; params: Record<string, never> }>;
  ajv.addKeyword({ keyword: SAFE_INTEGER_KEYWORD, schemaType: 'boolean', errors: true, validate: check });
  const compile = ajv.compile.bind(ajv);
  ajv.compile = ((schema: unknown, meta?: boolean) => compile(withSafeIntegers(schema) as Parameters<typeof compile>[0], meta)) as typeof ajv.compile;
  return ajv;
};
