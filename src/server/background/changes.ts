import { CREDENTIALS_CHANNEL } from '../../core/auth/credential-cache.js';
import type { Core } from '../../core/context.js';

/** Which word of the buffer a thread counts its own changes in. */
export const REQUEST_THREAD = 0;
export const BACKGROUND_THREAD = 1;
type Side = typeof REQUEST_THREAD | typeof BACKGROUND_THREAD;

/** Two counts, one a thread, shared by serve's two threads on one SQLite file. */
export const newChangesBuffer = (): SharedArrayBuffer => new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);

/**
 * Serve's two threads on SQLite each cache lines and credentials (D-141), and
 * each thread's signals hear only its own writes. So each counts the line and
 * client changes it makes (every notice on its credentials channel, D-67,
 * sent right after the write commits) in its word, and its caches follow the
 * other's word: a moved count drops everything they kept, at their next read.
 * One atomic load a look-up; nothing waits for a message between threads.
 */
export function shareChanges(core: Pick<Core, 'signals' | 'lines' | 'credentials'>, buffer: SharedArrayBuffer, side: Side): () => void {
  const words = new Int32Array(buffer);
  const made = () => void Atomics.add(words, side, 1);
  const theirs = () => Atomics.load(words, 1 - side);
  core.lines.follow(theirs);
  core.credentials.follow(theirs);
  return core.signals.subscribe(CREDENTIALS_CHANNEL, { message: made, gap: made });
}
