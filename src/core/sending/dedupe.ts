import { digest } from '../auth/digest.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import type { Tipo } from '../ports/model.js';

/**
 * Duplicate protection (docs/design.md §5): the same content to the same recipient
 * from the same line 3 times within 120 s blocks the line for 300 s, for every
 * send. Kept in the Counters port ("shared memory"), never in the database.
 */
export const DUPE_MAX = 3;
export const DUPE_WINDOW_MS = 120_000;
export const DUPE_BLOCK_MS = 300_000;

/** What makes two messages "the same", per type (docs/design.md §5: the content's identity). */
export interface Identity {
  tipo: Tipo;
  destinatario: string;
  /** Text, url+caption, url+filename, url, or the hash of decoded base64 bytes. */
  parts: Array<string | undefined>;
}

export function identityHash(id: Identity): string {
  return digest('md5', `${id.tipo}\u0000${id.destinatario}\u0000${id.parts.map((p) => p ?? '').join('\u0000')}`, 'hex');
}

const blockKey = (celularId: number) => `dupe:block:${celularId}`;
const countKey = (celularId: number, hash: string) => `dupe:${celularId}:${hash}`;

function blocked(secondsLeft: number): never {
  fail('DUPLICATE_BLOCK', 'duplicate message: sending is blocked for this celular', {
    retryAfter: secondsLeft,
    detalle: `the same message was sent ${DUPE_MAX} times within ${DUPE_WINDOW_MS / 1000} s; the celular is blocked for ${DUPE_BLOCK_MS / 1000} s; ${secondsLeft} s remaining`,
  });
}

/** Where shared counters also record a line's block (the store's kv, the block's end as its value). */
const BLOCKS_NS = 'dupe-block';

/**
 * Counts this send; refuses it (429, codigo 306) when the line is blocked or this is the 4th.
 *
 * Shared counters (Redis) that fail or time out answer from this node's
 * memory, where another node's block is missing: a block made there is also
 * written to the store, and read from it whenever the counters answered
 * degraded, so a known block holds through one slow command or an outage.
 * Counts meanwhile are per node, as documented.
 */
export async function checkDuplicate(
  core: Pick<Core, 'store' | 'counters' | 'clock'>,
  celularId: number,
  hash: string,
): Promise<{ count: number; release(): Promise<void> }> {
  const now = core.clock.now();
  const block = await core.counters.get(blockKey(celularId));
  if (block) blocked(Math.max(1, Math.ceil((block.resetAt - now) / 1000)));
  if (core.counters.degraded?.()) {
    const until = await core.store.kvGet<number>(BLOCKS_NS, String(celularId));
    if (until !== null && until > now) blocked(Math.max(1, Math.ceil((until - now) / 1000)));
  }
  const key = countKey(celularId, hash);
  const { count } = await core.counters.incr(key, DUPE_WINDOW_MS);
  if (count > DUPE_MAX) {
    await core.counters.decr(key);
    await core.counters.incr(blockKey(celularId), DUPE_BLOCK_MS);
    if (core.counters.degraded) {
      // Best effort: the counters hold the block; the store's copy is for when they cannot answer.
      const until = now + DUPE_BLOCK_MS;
      await core.store.kvSet(BLOCKS_NS, String(celularId), until, until).catch(() => undefined);
    }
    blocked(DUPE_BLOCK_MS / 1000);
  }
  // A send refused later (no balance, full queue) gives its count back.
  return { count, release: () => core.counters.decr(key) };
}
