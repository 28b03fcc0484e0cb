import type { Core } from '../context.js';
import { CREDENTIALS_CHANNEL, targetPayload, type CredentialTarget } from './credential-cache.js';

/**
 * Called after a committed write that changes what a cached principal says
 * (a key, an estado, a plan, caps, hours, the line's session or server, the
 * line's existence): this node drops it at once, the others when the signal
 * arrives (within the TTL if it never does).
 */
export function invalidateCredentials(core: Pick<Core, 'signals'>, target: CredentialTarget): Promise<void> {
  return core.signals.publish(CREDENTIALS_CHANNEL, targetPayload(target));
}
