/**
 * The one poller of the tests: for what happens on its own time elsewhere (a
 * child process, a socket, a gateway's fake, a worker that is not stepped).
 * Where a clock can be injected, tests drive it instead of waiting.
 */
export interface UntilOptions {
  /** Gives up after this long (real time); 20 s unless given: a loaded 2-core machine is slow, and a passing wait ends at once. */
  timeoutMs?: number;
  /** Looks again after this long; 10 ms unless given. */
  stepMs?: number;
  /** What is awaited, for the failure message; a function is read when it fails (to say the last state seen). */
  what?: string | (() => string);
}

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Calls `fn` until it returns something truthy, and returns that. An error
 * `fn` throws ends the wait with that error. Fails after `timeoutMs` saying
 * what was awaited, for how long, and the last value seen.
 */
export async function until<T>(fn: () => T | Promise<T>, opts: UntilOptions = {}): Promise<Truthy<T>> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const stepMs = opts.stepMs ?? 10;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as Truthy<T>;
    if (Date.now() > end) {
      const what = typeof opts.what === 'function' ? opts.what() : (opts.what ?? 'a condition');
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last value: ${describe(v)})`);
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

function describe(v: unknown): string {
  if (typeof v !== 'object' || v === null) return String(v);
  const s = JSON.stringify(v);
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
}
