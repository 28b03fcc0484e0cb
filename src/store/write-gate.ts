/**
 * Turns at the one SQLite write lock for the two connections of one
 * process: the request thread's and the background thread's
 * (server/background/). Left to SQLite, a writer that meets the lock sleeps
 * in the busy handler, 1 ms and more at a time, and on the request thread
 * that sleep stops every request. Here the request thread never sleeps: a
 * batch that finds the gate taken waits for it asynchronously (and the
 * writes asked for meanwhile join it); and it goes first: while it waits,
 * the background thread starts no new transaction.
 *
 * Two 32-bit words shared by both threads: the holder (0 free, 1 request
 * thread, 2 background thread) and "the request thread is waiting".
 */
export interface WriteGate {
  /** Takes the gate if it is free now (and, on the background thread, nobody with priority waits). */
  tryEnter(): boolean;
  /** Takes the gate, blocking this thread until it can. */
  enter(): void;
  /** Resolves once the gate may be free: try again then. Never blocks. */
  whenFree(): Promise<void>;
  leave(): void;
  /** The background thread blocks while waiting; the request thread waits with whenFree(). */
  readonly blocking: boolean;
}

const HOLDER = 0;
const WAITING = 1;
const FREE = 0;
const MAIN = 1;
const BACKGROUND = 2;
/** The longest one blocking wait lasts before the words are looked at again. */
const SLICE_MS = 5;
/** The longest the background thread yields to a waiting request thread that does not come (its loop is busy). */
const YIELD_MAX_MS = 50;

export function newGateBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(8);
}

/** The request thread's side of the gate. */
export function mainGate(buffer: SharedArrayBuffer): WriteGate {
  const w = new Int32Array(buffer);
  const tryEnter = (): boolean => {
    if (Atomics.compareExchange(w, HOLDER, FREE, MAIN) === FREE) {
      Atomics.store(w, WAITING, 0);
      return true;
    }
    Atomics.store(w, WAITING, 1);
    return false;
  };
  return {
    blocking: false,
    tryEnter,
    enter() {
      while (!tryEnter()) Atomics.wait(w, HOLDER, BACKGROUND, SLICE_MS);
    },
    async whenFree() {
      const r = Atomics.waitAsync(w, HOLDER, BACKGROUND, SLICE_MS * 10);
      if (r.async) await r.value;
    },
    leave() {
      Atomics.store(w, HOLDER, FREE);
      Atomics.notify(w, HOLDER);
    },
  };
}

/** The background thread's side: it may block, and it lets a waiting request thread go first. */
export function backgroundGate(buffer: SharedArrayBuffer): WriteGate {
  const w = new Int32Array(buffer);
  const take = () => Atomics.compareExchange(w, HOLDER, FREE, BACKGROUND) === FREE;
  return {
    blocking: true,
    tryEnter: () => Atomics.load(w, WAITING) === 0 && take(),
    enter() {
      const t0 = performance.now();
      for (;;) {
        const yielding = Atomics.load(w, WAITING) === 1 && performance.now() - t0 < YIELD_MAX_MS;
        if (!yielding && take()) return;
        // Held by the request thread, or it waits for its turn: sleep until the holder changes, a slice at most.
        Atomics.wait(w, HOLDER, yielding ? Atomics.load(w, HOLDER) : MAIN, SLICE_MS);
      }
    },
    whenFree: async () => undefined,
    leave() {
      Atomics.store(w, HOLDER, FREE);
      Atomics.notify(w, HOLDER);
    },
  };
}

/** The background thread died holding the gate (killed mid-transaction): the request thread takes its turns back. */
export function freeDeadHolder(buffer: SharedArrayBuffer): void {
  const w = new Int32Array(buffer);
  if (Atomics.compareExchange(w, HOLDER, BACKGROUND, FREE) === BACKGROUND) Atomics.notify(w, HOLDER);
}
