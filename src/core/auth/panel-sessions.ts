import { randomBytes, timingSafeEqual } from 'node:crypto';
import { authenticateClient, authenticateOperator, type Principal } from './auth.js';
import type { Core } from '../context.js';
import { hashSecret, parseKey, secretMatches } from './keys.js';

/**
 * The operator panel's sign-in sessions (D-75). A session names who signed in
 * and the stored hash of the credential used, never the credential: each
 * request checks that hash against the row as it is now, so a rotated key, a
 * deleted line or client, or a new operator token ends every session opened
 * with the old one. Sessions live in the store's key-value space, so any node
 * serves them; the cookie holds a random id, and the store only its hash.
 */
export const PANEL_SESSION = {
  /** Signed out after this long without a request. */
  idleMs: 30 * 60_000,
  /** Signed out this long after signing in, however active. */
  absoluteMs: 12 * 3_600_000,
  /** The idle deadline is moved forward at most this often (each move is a write). */
  touchEveryMs: 60_000,
  /** An open event stream (the panel's monitor) looks at its session this often, and ends when it no longer holds. */
  streamCheckMs: 5_000,
  /** How long a session's row outlives its end, saying why it ended (the sign-in page tells the person). */
  endedKeepMs: 24 * 3_600_000,
  namespace: 'panel-sesion',
} as const;

/**
 * Why a session ended, as the sign-in page says it: its credential no longer
 * holds (a rotated key, a deleted line or client, a new operator token), idle
 * past `idleMs`, past `absoluteMs` since sign-in, or signed out (in another tab).
 */
export const SESSION_ENDS = ['credential', 'idle', 'absolute', 'signed_out'] as const;
export type SessionEnd = (typeof SESSION_ENDS)[number];

/** What a session's row holds once it has ended: only the reason, until `endedKeepMs` passes. */
interface EndedSession {
  ended: SessionEnd;
}

export type PanelRole = 'operator' | 'client' | 'celular';

export interface PanelSession {
  role: PanelRole;
  clienteId?: number;
  celularId?: number;
  /** Which of the line's credentials signed in (a celular key, its gateway token or legacy token). */
  via?: 'key' | 'gateway_token' | 'legacy_token';
  /** The stored hash the session was opened with (operator token hash, key_hash, token hash). */
  credential: string;
  /** The form token every change must carry. */
  csrf: string;
  createdAt: number;
  seenAt: number;
}

/** A session id as the cookie carries it: 32 random bytes, base64url. */
export const newSessionId = (): string => randomBytes(32).toString('base64url');
const storeKey = (id: string): string => hashSecret(id);
const expiryOf = (s: PanelSession): number => Math.min(s.seenAt + PANEL_SESSION.idleMs, s.createdAt + PANEL_SESSION.absoluteMs);
/** The row is kept past the session's end, so a request after it learns why. */
const rowExpiry = (s: PanelSession): number => expiryOf(s) + PANEL_SESSION.endedKeepMs;
const endSession = (core: Pick<Core, 'store' | 'clock'>, key: string, why: SessionEnd): Promise<void> =>
  core.store.kvSet<EndedSession>(PANEL_SESSION.namespace, key, { ended: why }, core.clock.now() + PANEL_SESSION.endedKeepMs);

/**
 * Signs in with one credential: the operator token, a client key, a celular
 * key or a line's gateway or legacy token. The API's authentication and its
 * throttle decide; a refusal throws the API's error (401, 429).
 */
export async function signIn(
  core: Pick<Core, 'store' | 'counters' | 'clock' | 'config' | 'credentials'>,
  raw: string,
  ip: string,
): Promise<{ id: string; session: PanelSession }> {
  const credential = raw.trim();
  const now = core.clock.now();
  const base = { csrf: randomBytes(24).toString('base64url'), createdAt: now, seenAt: now };
  let session: PanelSession;
  if (parseKey(credential).kind === 'token' && secretMatches(credential, core.config.adminTokenHash)) {
    await authenticateOperator(core, credential, ip);
    session = { ...base, role: 'operator', credential: core.config.adminTokenHash };
  } else {
    const p = await authenticateClient(core, [credential], ip);
    session =
      p.kind === 'client'
        ? { ...base, role: 'client', clienteId: p.cliente.id, credential: p.cliente.key_hash }
        : { ...base, role: 'celular', clienteId: p.cliente.id, celularId: p.celular.id, via: p.via, credential: storedHashOf(p.celular, p.via) ?? '' };
  }
  const id = newSessionId();
  await core.store.kvSet(PANEL_SESSION.namespace, storeKey(id), session, rowExpiry(session));
  // Expired rows (sessions, used form tokens, secrets never shown) are swept a few at a time by the panel's own writes.
  await core.store.kvExpire(now, 32);
  return { id, session };
}

const storedHashOf = (
  c: { key_hash: string; gateway_token_hash: string | null; legacy_token_hash: string | null },
  via: 'key' | 'gateway_token' | 'legacy_token',
) => (via === 'key' ? c.key_hash : via === 'gateway_token' ? c.gateway_token_hash : c.legacy_token_hash);

const sameHash = (a: string | null | undefined, b: string): boolean => {
  if (!a) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export type Resumed = { session: PanelSession; principal: Principal };

/**
 * The session behind a cookie's id and who it acts as now; `{ ended }` when
 * it has ended (expired, or its credential no longer holds: the row then
 * keeps only the reason); null when the id is unknown. Moves the idle
 * deadline forward at most once a minute.
 */
export async function resumeOrEnded(core: Pick<Core, 'store' | 'clock' | 'config'>, id: string): Promise<Resumed | EndedSession | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
  const key = storeKey(id);
  const row = await core.store.kvGet<PanelSession | EndedSession>(PANEL_SESSION.namespace, key);
  if (!row) return null;
  if ('ended' in row) return row;
  const session = row;
  const now = core.clock.now();
  if (now >= expiryOf(session)) {
    const why: SessionEnd = now >= session.createdAt + PANEL_SESSION.absoluteMs ? 'absolute' : 'idle';
    await endSession(core, key, why);
    return { ended: why };
  }
  const principal = await principalOf(core, session);
  if (!principal) {
    await endSession(core, key, 'credential');
    return { ended: 'credential' };
  }
  if (now - session.seenAt >= PANEL_SESSION.touchEveryMs) {
    session.seenAt = now;
    await core.store.kvSet(PANEL_SESSION.namespace, key, session, rowExpiry(session));
  }
  return { session, principal };
}

/** The session and who it acts as now, or null (unknown or ended). */
export async function resumeSession(core: Pick<Core, 'store' | 'clock' | 'config'>, id: string): Promise<Resumed | null> {
  const r = await resumeOrEnded(core, id);
  return r && 'session' in r ? r : null;
}

async function principalOf(core: Pick<Core, 'store' | 'config'>, s: PanelSession): Promise<Principal | null> {
  if (s.role === 'operator') return sameHash(core.config.adminTokenHash, s.credential) ? { kind: 'operator' } : null;
  const cliente = s.clienteId === undefined ? null : await core.store.getCliente(s.clienteId);
  if (!cliente) return null;
  if (s.role === 'client') return sameHash(cliente.key_hash, s.credential) ? { kind: 'client', cliente } : null;
  const celular = s.celularId === undefined ? null : await core.store.getCelular(s.celularId);
  if (!celular || celular.cliente_id !== cliente.id || !s.via) return null;
  return sameHash(storedHashOf(celular, s.via), s.credential) ? { kind: 'celular', cliente, celular, via: s.via } : null;
}

/**
 * Whether a session still holds, for a long-lived response (the panel's
 * event stream, D-102): the same checks as resumeSession (expiry, the
 * credential as it is now), without moving the idle
 * deadline: a page left open on a stream is no sign of someone at it, so an
 * unattended monitor ends when the session would have.
 */
export async function sessionHolds(core: Pick<Core, 'store' | 'clock' | 'config'>, id: string): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return false;
  const session = await core.store.kvGet<PanelSession | EndedSession>(PANEL_SESSION.namespace, storeKey(id));
  // A row that only says why the session ended (signed out, key rotated) holds nothing.
  if (!session || 'ended' in session || core.clock.now() >= expiryOf(session)) return false;
  return (await principalOf(core, session)) !== null;
}

/**
 * Watches a session for a long-lived response: `end` is called once, at the
 * first look (every `everyMs`) that finds it no longer holding. Returns the
 * stop of the watch (the response ended first).
 */
export function watchSession(
  core: Pick<Core, 'store' | 'clock' | 'config'>,
  id: string,
  end: () => void,
  everyMs: number = PANEL_SESSION.streamCheckMs,
): () => void {
  let stopped = false;
  let looking = false;
  const timer = setInterval(() => {
    if (looking || stopped) return;
    looking = true;
    sessionHolds(core, id)
      .then((holds) => {
        if (holds || stopped) return;
        stop();
        end();
      })
      // A store that does not answer cannot show the session holds: the stream ends, the browser's reconnect asks again.
      .catch(() => {
        if (stopped) return;
        stop();
        end();
      })
      .finally(() => (looking = false));
  }, everyMs);
  timer.unref();
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  return stop;
}

/** Ends the session: its other tabs learn on their next request that it was signed out. */
export async function signOut(core: Pick<Core, 'store' | 'clock'>, id: string): Promise<void> {
  await endSession(core, storeKey(id), 'signed_out');
}

/** A form's token against the session's, in constant time. */
export function csrfMatches(session: PanelSession, presented: unknown): boolean {
  return typeof presented === 'string' && sameHash(session.csrf, presented);
}
