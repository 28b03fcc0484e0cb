import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, preValidationAsyncHookHandler } from 'fastify';
import { authenticateClient, authenticateOperator, type ClientPrincipal } from '../core/auth/auth.js';
import type { Core } from '../core/context.js';
import { fail } from '../core/api/errors.js';
import { toText } from '../core/api/to-text.js';

/** Small helpers shared by route groups: credentials, ids, and the success envelope. */

declare module 'fastify' {
  interface FastifyRequest {
    principal?: ClientPrincipal;
    /** The keys `principal` was verified with (see authenticateOnce). */
    verifiedWith?: string;
  }
}

type Fields = Record<string, unknown>;

export function bodyOf(req: FastifyRequest): Fields {
  return req.body && typeof req.body === 'object' ? (req.body as Fields) : {};
}

export function queryOf(req: FastifyRequest): Fields {
  return (req.query ?? {}) as Fields;
}

/** An RFC 7235 credential in some scheme: a token (the scheme), white space, then the credentials. */
const OTHER_SCHEME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\s+\S/;

/**
 * The credential of the Authorization header: `Bearer <key>`, or a bare key
 * (no scheme: no key has a space). Another scheme (`Basic ...`, say a proxy's
 * login) is no credential of pasarela's: none from the header, so a key in
 * the body or query still counts, and alone it is a 401 for a missing
 * credential (no `invalid_token`, RFC 6750 §3.1).
 */
function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  if (m) return m[1];
  if (OTHER_SCHEME.test(h.trim())) return undefined;
  return h.trim();
}

/** A credential field; a repeated one (`?key=A&key=A`) counts once per distinct value. */
const strs = (v: unknown): string[] => (typeof v === 'string' ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * Verifies the keys presented, once per request: a route that checks a key
 * before its body (or while reading it) and again after parsing presents the
 * same keys twice, and the second check would repeat the lookups and hash.
 */
export async function authenticateOnce(
  core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>,
  req: FastifyRequest,
  presented: Array<string | undefined>,
): Promise<ClientPrincipal> {
  const keys = JSON.stringify(presented);
  if (req.principal && req.verifiedWith === keys) return req.principal;
  req.principal = await authenticateClient(core, presented, req.ip);
  req.verifiedWith = keys;
  return req.principal;
}

/** Authenticates a client or celular credential from the header, body `key` or query `key`. */
export function clientAuth(core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>): preValidationAsyncHookHandler {
  return async (req) => {
    await authenticateOnce(core, req, [bearer(req), ...strs(bodyOf(req).key), ...strs(queryOf(req).key)]);
  };
}

/**
 * For routes whose bodies may be large: a key in the header or query is
 * verified before any body byte is read (401 at once), and the body then
 * no longer counts as unauthenticated. Without one, the body may carry it.
 */
export function clientAuthBeforeBody(core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>): onRequestAsyncHookHandler {
  return async (req) => {
    const presented = [bearer(req), ...strs(queryOf(req).key)];
    if (!presented.some((k) => k !== undefined && k.trim() !== '')) return;
    await authenticateOnce(core, req, presented);
  };
}

/** A body `key` met while the body is still arriving, verified with the header's and query's. */
export async function verifyBodyKey(
  core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>,
  req: FastifyRequest,
  key: string,
): Promise<void> {
  await authenticateOnce(core, req, [bearer(req), key, ...strs(queryOf(req).key)]);
}

export function operatorAuth(core: Pick<Core, 'counters' | 'clock' | 'config'>): preValidationAsyncHookHandler {
  return async (req) => {
    await authenticateOperator(core, bearer(req), req.ip);
  };
}

export function principal(req: FastifyRequest): ClientPrincipal {
  return req.principal ?? fail('UNAUTHORIZED', 'missing credential');
}

export interface SuccessMeta {
  descripcion?: string;
  saldo?: number | null;
}

/** The success envelope of docs/design.md §4 around a route's data. */
export function success<T extends object>(data: T, meta: SuccessMeta = {}) {
  const descripcion = meta.descripcion ?? 'OK';
  return {
    ok: true as const,
    api_codigo: 0,
    api_texto: 'OK',
    api_descripcion: descripcion,
    texto: descripcion,
    desc: descripcion,
    saldo: meta.saldo ?? null,
    ...data,
  };
}

export function created<T extends object>(reply: FastifyReply, data: T, meta: SuccessMeta = {}) {
  reply.code(201);
  return success(data, meta);
}

/** `1`, `true`, `on`, `yes` are true; `0`, `false`, empty or absent are false; anything else is a 400. */
export function boolish(value: unknown, name: string): boolean {
  if (value === undefined || value === null || value === '' || value === false || value === 0) return false;
  if (value === true || value === 1) return true;
  const s = toText(value).trim().toLowerCase();
  if (['1', 'true', 'on', 'yes', 'si', 'sí'].includes(s)) return true;
  if (['0', 'false', 'off', 'no'].includes(s)) return false;
  return fail('INVALID_PARAMS', `${name} must be 1 or 0 (true or false), not "${toText(value)}"`);
}
