import { randomBytes, timingSafeEqual } from 'node:crypto';
import { digest } from './digest.js';

/**
 * Credential formats of docs/design.md §3. Secrets are 32 random bytes, so a plain
 * SHA-256 is a sufficient one-way store (no password stretching needed).
 */

export type ParsedKey = { kind: 'client'; id: number; secret: string } | { kind: 'celular'; id: number; secret: string } | { kind: 'token'; token: string };

const KEY_RE = /^(WAC|WA)_([1-9][0-9]{0,15})_([A-Za-z0-9_-]{16,128})$/;

export function parseKey(raw: string): ParsedKey {
  const m = KEY_RE.exec(raw);
  if (!m) return { kind: 'token', token: raw };
  const id = Number(m[2]);
  return m[1] === 'WAC' ? { kind: 'client', id, secret: m[3]! } : { kind: 'celular', id, secret: m[3]! };
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function clientKey(id: number, secret: string): string {
  return `WAC_${id}_${secret}`;
}

export function celularKey(id: number, secret: string): string {
  return `WA_${id}_${secret}`;
}

/** 64 lowercase hex characters, the gateway token's shape (docs/design.md §3). */
export function newGatewayToken(): string {
  return randomBytes(32).toString('hex');
}

export function hashSecret(secret: string): string {
  return digest('sha256', secret, 'hex');
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(secret: string, storedHash: string | null | undefined): boolean {
  if (!storedHash) return false;
  const a = digest('sha256', secret, 'buffer');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A legacy token is any printable ASCII of 16 to 128 characters without spaces. */
export const LEGACY_TOKEN_RE = /^[\x21-\x7e]{16,128}$/;
