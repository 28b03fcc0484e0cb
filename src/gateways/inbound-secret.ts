import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Each instance gets its own inbound secret, derived from the server's
 * (`<data-dir>/gateway-secret` or PASARELA_GATEWAY_SECRET): a secret leaked
 * from one instance's webhook settings cannot forge calls for another line.
 */
export function instanceSecret(serverSecret: string, gateway: string, instancia: string): string {
  return createHmac('sha256', serverSecret).update(`${gateway}:${instancia}`).digest('hex');
}

/** Constant-time comparison of two strings (false when lengths differ). */
export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** First value of a header that may repeat. */
export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}
