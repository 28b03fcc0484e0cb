import { checkThrottle, fingerprint, recordFailure, recordSuccess } from './auth-throttle.js';
import type { Core } from '../context.js';
import { AppError, fail } from '../api/errors.js';
import { hashSecret, parseKey, secretMatches } from './keys.js';
import type { CelularRow, ClienteRow } from '../ports/model.js';

/**
 * Who is calling (docs/design.md §3). Authority checks live here so that every route
 * asks the same questions the same way.
 */
export type Principal =
  | { kind: 'operator' }
  /** `operador`: the operator acting on this client's pages in the panel (audited as such). */
  | { kind: 'client'; cliente: ClienteRow; operador?: true }
  | { kind: 'celular'; cliente: ClienteRow; celular: CelularRow; via: 'key' | 'gateway_token' | 'legacy_token' };

export type ClientPrincipal = Exclude<Principal, { kind: 'operator' }>;

/**
 * Resolves one presented credential, or null when it is unknown. Never throws
 * for bad input. A success is cached for about a second under the
 * credential's hash (core/auth/credential-cache.ts); a hit is still checked
 * against the cached row's hash, and failures are never cached.
 */
async function resolveOne(core: Pick<Core, 'store' | 'credentials'>, raw: string): Promise<ClientPrincipal | null> {
  const keyHash = hashSecret(raw);
  const cached = core.credentials.get(keyHash);
  if (cached) return stillMatches(cached, raw, keyHash) ? cached : null;
  const gen = core.credentials.generation();
  const p = await lookupOne(core, raw);
  if (p) core.credentials.set(keyHash, p, gen);
  return p;
}

/** The cached principal's row still holds this credential's hash (the key is read from the raw credential, not trusted from the cache). */
function stillMatches(p: ClientPrincipal, raw: string, hash: string): boolean {
  const parsed = parseKey(raw);
  if (parsed.kind === 'client') return p.kind === 'client' && p.cliente.id === parsed.id && secretMatches(parsed.secret, p.cliente.key_hash);
  if (p.kind !== 'celular') return false;
  if (parsed.kind === 'celular') return p.via === 'key' && p.celular.id === parsed.id && secretMatches(parsed.secret, p.celular.key_hash);
  return p.via === 'gateway_token' ? p.celular.gateway_token_hash === hash : p.via === 'legacy_token' && p.celular.legacy_token_hash === hash;
}

async function lookupOne(core: Pick<Core, 'store'>, raw: string): Promise<ClientPrincipal | null> {
  const parsed = parseKey(raw);
  if (parsed.kind === 'client') {
    const cliente = await core.store.getCliente(parsed.id);
    return cliente && secretMatches(parsed.secret, cliente.key_hash) ? { kind: 'client', cliente } : null;
  }
  if (parsed.kind === 'celular') {
    const celular = await core.store.getCelular(parsed.id);
    if (!celular || !secretMatches(parsed.secret, celular.key_hash)) return null;
    const cliente = await core.store.getCliente(celular.cliente_id);
    return cliente ? { kind: 'celular', cliente, celular, via: 'key' } : null;
  }
  if (raw.length < 16 || raw.length > 128) return null;
  // Looked up by hash: the lookup time depends on the hash, not on how much of the token is right.
  const hash = hashSecret(raw);
  const celular = await core.store.getCelularByTokenHash(hash);
  if (!celular) return null;
  const cliente = await core.store.getCliente(celular.cliente_id);
  if (!cliente) return null;
  return { kind: 'celular', cliente, celular, via: celular.gateway_token_hash === hash ? 'gateway_token' : 'legacy_token' };
}

/**
 * Authenticates the keys presented in one request (Bearer header, body `key`,
 * query `key`). Several keys must be the same key, or a client key plus one of
 * that client's celular keys (the celular then names the line).
 */
export async function authenticateClient(
  core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>,
  presented: Array<string | undefined>,
  ip: string,
): Promise<ClientPrincipal> {
  const keys = [...new Set(presented.filter((k): k is string => typeof k === 'string' && k.trim() !== '').map((k) => k.trim()))];
  if (keys.length === 0) fail('UNAUTHORIZED', 'missing credential: send Authorization: Bearer <key> or the key field');
  const fp = fingerprint(keys);
  await checkThrottle(core, 'client', ip, fp);
  const p = await resolveAll(core, keys);
  if (typeof p === 'string') {
    await recordFailure(core, 'client', ip, fp);
    fail('UNAUTHORIZED', p, { credentialRejected: true });
  }
  await recordSuccess(core, 'client', ip, fp);
  return p;
}

/** The principal the keys name together, or why they do not. */
async function resolveAll(core: Pick<Core, 'store' | 'credentials'>, keys: string[]): Promise<ClientPrincipal | string> {
  const principals: ClientPrincipal[] = [];
  for (const k of keys) {
    const p = await resolveOne(core, k);
    if (!p) return 'invalid credential';
    principals.push(p);
  }
  if (principals.length === 1) return principals[0]!;
  const client = principals.find((p) => p.kind === 'client');
  const celulares = principals.filter((p): p is Extract<ClientPrincipal, { kind: 'celular' }> => p.kind === 'celular');
  const sameLine = celulares.every((c) => c.celular.id === celulares[0]?.celular.id);
  if (celulares.length >= 1 && sameLine && (!client || client.cliente.id === celulares[0]!.cliente.id)) {
    return celulares[0]!;
  }
  return 'the keys presented in this request name different lines or clients';
}

/** Operator failures are counted apart from clients': a client's stale key never locks the operator out. */
export async function authenticateOperator(core: Pick<Core, 'counters' | 'clock' | 'config'>, presented: string | undefined, ip: string): Promise<void> {
  if (!presented) fail('UNAUTHORIZED', 'missing operator token: send Authorization: Bearer <token>');
  const fp = fingerprint([presented]);
  await checkThrottle(core, 'operator', ip, fp);
  if (!secretMatches(presented, core.config.adminTokenHash)) {
    await recordFailure(core, 'operator', ip, fp);
    fail('UNAUTHORIZED', 'invalid operator token', { credentialRejected: true });
  }
  await recordSuccess(core, 'operator', ip, fp);
}

export function requireClientKey(p: ClientPrincipal, action: string): asserts p is Extract<ClientPrincipal, { kind: 'client' }> {
  if (p.kind !== 'client') fail('FORBIDDEN', `${action} needs the client key (WAC_...); a celular key may not do it`);
}

/** Writes (create, edit, link) need an active client; reads do not. */
export function requireActiveClient(p: ClientPrincipal): void {
  if (p.cliente.estado !== 'activo') fail('CLIENT_NOT_ACTIVE', `the client is ${p.cliente.estado}`);
}

/**
 * Loads a celular the principal may act on. Another client's celular is 404
 * (never leak that an id exists); a sibling line seen with a celular key is 403.
 */
export async function celularInScope(core: Pick<Core, 'store'>, p: ClientPrincipal, id: number): Promise<CelularRow> {
  const celular = await core.store.getCelular(id);
  if (!celular || celular.cliente_id !== p.cliente.id) fail('CELULAR_NOT_FOUND', `celular ${id} not found`);
  if (p.kind === 'celular' && p.celular.id !== celular.id) {
    throw new AppError('FORBIDDEN', `this celular key may act only on celular ${p.celular.id}`);
  }
  return celular;
}

/** The string written to audit records for who acted. */
export function actorOf(p: Principal): string {
  if (p.kind === 'operator') return 'operator';
  if (p.kind === 'client') return p.operador ? `operator(cliente:${p.cliente.id})` : `cliente:${p.cliente.id}`;
  return `celular:${p.celular.id}(${p.via})`;
}
