/**
 * The loop shared by the queue worker and the webhook dispatcher: look for
 * due work, run at most one job per key (a line, a client) at a time, look
 * again when a job ends, when poked, or after the delay the last look asked
 * for. Pokes coalesce, so a burst of new work costs one look.
 */
export class KeyedRunner<K> {
  private readonly busy = new Set<K>();
  private readonly inflight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private looking = false;
  private again = false;
  private pokeQueued = false;

  constructor(
    /** Starts due jobs with `run`; returns how long to wait before looking again. */
    private readonly look: () => Promise<number>,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.running = true;
    this.poke();
  }

  /** Stops looking and waits for the jobs in flight to finish. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inflight]);
  }

  /** Resolves when no job is running. */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  get inFlight(): number {
    return this.inflight.size;
  }

  isBusy(key: K): boolean {
    return this.busy.has(key);
  }

  run(key: K, job: () => Promise<void>): void {
    this.busy.add(key);
    const p = job()
      .catch(this.onError)
      .finally(() => {
        this.busy.delete(key);
        this.inflight.delete(p);
        this.poke();
      });
    this.inflight.add(p);
  }

  poke(): void {
    if (!this.running) return;
    if (this.looking) {
      this.again = true;
      return;
    }
    if (this.pokeQueued) return;
    this.pokeQueued = true;
    setImmediate(() => {
      this.pokeQueued = false;
      if (this.looking) {
        this.again = true;
        return;
      }
      void this.tick();
    });
  }

  private async tick(): Promise<void> {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.looking = true;
    let wait = 500;
    try {
      wait = await this.look();
    } catch (err) {
      this.onError(err);
    } finally {
      this.looking = false;
    }
    if (this.again) {
      this.again = false;
      this.poke();
    } else if (this.running) {
      this.timer = setTimeout(() => void this.tick(), Math.max(1, wait));
      this.timer.unref();
    }
  }
}
