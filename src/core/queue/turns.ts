import { AppError } from '../api/errors.js';

/**
 * Group commit: calls that arrive while a turn is running wait for the next
 * turn and go in it together, so one transaction (and one commit) carries
 * them all. A call that finds a turn free starts one at once: at a thin load
 * every call is a turn of its own and waits for no company; under load the
 * turns grow to what arrives while one runs, up to `max`.
 */
export class Turns<I, O> {
  private waiting: Array<{ item: I; resolve: (o: O) => void; reject: (err: unknown) => void }> = [];
  private running = 0;

  constructor(
    /** Works one turn: an outcome per item, in order. Throwing fails every item of the turn. */
    private readonly work: (items: I[]) => Promise<Array<PromiseSettledResult<O>>>,
    private readonly opts: { max: number; concurrent: number },
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.running < this.opts.concurrent && this.waiting.length > 0) {
      const turn = this.waiting.splice(0, this.opts.max);
      this.running++;
      void this.work(turn.map((w) => w.item))
        .then(
          (out) =>
            turn.forEach((w, i) => {
              const o = out[i]!;
              if (o.status === 'fulfilled') w.resolve(o.value);
              else w.reject(o.reason);
            }),
          (err: unknown) => turn.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          this.running--;
          this.next();
        });
    }
  }
}

/** A call's outcome as a settled result, so a turn's fallback can answer each call alone. */
export async function settle<T>(p: () => Promise<T>): Promise<PromiseSettledResult<T>> {
  try {
    return { status: 'fulfilled', value: await p() };
  } catch (reason) {
    return { status: 'rejected', reason };
  }
}

/**
 * Group commit over a statement that takes arrays: the calls arriving while
 * one turn runs go in the next (Turns, above). An item whose key was
 * named before in the turn goes after it, alone, so the two apply one after
 * the other (`key` null: items never clash). A turn that fails for any reason
 * but the store itself runs each item alone through the same function, in
 * arrival order: one bad message must not fail the others.
 */
export function batched<I, O>(key: ((i: I) => string) | null, run: (items: I[]) => Promise<O[]>) {
  const one = (i: I) => settle(async () => (await run([i]))[0]!);
  const turns = new Turns<I, O>(
    async (items) => {
      const seen = new Set<string>();
      const first = items.map((i) => key === null || (!seen.has(key(i)) && !!seen.add(key(i))));
      const batch = items.filter((_, k) => first[k]);
      let out: Array<PromiseSettledResult<O>> = [];
      try {
        out = (await run(batch)).map((value) => ({ status: 'fulfilled', value }));
      } catch (err) {
        // A store that cannot be written fails every call at once.
        if (err instanceof AppError || batch.length === 1) throw err;
        for (const i of batch) out.push(await one(i));
      }
      let b = 0;
      const results: Array<PromiseSettledResult<O>> = [];
      for (const [k, i] of items.entries()) results.push(first[k] ? out[b++]! : await one(i));
      return results;
    },
    { max: 100, concurrent: 1 },
  );
  return (i: I): Promise<O> => turns.add(i);
}
