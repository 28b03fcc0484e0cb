import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../src/core/ports/leases.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import { ADAPTERS, storeEachTest } from './adapters.js';

/**
 * Engine sessions held by one node each (D-136, core/engine/engine-holds.ts). A
 * store one process serves keeps them in memory, where every holder is its
 * own node and so present; PostgreSQL judges presence by the nodes' beats on
 * its own clock. What needs a second process (a silent holder, a url, a
 * race) is shown on PostgreSQL only.
 */
const b = (s: string) => Buffer.from(s, 'utf8');
const node = (id: string, engineUrl: string | null = null): NodeInfo => ({ id, label: `node ${id}`, staleMs: 60_000, marginMs: 10_000, engineUrl });
/** Gone from the moment it beats (a margin below zero): no waiting on a clock. */
const silent = (id: string): NodeInfo => ({ id, label: `node ${id}`, staleMs: 60_000, marginMs: -1, engineUrl: null });
const now = () => Date.now();
const key = (v: string) => [{ kind: 'creds', id: 'creds', value: b(v) }];

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: EngineHoldsStore contract`, () => {
    const ctx = storeEachTest(adapter);

    it('a new line taken gets a row with token 1 and no former holder; the holder taking it again keeps its token', async () => {
      const { store } = ctx;
      await store.nodeBeat(node('a'), now());
      expect(await store.holdTake('a', ['l1'], now())).toEqual([{ instancia: 'l1', token: 1, from: null }]);
      expect(await store.holdTake('a', ['l1'], now())).toEqual([{ instancia: 'l1', token: 1, from: 'a' }]);
      const h = await store.holdOf('l1', now());
      expect(h).toMatchObject({ instancia: 'l1', nodo: 'a', token: 1, presente: true });
      expect(h!.held_ms).toBeGreaterThanOrEqual(0);
      expect(await store.holdOf('nope', now())).toBeNull();
      expect(await store.holdTake('a', [], now())).toEqual([]);
    });

    it('a line held by a present node is not taken by another; given back, the other takes it and the token rises', async () => {
      const { store } = ctx;
      await store.nodeBeat(node('a'), now());
      await store.nodeBeat(node('b'), now());
      await store.holdTake('a', ['l1', 'l2'], now());
      expect(await store.holdTake('b', ['l1', 'l2', 'l3'], now())).toEqual([{ instancia: 'l3', token: 1, from: null }]);
      expect((await store.holdOf('l1', now()))!.nodo).toBe('a');
      // A give of a line another node holds changes nothing.
      await store.holdGive('b', ['l1']);
      expect((await store.holdOf('l1', now()))!.nodo).toBe('a');
      await store.holdGive('a', ['l1']);
      expect(await store.holdOf('l1', now())).toMatchObject({ nodo: null, token: 1, presente: false, url: null });
      expect(await store.holdTake('b', ['l1'], now())).toEqual([{ instancia: 'l1', token: 2, from: null }]);
      expect(await store.holdOf('l1', now())).toMatchObject({ nodo: 'b', token: 2, presente: true });
      await store.holdGive('a', []);
    });

    it('forget removes the row; a take afterwards starts it again at token 1', async () => {
      const { store } = ctx;
      await store.nodeBeat(node('a'), now());
      await store.holdTake('a', ['l1'], now());
      await store.holdGive('a', ['l1']);
      await store.holdTake('a', ['l1'], now());
      expect((await store.holdOf('l1', now()))!.token).toBe(2);
      await store.holdForget('l1');
      expect(await store.holdOf('l1', now())).toBeNull();
      expect(await store.holdsAll(now())).toEqual([]);
      expect(await store.holdTake('a', ['l1'], now())).toEqual([{ instancia: 'l1', token: 1, from: null }]);
    });

    it('seed makes a free row for each line with stored state and none for others; seeding again changes nothing', async () => {
      const { store } = ctx;
      await store.nodeBeat(node('a'), now());
      await store.writeAuth('l2', key('two'));
      await store.writeAuth('l1', key('one'));
      await store.holdTake('a', ['l1'], now());
      await store.holdSeed();
      const first = await store.holdsAll(now());
      expect(first.map((h) => [h.instancia, h.nodo, h.token])).toEqual([
        ['l1', 'a', 1],
        ['l2', null, 0],
      ]);
      await store.holdSeed();
      expect((await store.holdsAll(now())).map((h) => [h.instancia, h.nodo, h.token])).toEqual([
        ['l1', 'a', 1],
        ['l2', null, 0],
      ]);
      // A seeded line is taken like any free one: its token rises from 0.
      expect(await store.holdTake('a', ['l2'], now())).toEqual([{ instancia: 'l2', token: 1, from: null }]);
    });

    it('holdsAll lists every row in name order, with who holds it and whether that node is present', async () => {
      const { store } = ctx;
      await store.nodeBeat(node('a'), now());
      await store.nodeBeat(node('b'), now());
      await store.holdTake('b', ['m', 'c'], now());
      await store.holdTake('a', ['x', 'a1'], now());
      await store.holdGive('a', ['x']);
      const all = await store.holdsAll(now());
      expect(all.map((h) => [h.instancia, h.nodo, h.presente])).toEqual([
        ['a1', 'a', true],
        ['c', 'b', true],
        ['m', 'b', true],
        ['x', null, false],
      ]);
      for (const h of all) expect(h.held_ms).toBeGreaterThanOrEqual(0);
    });
  });
}

const pg = ADAPTERS.find((a) => a.name === 'postgres');
describe.skipIf(!pg)('postgres: EngineHoldsStore across nodes', () => {
  const ctx = storeEachTest(pg!);

  it('a holder silent past its own margin is taken over: the token rises and the take names it; a node that never beat holds nothing', async () => {
    const { store } = ctx;
    await store.nodeBeat(silent('gone'), now());
    await store.nodeBeat(node('b'), now());
    await store.holdTake('gone', ['l1'], now());
    await store.holdTake('ghost', ['l2'], now());
    expect(await store.holdOf('l1', now())).toMatchObject({ nodo: 'gone', token: 1, presente: false });
    const taken = await store.holdTake('b', ['l1', 'l2'], now());
    expect(taken).toEqual([
      { instancia: 'l1', token: 2, from: 'gone' },
      { instancia: 'l2', token: 2, from: 'ghost' },
    ]);
    expect(await store.holdOf('l1', now())).toMatchObject({ nodo: 'b', token: 2, presente: true });
  });

  it("a row's url is its holder's engine url, null once free; a node that leaves frees its lines", async () => {
    const { store } = ctx;
    await store.nodeBeat(node('a', 'http://10.0.0.1:7001'), now());
    await store.nodeBeat(node('b'), now());
    await store.holdTake('a', ['l1', 'l2'], now());
    await store.holdTake('b', ['l3'], now());
    expect((await store.holdsAll(now())).map((h) => [h.instancia, h.url])).toEqual([
      ['l1', 'http://10.0.0.1:7001'],
      ['l2', 'http://10.0.0.1:7001'],
      ['l3', null],
    ]);
    await store.nodeLeave('a');
    expect((await store.holdsAll(now())).map((h) => [h.instancia, h.nodo, h.url, h.presente])).toEqual([
      ['l1', null, null, false],
      ['l2', null, null, false],
      ['l3', 'b', null, true],
    ]);
  });

  for (const order of ['the same order', 'opposite orders'] as const) {
    it(`two nodes taking the same 20 lines at once, in ${order}: each line ends with exactly one holder`, async () => {
      const a = ctx.store;
      const other = await ctx.node();
      await a.nodeBeat(node('a'), now());
      await other.nodeBeat(node('b'), now());
      const lines = Array.from({ length: 20 }, (_, i) => `l${String(i).padStart(2, '0')}`);
      // Half of them exist already (seeded), half are new to the table.
      for (const l of lines.filter((_, i) => i % 2 === 0)) await a.writeAuth(l, key(l));
      await a.holdSeed();
      const [ta, tb] = await Promise.all([
        a.holdTake('a', lines, now()),
        other.holdTake('b', order === 'the same order' ? lines : [...lines].reverse(), now()),
      ]);
      const got = new Map<string, string[]>();
      for (const [who, took] of [
        ['a', ta],
        ['b', tb],
      ] as const)
        for (const t of took) got.set(t.instancia, [...(got.get(t.instancia) ?? []), who]);
      for (const l of lines) expect(got.get(l), l).toHaveLength(1);
      const all = await a.holdsAll(now());
      expect(all.map((h) => h.instancia)).toEqual(lines);
      for (const h of all) {
        expect(h.nodo, h.instancia).toBe(got.get(h.instancia)![0]);
        expect(h.token, h.instancia).toBe(1);
      }
    });
  }
  it('two nodes taking the same new lines at once in their own random orders never deadlock', async () => {
    const stores = [ctx.store, await ctx.node()] as PgStore[];
    // A deadlock is retried inside the store (one of the two statements waits out deadlock_timeout first): seen on the pool.
    const codes: string[] = [];
    for (const s of stores) {
      const query = s.db.pool.query.bind(s.db.pool) as (...a: unknown[]) => Promise<unknown>;
      (s.db.pool as unknown as { query: (...a: unknown[]) => Promise<unknown> }).query = (...a) =>
        query(...a).catch((err: { code?: string }) => {
          codes.push(err.code ?? '?');
          throw err;
        });
    }
    await stores[0]!.nodeBeat(node('a'), now());
    await stores[1]!.nodeBeat(node('b'), now());
    for (let k = 0; k < 5; k++) {
      const lines = Array.from({ length: 1000 }, (_, i) => `k${k}.${i}`);
      const shuffled = () => [...lines].sort(() => Math.random() - 0.5);
      const [ta, tb] = await Promise.all([stores[0]!.holdTake('a', shuffled(), now()), stores[1]!.holdTake('b', shuffled(), now())]);
      expect(ta.length + tb.length).toBe(lines.length);
    }
    expect(codes).toEqual([]);
  });
});
