import type { FastifyInstance, FastifyTypeProvider } from 'fastify';
import { Type, type Static, type TProperties, type TSchema } from 'typebox';

/**
 * Request schemas are written with TypeBox, so one schema validates the
 * request, documents it (OpenAPI) and types what the handler receives. Only
 * requests are typed: an answer is typed by the core function that builds it
 * and shaped on the way out by its response schema (plain JSON Schema).
 */
export interface RequestTypes extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: unknown;
}

/** The route group's instance, its handlers typed from their request schemas. */
export const typed = (app: FastifyInstance) => app.withTypeProvider<RequestTypes>();

/** OpenAPI 3.0's `nullable: true` (what Ajv and the document both read), typed as T | null. */
export const Nullable = <T extends TSchema>(t: T) => Type.Unsafe<Static<T> | null>({ ...t, nullable: true });

/** `{type: 'string', enum}` as the document has always said it, typed as the union of the values. */
export const StringEnum = <const V extends readonly string[]>(values: V, options: { description?: string; default?: V[number] } = {}) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: values, ...options });

/** A flag as the legacy API takes it: true/false, 1/0 or their strings (read by http.ts's boolish). */
export const Flag = (description = '1/true or 0/false') => Type.Unsafe<boolean | number | string>({ type: ['boolean', 'integer', 'string'], description });

/** `id` in the path (`/admin/clientes/:id`). */
export const IdParams = Type.Object({ id: Type.Integer({ minimum: 1 }) });

export { Type, type Static, type TProperties };
