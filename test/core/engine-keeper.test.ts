import { describe, expect, it } from 'vitest';
import { until } from '../helpers/poll.js';
import { systemClock } from '../../src/core/time/clock.js';
import { EngineKeeper, type EngineSockets, type HolderChange } from '../../src/core/engine/engine-keeper.js';
import { NodePresence } from '../../src/core/nodes/node-presence.js';
import type { EngineHold, HoldFence } from '../../src/core/ports/engine-holds.js';
import { engineHolds } from '../../src/store/sqlite/engine-holds.js';
import { leases } from '../../src/store/sqlite/leases.js';

/** The engine as the keeper sees it: which lines are open here, with their fence. */
class Sockets implements EngineSockets {
  readonly open = new Map<string, HoldFence>();
  /** When set, a release waits for it: a socket slow to close. */
  slowRelease: Promise<void> | null = null;
  async hold(i: string, f: HoldFence) {
    this.open.set(i, f);
  }
  async release(i: string) {
    this.open.delete(i);
    await this.slowRelease;
  }
  held() {
    return [...this.open.keys()];
  }
  holding(i: string) {
    return this.open.has(i);
  }
  linking() {
    return false;
  }
}

/** One node's keeper over the in-memory holds of a store one process serves, with a hook inside its read of the rows. */
async function keeperOf(instancias: string[], celulares = new Map(instancias.map((i, k) => [i, k + 1]))) {
  const holds = engineHolds({ authInstancias: async () => instancias });
  let inRead: (() => Promise<void>) | null = null;
  const store = {
    ...holds,
    ...leases(() => []),
    async holdsAll(now: number): Promise<EngineHold[]> {
      const rows = await holds.holdsAll(now);
      const hook = inRead;
      inRead = null;
      await hook?.();
      return rows;
    },
    getCelularByInstancia: async (i: string) => (celulares.has(i) ? ({ id: celulares.get(i)! } as never) : null),
    authInstancias: async () => instancias,
    clearAuth: async () => {},
  };
  const node = new NodePresence(store, systemClock, { sendMs: 60_000, beatMs: 60_000, takeoverMarginMs: 60_000, onError: () => {} });
  await node.start();
  const sockets = new Sockets();
  const changes: HolderChange[] = [];
  const keeper = new EngineKeeper({
    store,
    engine: sockets,
    node,
    clock: systemClock,
    shared: false,
    passMs: 60_000,
    settleMs: 0,
    onChange: (c) => changes.push(c),
    onError: (err) => {
      throw err;
    },
  });
  return { keeper, sockets, changes, node, store, during: (fn: () => Promise<void>) => (inRead = fn) };
}

describe('the engine keeper on a store one process serves', () => {
  it('holds every line with stored state from its start, each opened with its token, each take reported', async () => {
    const k = await keeperOf(['pasarela-1', 'pasarela-2', 'pasarela-3']);
    await k.keeper.start();
    expect(k.sockets.held().sort()).toEqual(['pasarela-1', 'pasarela-2', 'pasarela-3']);
    expect([...k.sockets.open.values()].every((f) => f.nodo === k.node.info.id && f.token === 1)).toBe(true);
    expect(k.changes.map((c) => [c.instancia, c.reason, c.celularId])).toEqual(
      expect.arrayContaining([
        ['pasarela-1', 'free', 1],
        ['pasarela-2', 'free', 2],
        ['pasarela-3', 'free', 3],
      ]),
    );
    expect(k.keeper.sendsHere(1)).toBe(true);
    await k.keeper.handOver();
    await k.node.stop();
  });

  it('a line a link takes while a pass reads the rows stays open: the pass does not undo it', async () => {
    const k = await keeperOf(['pasarela-1']);
    await k.keeper.start();
    k.during(async () => {
      expect(await k.keeper.take(['pasarela-9'])).toEqual(['pasarela-9']);
    });
    await k.keeper.pass();
    expect(k.sockets.held().sort()).toEqual(['pasarela-1', 'pasarela-9']);
    expect(k.keeper.holdOf('pasarela-9')?.nodo).toBe(k.node.info.id);
    // The next pass reads the row the take made.
    await k.keeper.pass();
    expect(k.sockets.held().sort()).toEqual(['pasarela-1', 'pasarela-9']);
    await k.keeper.handOver();
    await k.node.stop();
  });

  it('a line forgotten (logged out) is closed and its row gone; a stop gives every line back, reported as such', async () => {
    const k = await keeperOf(['pasarela-1', 'pasarela-2']);
    await k.keeper.start();
    await k.keeper.forget('pasarela-1');
    expect(k.sockets.held()).toEqual(['pasarela-2']);
    expect(k.keeper.holdOf('pasarela-1')).toBeUndefined();
    await k.keeper.pass();
    expect(k.sockets.held()).toEqual(['pasarela-2']);
    k.changes.length = 0;
    await k.keeper.handOver();
    expect(k.sockets.held()).toEqual([]);
    expect(k.changes).toEqual([{ instancia: 'pasarela-2', celularId: 2, from: k.node.info.id, to: null, reason: 'stop' }]);
    // Stopped: a take asks nothing of the store.
    expect(await k.keeper.take(['pasarela-1'])).toEqual([]);
    await k.node.stop();
  });

  it('a link taking a line while the pass gives it away waits for the give: the line ends held and open, never open with its row freed', async () => {
    const k = await keeperOf(['pasarela-1', 'pasarela-2']);
    await k.keeper.start();
    expect(k.sockets.held()).toHaveLength(2);
    // A second engine node appears: over its share (1 of 2), this one gives a line away; its socket is slow to close.
    await k.store.nodeBeat({ id: 'otro', label: 'otro', staleMs: 60_000, marginMs: 60_000, engineUrl: 'http://otro' }, Date.now());
    let closed!: () => void;
    k.sockets.slowRelease = new Promise<void>((r) => (closed = r));
    const pass = k.keeper.pass();
    await until(() => k.sockets.held().length === 1, { what: 'the give started' });
    const given = ['pasarela-1', 'pasarela-2'].find((i) => !k.sockets.held().includes(i))!;
    const link = k.keeper.take([given]);
    closed();
    k.sockets.slowRelease = null;
    await pass;
    expect(await link).toEqual([given]);
    const row = (await k.store.holdsAll(Date.now())).find((h) => h.instancia === given)!;
    expect(row.nodo).toBe(k.node.info.id);
    expect(k.sockets.held()).toContain(given);
    // Given and taken back: a new token, as another node's take would have.
    expect(k.sockets.open.get(given)!.token).toBe(2);
    await k.keeper.handOver();
    await k.node.stop();
  });
});
