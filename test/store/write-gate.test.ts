import { describe, expect, it } from 'vitest';
import { backgroundGate, freeDeadHolder, mainGate, newGateBuffer } from '../../src/store/write-gate.js';

/** The turns of the two connections at SQLite's write lock (store/write-gate.ts), on one shared buffer. */
describe('write gate', () => {
  it('one holder at a time; the request thread never blocks, and is told when the gate is free', async () => {
    const buf = newGateBuffer();
    const main = mainGate(buf);
    const bg = backgroundGate(buf);
    expect(main.blocking).toBe(false);
    expect(bg.blocking).toBe(true);

    expect(main.tryEnter()).toBe(true);
    expect(bg.tryEnter()).toBe(false);
    main.leave();

    expect(bg.tryEnter()).toBe(true);
    expect(main.tryEnter()).toBe(false);
    let freed = false;
    const wait = main.whenFree().then(() => (freed = true));
    await new Promise((r) => setImmediate(r));
    expect(freed).toBe(false);
    bg.leave();
    await wait;
    expect(freed).toBe(true);
    expect(main.tryEnter()).toBe(true);
    main.leave();
  });

  it('the request thread goes first: while it waits, the background thread takes no new turn', () => {
    const buf = newGateBuffer();
    const main = mainGate(buf);
    const bg = backgroundGate(buf);
    expect(bg.tryEnter()).toBe(true);
    expect(main.tryEnter()).toBe(false); // now waiting
    bg.leave();
    expect(bg.tryEnter()).toBe(false);
    expect(main.tryEnter()).toBe(true); // its turn clears the wait
    main.leave();
    expect(bg.tryEnter()).toBe(true);
    bg.leave();
  });

  it('a waiting request thread that does not come back holds the background thread for a bounded time only', () => {
    const buf = newGateBuffer();
    const main = mainGate(buf);
    const bg = backgroundGate(buf);
    expect(bg.tryEnter()).toBe(true);
    expect(main.tryEnter()).toBe(false);
    bg.leave();
    // enter() yields to the waiting request thread, then takes the gate anyway.
    bg.enter();
    expect(main.tryEnter()).toBe(false);
    bg.leave();
  });

  it('a background thread that died holding the gate gives it back', () => {
    const buf = newGateBuffer();
    const main = mainGate(buf);
    expect(backgroundGate(buf).tryEnter()).toBe(true);
    expect(main.tryEnter()).toBe(false);
    freeDeadHolder(buf);
    expect(main.tryEnter()).toBe(true);
    // Only a background holder is freed so: the request thread's own turn stays its own.
    freeDeadHolder(buf);
    expect(backgroundGate(buf).tryEnter()).toBe(false);
    main.leave();
  });
});
