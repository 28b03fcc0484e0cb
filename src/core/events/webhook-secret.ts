import { fail } from '../api/errors.js';
import { FIELD_LIMITS } from '../api/limits.js';

/**
 * A webhook signing secret as it may be set now (D-89), one rule for the API,
 * the CLI (checked before sending) and the panel (its hint is this text):
 * printable ASCII without spaces (it travels in config files and headers),
 * long enough that it cannot be guessed. A secret stored under the older rule
 * (any length) still signs every delivery: only a new set is checked.
 */
export const WEBHOOK_SECRET = { min: 24, max: FIELD_LIMITS.webhookSecret } as const;

export const WEBHOOK_SECRET_RULE = `${WEBHOOK_SECRET.min} to ${WEBHOOK_SECRET.max} printable ASCII characters, no spaces`;

const PRINTABLE = /^[\x21-\x7e]*$/;
const chars = (n: number): string => `${n} character${n === 1 ? '' : 's'}`;

/** Why `secret` may not be set, in words (after "secret: "), or null when it may. */
export function webhookSecretProblem(secret: unknown): string | null {
  if (typeof secret !== 'string') return `must be text: ${WEBHOOK_SECRET_RULE}`;
  if (!PRINTABLE.test(secret)) return `only printable ASCII characters, no spaces (${WEBHOOK_SECRET_RULE})`;
  if (secret.length < WEBHOOK_SECRET.min) return `${chars(secret.length)} is too short: ${WEBHOOK_SECRET_RULE}`;
  if (secret.length > WEBHOOK_SECRET.max) return `${chars(secret.length)} is too long: ${WEBHOOK_SECRET_RULE}`;
  return null;
}

/** The secret, or the API's 400 naming the field. */
export function checkWebhookSecret(secret: unknown): string {
  const problem = webhookSecretProblem(secret);
  if (problem) fail('INVALID_PARAMS', `secret: ${problem}`);
  return secret as string;
}
