/**
 * The loop shared by the queue worker and the webhook dispatcher: look for
 * due work, run jobs keyed by what they belong to (a line, a client; the
 * caller decides how many per key: one for a line, several for a client),
 * look again when a job ends, when poked, or after the delay the last look
 * asked for. Pokes coalesce, so a burst of new work costs one look.
 */
export class KeyedRunner<K> {
  /** Jobs running per key. */
  private readonly busy = new Map<K, number>();
  private readonly inflight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private looking = false;
  /** The look in progress: stop() waits for it, so no job starts after stop() returns. */
  private current: Promise<unknown> | null = null;
  private again = false;
  private pokeQueued = false;
  /** When the timer fires, and the soonest look asked for by wakeWithin during a look (performance.now(): timers only). */
  private timerAt = Number.POSITIVE_INFINITY;
  private wakeBy = Number.POSITIVE_INFINITY;
  /** The timer armed is the poll's: the last look asked to wait its whole poll (or longer), and nothing asked sooner since. */
  private pollArmed = false;

  constructor(
    /**
     * Starts due jobs with `run`; returns how long to wait before looking again. `safety`: this look is the poll's own,
     * asked for by nothing (no poke, no job's end, no wakeWithin, no step): it only guards against a lost signal.
     */
    private readonly look: (safety: boolean) => Promise<number>,
    private readonly onError: (err: unknown) => void,
    /**
     * The look's own poll: a look that asks to wait that long (nothing due sooner) is timed for the next
     * multiple of it on the wall clock instead, never later. Two runners of one thread (the queue's and the
     * webhooks', both 5 s by default) then look in the same wake-up of an idle node, not in two (D-191).
     */
    private readonly pollMs = 0,
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
    await this.current?.catch(() => undefined);
    await Promise.allSettled([...this.inflight]);
  }

  /** Resolves when no job is running. */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /**
   * One look now (after the one in progress, if any), then waits until no job
   * runs: whatever was due at the clock's time has been started and has ended.
   * For tests that drive the clock instead of waiting for the next look.
   */
  async step(): Promise<void> {
    while (this.looking) await (this.current ?? Promise.resolve()).catch(() => undefined);
    await this.tick(false);
    await this.idle();
  }

  get inFlight(): number {
    return this.inflight.size;
  }

  isBusy(key: K): boolean {
    return this.busy.has(key);
  }

  /**
   * Starts a job; a stopped runner starts none (a look that ends after stop() asks in vain).
   * A look follows its end, unless the job answers `false`: it knows it left nothing for a look to find.
   */
  run(key: K, job: () => Promise<void | boolean>): void {
    if (!this.running) return;
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    let more: void | boolean;
    const p = job()
      .then((m) => void (more = m))
      .catch(this.onError)
      .finally(() => {
        const n = this.busy.get(key)! - 1;
        if (n === 0) this.busy.delete(key);
        else this.busy.set(key, n);
        this.inflight.delete(p);
        if (more !== false) this.poke();
      });
    this.inflight.add(p);
  }

  /** Looks again within `ms` at the latest; a sooner look stays as it is. */
  wakeWithin(ms: number): void {
    if (!this.running) return;
    const at = performance.now() + ms;
    if (this.looking) {
      this.wakeBy = Math.min(this.wakeBy, at);
      return;
    }
    if (this.pokeQueued) return;
    // A sooner timer stays, and now answers this request too: no longer the poll's alone.
    if (this.timerAt <= at) this.pollArmed = false;
    else this.arm(ms);
  }

  /** A wait of the whole poll, cut to end on the poll's next multiple (epoch time: the same grid in every runner). */
  private onGrid(wait: number): number {
    const p = this.pollMs;
    if (p <= 0 || wait < p) return wait;
    const at = performance.timeOrigin + performance.now();
    return p - (at % p);
  }

  private arm(ms: number, forPoll = false): void {
    if (this.timer) clearTimeout(this.timer);
    this.pollArmed = forPoll;
    this.timerAt = performance.now() + Math.max(1, ms);
    this.timer = setTimeout(() => void this.tick(true), Math.max(1, ms));
    this.timer.unref();
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
      void this.tick(false);
    });
  }

  private async tick(byTimer: boolean): Promise<void> {
    if (!this.running) return;
    const safety = byTimer && this.pollArmed;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.looking = true;
    let wait = 500;
    try {
      const p = this.look(safety);
      this.current = p;
      wait = await p;
    } catch (err) {
      this.onError(err);
    } finally {
      this.looking = false;
      this.current = null;
    }
    if (this.again) {
      this.again = false;
      this.poke();
    } else if (this.running) {
      const grid = this.onGrid(wait);
      const by = this.wakeBy - performance.now();
      // A wake asked for during the look, however late, makes the next look one that was asked for.
      this.arm(Math.min(grid, by), this.pollMs > 0 && wait >= this.pollMs && this.wakeBy === Number.POSITIVE_INFINITY);
    }
    this.wakeBy = Number.POSITIVE_INFINITY;
  }
}
