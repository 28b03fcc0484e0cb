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
