import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Core } from '../context.js';
import { hashSecret } from './keys.js';

/**
 * A page shown once (D-90): a new key or secret is made by a POST, kept here
 * for one read, and shown by the GET the POST redirects to; a reload finds it
 * gone. It is sealed with a key derived from the panel session's id (which
 * only the browser's cookie holds; the store has its hash), so the row alone
 * reveals nothing and only the session that made it can open it.
 */
export const SHOWN_ONCE = {
  namespace: 'panel-mostrar',
  /** Not opened within this long (the redirect was lost), it is gone. */
  ttlMs: 10 * 60_000,
} as const;

interface Sealed {
  iv: string;
  data: string;
  tag: string;
  expira: number;
}

const sealKey = (sessionId: string, id: string): Buffer => createHmac('sha256', sessionId).update(`shown-once:${id}`).digest();

/** Keeps `value` for one read by this session; returns the id the page's URL carries. */
export async function stashShownOnce(core: Pick<Core, 'store' | 'clock'>, sessionId: string, value: unknown): Promise<string> {
  const id = randomBytes(18).toString('base64url');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(sessionId, id), iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  const expira = core.clock.now() + SHOWN_ONCE.ttlMs;
  const sealed: Sealed = { iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64'), expira };
  await core.store.kvSet(SHOWN_ONCE.namespace, hashSecret(id), sealed, expira);
  return id;
}

function open<T>(sessionId: string, id: string, s: Sealed): T | null {
  try {
    const d = createDecipheriv('aes-256-gcm', sealKey(sessionId, id), Buffer.from(s.iv, 'base64'));
    d.setAuthTag(Buffer.from(s.tag, 'base64'));
    return JSON.parse(Buffer.concat([d.update(Buffer.from(s.data, 'base64')), d.final()]).toString('utf8')) as T;
  } catch {
    return null;
  }
}

/**
 * The value, once: removed as it is read. Null when it was shown already,
 * expired, never existed, or is another session's (left for that session).
 */
export async function takeShownOnce<T>(core: Pick<Core, 'store' | 'clock'>, sessionId: string, id: string): Promise<T | null> {
  if (!/^[A-Za-z0-9_-]{24}$/.test(id)) return null;
  const key = hashSecret(id);
  const peek = await core.store.kvGet<Sealed>(SHOWN_ONCE.namespace, key);
  if (!peek || open(sessionId, id, peek) === null) return null;
  const taken = await core.store.kvTake<Sealed>(SHOWN_ONCE.namespace, key);
  if (!taken || taken.expira <= core.clock.now()) return null;
  return open<T>(sessionId, id, taken);
}
