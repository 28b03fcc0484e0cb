import { afterEach, describe, expect, it, vi } from 'vitest';
import { ALONE_LAG_MS, NodePresence } from '../../src/core/nodes/node-presence.js';
import { ManualClock } from '../../src/core/time/clock.js';
import { loopLag } from '../../src/core/time/loop-lag.js';
import { leases } from '../../src/store/sqlite/leases.js';

const timing = { sendMs: 60_000, beatMs: 2_000, takeoverMarginMs: 10_000, onError: (err: unknown) => expect.fail(String(err)) };

/** A node alone on its store (SQLite, D-191) on the in-memory leases that store keeps; clocks driven. */
afterEach(() => void vi.useRealTimers());

describe('a node alone on its store', () => {
  it('beats once: no timer wakes it, yet it stays fresh, present and the holder of its streams however long the clock runs', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'setTimeout', 'performance'] });
    const clock = new ManualClock(Date.UTC(2026, 10, 30));
    const store = leases(() => []);
    const node = new NodePresence(store, clock, { ...timing, alone: true });
    await node.start();
    expect(vi.getTimerCount()).toBe(0);
    expect(await node.take(['cola:1'])).toEqual([{ stream: 'cola:1', taken: true, restMs: 0 }]);
    clock.advance(24 * 3600_000);
    vi.advanceTimersByTime(24 * 3600_000);
    expect(node.fresh()).toBe(true);
    expect(node.lapses).toBe(1);
    expect((await node.presentNodes()).map((n) => [n.id, n.silent_ms, n.alive])).toEqual([[node.info.id, 0, true]]);
    expect(await node.holderWaitMs(node.info.id)).toBe(1000);
    // Another holder in the same map (none in a served store) finds the stream held, its one beat a day old.
    await store.nodeBeat({ id: 'other', label: 'other', staleMs: 60_000, marginMs: 10_000, engineUrl: null }, clock.now());
    expect((await store.leaseTake('other', ['cola:1'], clock.now()))[0]!.taken).toBe(false);
    await node.stop();
    expect((await store.leaseTake('other', ['cola:1'], clock.now()))[0]!.taken).toBe(true);
  });

  it("samples the request thread's loop lag on a timer of its own, every 5 s at least, and beats no more", async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'setTimeout', 'performance'] });
    const clock = new ManualClock(Date.UTC(2026, 10, 30));
    const store = leases(() => []);
    const beats = vi.spyOn(store, 'nodeBeat');
    const node = new NodePresence(store, clock, { ...timing, alone: true, sampleLag: true });
    await node.start();
    expect(vi.getTimerCount()).toBe(1);
    loopLag.reset();
    vi.advanceTimersByTime(3 * ALONE_LAG_MS);
    expect(loopLag.count).toBe(3);
    expect(beats).toHaveBeenCalledTimes(1);
    await node.stop();
  });

  it('on a shared store the node beats every beatMs, and is fresh after each', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'setTimeout'] });
    const clock = new ManualClock(Date.UTC(2026, 10, 30));
    const store = leases(() => []);
    const beats = vi.spyOn(store, 'nodeBeat');
    const node = new NodePresence(store, clock, timing);
    await node.start();
    await vi.advanceTimersByTimeAsync(3 * timing.beatMs);
    expect(beats).toHaveBeenCalledTimes(4);
    expect(node.fresh()).toBe(true);
    expect(node.info.alone).toBeUndefined();
    await node.stop();
  });
});

describe("a beat's news of the store (D-197)", () => {
  it("quiet: what the last good beat found empty, if sent after the caller's last change and while the node is fresh; never without news", async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'setTimeout', 'performance'] });
    const clock = new ManualClock(Date.UTC(2026, 11, 2));
    const store = leases(() => []);
    const real = store.nodeBeat.bind(store);
    const news = { queue: false, outbox: true, listeners: false };
    let failing = false;
    store.nodeBeat = async (n, now) => {
      await real(n, now);
      if (failing) throw new Error('the store is away');
      return news;
    };
    const errors: unknown[] = [];
    const node = new NodePresence(store, clock, { ...timing, onError: (err) => void errors.push(err) });
    const before = clock.ticks() - 1;
    await node.start();
    // Each kind as the beat found it; a change of the caller's own at or after the beat's sending spares nothing.
    expect(node.quiet('queue', before)).toBe(true);
    expect(node.quiet('listeners', before)).toBe(true);
    expect(node.quiet('outbox', before)).toBe(false);
    expect(node.quiet('queue', clock.ticks())).toBe(false);
    await vi.advanceTimersByTimeAsync(10);
    const changed = clock.ticks();
    expect(node.quiet('queue', changed)).toBe(false);
    // The next beat is sent after that change: it counts again.
    await vi.advanceTimersByTimeAsync(timing.beatMs);
    expect(node.quiet('queue', changed)).toBe(true);
    // A beat that fails leaves no news in use, though the node is still fresh; the next good one brings news again.
    failing = true;
    await vi.advanceTimersByTimeAsync(timing.beatMs);
    expect(errors).toHaveLength(1);
    expect(node.fresh()).toBe(true);
    expect(node.quiet('queue', changed)).toBe(false);
    failing = false;
    await vi.advanceTimersByTimeAsync(timing.beatMs);
    expect(node.quiet('queue', changed)).toBe(true);
    // Beats that stop coming (a stalled store): news as old as freshness allows, then none.
    store.nodeBeat = () => new Promise(() => {});
    await vi.advanceTimersByTimeAsync(timing.takeoverMarginMs / 2 - 20); // the last good beat was sent 10 ms ago
    expect(node.quiet('queue', changed)).toBe(true);
    await vi.advanceTimersByTimeAsync(20);
    expect(node.fresh()).toBe(false);
    expect(node.quiet('queue', changed)).toBe(false);
    // A store that tells nothing (one served alone): never quiet.
    const silent = new NodePresence(
      leases(() => []),
      clock,
      timing,
    );
    await silent.start();
    expect(silent.quiet('queue', before)).toBe(false);
    await silent.stop();
    expect(news).not.toBeNull();
  });
});
