import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Backoff } from '../core/time/backoff.js';

/**
 * Webhook signatures of docs/design.md §7, as pure functions (time is an argument).
 * The key is the secret's UTF-8 bytes, so receivers using the Standard
 * Webhooks libraries pass the secret in raw format.
 */
export interface SignedHeaders {
  'x-service-signature': string;
  'webhook-signature': string;
}

export function sign(secret: string, id: string, timestampSec: number, body: string): SignedHeaders {
  const key = Buffer.from(secret, 'utf8');
  return {
    'x-service-signature': `sha256=${createHmac('sha256', key).update(body, 'utf8').digest('hex')}`,
    'webhook-signature': `v1,${createHmac('sha256', key).update(`${id}.${timestampSec}.${body}`, 'utf8').digest('base64')}`,
  };
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Checks the timestamp's freshness and both signatures, saying which fail; what a receiver (and `webhook listen`) does. */
export function verify(
  secret: string,
  headers: { id?: string; timestamp?: string; signature?: string; serviceSignature?: string },
  body: string,
  nowSec: number,
  toleranceSec = 300,
): { ok: true } | { ok: false; reason: string } {
  const { id, timestamp, signature, serviceSignature } = headers;
  if (!id || !timestamp || !signature || !serviceSignature) return { ok: false, reason: 'missing signature headers' };
  const ts = Number(timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowSec - ts) > toleranceSec) return { ok: false, reason: 'timestamp outside the tolerance' };
  const want = sign(secret, id, ts, body);
  const hexOk = same(want['x-service-signature'], serviceSignature);
  const v1Ok = signature.split(' ').some((s) => same(want['webhook-signature'], s));
  if (hexOk && v1Ok) return { ok: true };
  if (hexOk) return { ok: false, reason: 'webhook-signature does not match' };
  return { ok: false, reason: v1Ok ? 'X-Service-Signature does not match' : 'neither X-Service-Signature nor webhook-signature matches the secret' };
}

/** Delay before attempt n+1 (n = attempts made): base x [1, 60, 360, 1440, 3600, 7200, 7200], about a day at 5 s (±20%), then `fallido`. */
export const RETRY_FACTORS = [1, 60, 360, 1440, 3600, 7200, 7200] as const;

export const webhookBackoff = (baseMs: number): Backoff => ({ baseMs, factors: RETRY_FACTORS, past: 'stop' });

/**
 * A new signing secret (`webhook set --generate-secret`, a listener's): 32
 * random bytes as base64url (43 characters, no `whsec_` prefix: raw-format
 * secret), never starting with '-' (so it can be pasted after --secret).
 * Pure of server code, so the CLI imports it too.
 */
export function generateSecret(): string {
  for (;;) {
    const s = randomBytes(32).toString('base64url');
    if (!s.startsWith('-')) return s;
  }
}
