import { GatewayFailure } from '../../core/ports/gateway.js';

/**
 * Every call into the library ends within `ms`: past it the caller gets a
 * transient failure (the call itself may still finish; `mayHaveSent` says
 * whether it could have reached the network).
 */
export async function within<T>(ms: number, what: string, p: Promise<T>, mayHaveSent = false): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new GatewayFailure(`${what}: no answer from the network within ${ms} ms`, 'transient', undefined, mayHaveSent)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
