import { describe, expect, it, vi } from 'vitest';
import { KeyedRunner } from '../../src/core/queue/keyed-runner.js';

/** A deferred: a promise the test settles. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('KeyedRunner.step', () => {
  it('runs one look now and resolves once the jobs it started have ended', async () => {
    const done: string[] = [];
    let due = ['a', 'b'];
    const runner: KeyedRunner<string> = new KeyedRunner(
      async () => {
        for (const k of due) runner.run(k, async () => void done.push(k));
        due = [];
        return 60_000;
      },
      (err) => {
        throw err;
      },
    );
    runner.start();
    await runner.step();
    expect(done.sort()).toEqual(['a', 'b']);
    due = ['c'];
    await runner.step();
    expect(done).toContain('c');
    expect(runner.inFlight).toBe(0);
    await runner.stop();
  });

  it('never overlaps a look in progress: it waits for it, then looks itself', async () => {
    const slow = gate();
    let looks = 0;
    let overlapping = false;
    let active = 0;
    const runner = new KeyedRunner<string>(
      async () => {
        active += 1;
        if (active > 1) overlapping = true;
        looks += 1;
        if (looks === 1) await slow.promise;
        active -= 1;
        return 60_000;
      },
      () => {},
    );
    runner.start();
    // The first look (from start) is blocked on the gate; the step must wait for it.
    await new Promise<void>((r) => setImmediate(r));
    expect(looks).toBe(1);
    const stepped = runner.step();
    await new Promise<void>((r) => setImmediate(r));
    expect(looks).toBe(1);
    slow.open();
    await stepped;
    expect(looks).toBe(2);
    expect(overlapping).toBe(false);
    await runner.stop();
  });

  it('does nothing on a stopped runner', async () => {
    let looks = 0;
    const runner = new KeyedRunner<string>(
      async () => {
        looks += 1;
        return 1;
      },
      () => {},
    );
    await runner.step();
    expect(looks).toBe(0);
  });

  it('a job that answers false asks for no look after it; any other end (true, nothing, a failure) asks for one', async () => {
    let looks = 0;
    const errors: unknown[] = [];
    const runner = new KeyedRunner<string>(
      async () => {
        looks += 1;
        return 60_000;
      },
      (err) => void errors.push(err),
    );
    const turn = () => new Promise((r) => setImmediate(r));
    runner.start();
    await runner.step();
    // The start's own poke looks on the next turn.
    await turn();
    await turn();
    const after = async (job: () => Promise<void | boolean>) => {
      const before = looks;
      runner.run('k', job);
      await runner.idle();
      // A poke looks on the next turn of the loop.
      await turn();
      await turn();
      return looks - before;
    };
    expect(await after(async () => false)).toBe(0);
    expect(await after(async () => true)).toBe(1);
    expect(await after(async () => undefined)).toBe(1);
    expect(
      await after(async () => {
        throw new Error('boom');
      }),
    ).toBe(1);
    expect(errors).toHaveLength(1);
    await runner.stop();
  });
});

describe('KeyedRunner: idle looks on the poll grid (D-191)', () => {
  const at = () => performance.timeOrigin + performance.now();

  it('two runners idle at the same instants, one wake-up for both, never later than their poll; a shorter wait is kept', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'performance'] });
    try {
      const looks: Array<Array<number>> = [[], []];
      const waits = [5000, 5000];
      const runners = [0, 1].map(
        (i) =>
          new KeyedRunner<string>(
            async () => {
              looks[i]!.push(at());
              return waits[i]!;
            },
            (err) => expect.fail(String(err)),
            5000,
          ),
      );
      runners[0]!.start();
      await vi.advanceTimersByTimeAsync(1300);
      runners[1]!.start();
      await vi.advanceTimersByTimeAsync(20_000);
      for (const l of looks) {
        for (let k = 1; k < l.length; k++) expect(l[k]! - l[k - 1]!).toBeLessThanOrEqual(5000);
        for (const t of l.slice(1)) expect(t % 5000).toBeLessThan(2);
      }
      // After their first looks, both look at the same instants.
      expect(looks[0]!.slice(-3)).toEqual(looks[1]!.slice(-3));
      // A wait short of the poll (work due sooner) is timed as asked.
      waits[0] = 1200;
      runners[0]!.poke();
      await vi.advanceTimersByTimeAsync(0);
      const t0 = looks[0]!.at(-1)!;
      await vi.advanceTimersByTimeAsync(1200);
      expect(looks[0]!.at(-1)! - t0).toBe(1200);
      await Promise.all(runners.map((r) => r.stop()));
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('KeyedRunner: which looks are the safety poll alone (D-197)', () => {
  it("only a look the poll's timer makes, with nothing asked since, is a safety look; a poke, a job's end, a step or a wake asked for are not", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] });
    try {
      const seen: boolean[] = [];
      let wait = 5000;
      const runner = new KeyedRunner<string>(
        async (safety) => {
          seen.push(safety);
          return wait;
        },
        (err) => expect.fail(String(err)),
        5000,
      );
      const last = () => seen.at(-1);
      runner.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(seen).toEqual([false]); // the start's poke
      await vi.advanceTimersByTimeAsync(5000);
      expect(seen).toEqual([false, true]);
      await vi.advanceTimersByTimeAsync(5000);
      expect(last()).toBe(true);
      const n = seen.length;

      runner.poke();
      await vi.advanceTimersByTimeAsync(0);
      expect(seen.slice(n)).toEqual([false]);

      runner.run('k', async () => {});
      await vi.advanceTimersByTimeAsync(0);
      expect(last()).toBe(false);

      await runner.step();
      expect(last()).toBe(false);

      // A wake asked for sooner than the poll: that look is not the poll's.
      await vi.advanceTimersByTimeAsync(5000);
      expect(last()).toBe(true);
      runner.wakeWithin(1000);
      await vi.advanceTimersByTimeAsync(1000);
      expect(last()).toBe(false);

      // A wake asked for later than the poll's timer: the poll's look now answers it too, so it is not a safety look.
      await vi.advanceTimersByTimeAsync(5000);
      expect(last()).toBe(true);
      const before = seen.length;
      runner.wakeWithin(60_000);
      await vi.advanceTimersByTimeAsync(5000);
      expect(seen.slice(before)).toEqual([false]);

      // A wake asked for during a look, even one later than the poll's next instant: the next look was asked for.
      const late: boolean[] = [];
      let askLate = true;
      const lateRunner = new KeyedRunner<string>(
        async (safety) => {
          late.push(safety);
          if (askLate) lateRunner.wakeWithin(60_000);
          askLate = false;
          return 5000;
        },
        (err) => expect.fail(String(err)),
        5000,
      );
      lateRunner.start();
      await vi.advanceTimersByTimeAsync(0);
      await vi.advanceTimersByTimeAsync(5000);
      expect(late).toEqual([false, false]);
      await vi.advanceTimersByTimeAsync(5000);
      expect(late).toEqual([false, false, true]);
      await lateRunner.stop();

      // A look that asks for less than the poll (work due then) times a look that is not a safety look either.
      // The look asking for it is a poke's: a timer's would fall wherever the poll's grid (wall clock) puts it.
      wait = 1200;
      runner.poke();
      await vi.advanceTimersByTimeAsync(0);
      const k = seen.length;
      wait = 5000;
      await vi.advanceTimersByTimeAsync(1200);
      expect(seen.slice(k)).toEqual([false]);
      await vi.advanceTimersByTimeAsync(5000);
      expect(last()).toBe(true);
      await runner.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
