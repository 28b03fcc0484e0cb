import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../src/core/ports/leases.js';
import type { Store } from '../../src/core/ports/store.js';
import { ADAPTERS, celular, newCliente, storeEachTest } from './adapters.js';

/**
 * Nodes and stream leases (core/nodes/leases.ts). Times are real: a shared store
 * measures on its own clock, and the in-memory leases of a store served alone
 * on the `now` they are given, here the same clock.
 */
const live = (id: string): NodeInfo => ({ id, label: `node ${id}`, staleMs: 60_000, marginMs: 10_000, engineUrl: null });
/** Dead from the moment it beats (a stale time below zero): no waiting on a clock. */
const frail = (id: string): NodeInfo => ({ id, label: `node ${id}`, staleMs: -1, marginMs: -1, engineUrl: null });
const now = () => Date.now();
const salud = (id: number) => `salud:${id}`;
/** `n` new lines of one client, each with its instance: what a health page reads. */
async function lines(store: Store, n: number): Promise<number[]> {
  const cliente = await newCliente(store);
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await store.insertCelular(celular(cliente.id, `52155${String(10_000_000 + i)}`), 1);
    if (!r.ok) throw new Error('insert');
    await store.updateCelular(r.celular.id, { gateway_instancia: `pasarela-${r.celular.id}` }, 1);
    ids.push(r.celular.id);
  }
  return ids;
}
/** A line as a page answers it (new: not linked, `desconectado`, no status yet). */
const line = (id: number) => ({
  id,
  numero: expect.any(String),
  gateway_instancia: `pasarela-${id}`,
  vinculado: false,
  estado: 'desconectado',
  last_status: null,
});

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: LeasesStore contract`, () => {
    const ctx = storeEachTest(adapter);

    it('a stream has one holder at a time; a live holder keeps it; given back, another takes it', async () => {
      const { store } = ctx;
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      expect(await store.leaseTake('a', ['cola:1'], now())).toEqual([{ stream: 'cola:1', taken: true, restMs: 0 }]);
      // The holder takes its own again (a re-check); the other is told it is held (no rest to wait).
      expect((await store.leaseTake('a', ['cola:1'], now()))[0]!.taken).toBe(true);
      expect(await store.leaseTake('b', ['cola:1'], now())).toEqual([{ stream: 'cola:1', taken: false, restMs: 0 }]);
      await store.leaseGive('a', 'cola:1', 0, now());
      expect((await store.leaseTake('b', ['cola:1'], now()))[0]!.taken).toBe(true);
    });

    it('a take carries gives of other streams: given back with their rest in the same call; one held by another node is left alone', async () => {
      const { store } = ctx;
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      await store.leaseTake('a', ['cola:11', 'cola:12'], now());
      await store.leaseTake('b', ['cola:13'], now());
      const took = await store.leaseTake('a', ['cola:14'], now(), [
        { stream: 'cola:11', restMs: 0 },
        { stream: 'cola:12', restMs: 5_000 },
        { stream: 'cola:13', restMs: 0 },
      ]);
      expect(took).toEqual([{ stream: 'cola:14', taken: true, restMs: 0 }]);
      expect((await store.leaseTake('b', ['cola:11'], now()))[0]!.taken).toBe(true);
      const [rested] = await store.leaseTake('b', ['cola:12'], now());
      expect(rested!.taken).toBe(false);
      expect(rested!.restMs).toBeGreaterThan(3_000);
      // b's own stream stays b's: a gives only what it holds.
      expect((await store.leaseTake('a', ['cola:13'], now()))[0]!.taken).toBe(false);
      // Gives with nothing to take still give, several in one call (each with its rest), and leave another's alone.
      await store.leaseTake('a', ['cola:15'], now());
      expect(
        await store.leaseTake('a', [], now(), [
          { stream: 'cola:14', restMs: 0 },
          { stream: 'cola:15', restMs: 5_000 },
          { stream: 'cola:11', restMs: 0 },
        ]),
      ).toEqual([]);
      expect((await store.leaseTake('b', ['cola:14'], now()))[0]!.taken).toBe(true);
      const [resting] = await store.leaseTake('b', ['cola:15'], now());
      expect(resting!.taken).toBe(false);
      expect(resting!.restMs).toBeGreaterThan(3_000);
      expect((await store.leaseTake('b', ['cola:11'], now()))[0]!.taken).toBe(true);
    });

    it('a rest holds the stream for everyone, its holder included, and says how long is left', async () => {
      const { store } = ctx;
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      await store.leaseTake('a', ['cola:2'], now());
      await store.leaseGive('a', 'cola:2', 5_000, now());
      for (const who of ['a', 'b']) {
        const [ans] = await store.leaseTake(who, ['cola:2'], now());
        expect(ans!.taken).toBe(false);
        expect(ans!.restMs).toBeGreaterThan(3_000);
        expect(ans!.restMs).toBeLessThanOrEqual(5_000);
      }
    });

    it('a holder that stopped beating longer ago than its stale time, or never beat, loses its streams', async () => {
      const { store } = ctx;
      await store.nodeBeat(frail('dead'), now());
      await store.nodeBeat(live('b'), now());
      await store.leaseTake('dead', ['webhooks:7'], now());
      await store.leaseTake('ghost', ['salud:3'], now());
      const taken = await store.leaseTake('b', ['webhooks:7', 'salud:3'], now());
      expect(taken.map((t) => t.taken)).toEqual([true, true]);
      const nodes = await store.nodes(now());
      expect(nodes.find((n) => n.id === 'dead')?.alive).toBe(false);
      expect(nodes.find((n) => n.id === 'b')?.alive).toBe(true);
    });

    it('one take answers for many streams; a give by a node that no longer holds the stream changes nothing', async () => {
      const { store } = ctx;
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      await store.leaseTake('a', ['cola:10'], now());
      const ans = await store.leaseTake('b', ['cola:10', 'cola:11', 'cola:12'], now());
      expect(ans.map((x) => [x.stream, x.taken])).toEqual([
        ['cola:10', false],
        ['cola:11', true],
        ['cola:12', true],
      ]);
      await store.leaseGive('b', 'cola:10', 0, now());
      expect((await store.leaseTake('b', ['cola:10'], now()))[0]!.taken).toBe(false);
    });

    it('answers come back in the order asked, whatever order the rows are stored in', async () => {
      const { store } = ctx;
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      const all = Array.from({ length: 300 }, (_, i) => `cola:${1000 + i}`);
      await store.leaseTake('a', all, now());
      // Churn: gives and takes move rows about, as a running cluster does.
      for (const s of all.filter((_, i) => i % 3 === 0)) await store.leaseGive('a', s, 0, now());
      await store.leaseTake(
        'b',
        all.filter((_, i) => i % 6 === 0),
        now(),
      );
      const asked = [...all].sort(() => Math.random() - 0.5).slice(0, 60);
      const ans = await store.leaseTake('a', asked, now());
      expect(ans.map((x) => x.stream)).toEqual(asked);
      for (const x of ans) expect(x.taken, x.stream).toBe(Number(x.stream.slice(5)) % 6 !== 4);
    });

    it('a node that leaves frees its streams at once and is no longer listed', async () => {
      const { store } = ctx;
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      await store.leaseTake('a', ['cola:20', 'salud:20'], now());
      await store.nodeLeave('a');
      expect((await store.leaseTake('b', ['cola:20', 'salud:20'], now())).every((x) => x.taken)).toBe(true);
      expect((await store.nodes(now())).map((n) => n.id)).toEqual(['b']);
    });

    it('nodes taking the same streams at once: each stream goes to exactly one of them', async () => {
      const { store } = ctx;
      const ids = ['a', 'b', 'c'];
      for (const id of ids) await store.nodeBeat(live(id), now());
      const streams = Array.from({ length: 30 }, (_, i) => `cola:${100 + i}`);
      const answers = await Promise.all(ids.map((id) => store.leaseTake(id, streams, now())));
      for (let i = 0; i < streams.length; i++) expect(answers.filter((a) => a[i]!.taken)).toHaveLength(1);
    });

    it('a page of lines taken resting: each line due and free is taken once, left held by nobody, and rests for everyone', async () => {
      const { store } = ctx;
      const L = await lines(store, 6);
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      await store.leaseTake('b', [salud(L[1]!)], now());
      // New, free and held-by-another lines in one page; a page of one is the same statement.
      expect(await store.leaseTakeLines('a', 'salud:', 0, 3, 5_000, now())).toEqual({ taken: [line(L[0]!), line(L[2]!)], last: L[2], more: true });
      expect(await store.leaseTakeLines('a', 'salud:', L[2]!, 1, 5_000, now())).toEqual({ taken: [line(L[3]!)], last: L[3], more: true });
      // Resting: neither the taker nor another node takes it again, in either kind of take, and a take says how long is left.
      for (const who of ['a', 'b']) {
        for (const id of [L[0]!, L[2]!]) {
          const [x] = await store.leaseTake(who, [salud(id)], now());
          expect(x!.taken).toBe(false);
          expect(x!.restMs).toBeGreaterThan(3_000);
          expect(x!.restMs).toBeLessThanOrEqual(5_000);
        }
        expect((await store.leaseTakeLines(who, 'salud:', L[1]!, 1, 5_000, now())).taken).toEqual([]);
      }
      // Held by nobody: with no rest, another live node takes it at once; a stream that existed (taken and given back) rests too.
      expect(await store.leaseTakeLines('a', 'salud:', L[4]!, 10, 0, now())).toEqual({ taken: [line(L[5]!)], last: L[5], more: false });
      expect((await store.leaseTake('b', [salud(L[5]!)], now()))[0]!.taken).toBe(true);
      await store.leaseGive('b', salud(L[1]!), 0, now());
      expect((await store.leaseTakeLines('a', 'salud:', L[0]!, 1, 5_000, now())).taken).toEqual([line(L[1]!)]);
      expect((await store.leaseTake('b', [salud(L[1]!)], now()))[0]!.restMs).toBeGreaterThan(3_000);
      // A node that leaves takes nothing with it, and a rest of 0 leaves the line due at once.
      await store.nodeLeave('a');
      expect((await store.leaseTake('b', [salud(L[0]!)], now()))[0]!.taken).toBe(false);
      expect((await store.leaseTakeLines('b', 'salud:', L[3]!, 1, 0, now())).taken).toEqual([line(L[4]!)]);
      expect((await store.leaseTake('b', [salud(L[4]!)], now()))[0]!.taken).toBe(true);
      // Past the last line: an empty page.
      expect(await store.leaseTakeLines('b', 'salud:', L[5]!, 10, 0, now())).toEqual({ taken: [], last: null, more: false });
    });

    it('a page of lines held: each line taken held by the taker until given back; a line without an instance is in no page', async () => {
      const { store } = ctx;
      const L = await lines(store, 4);
      await store.insertCelular(celular((await store.getCelular(L[0]!))!.cliente_id, '5215500000099'), 1);
      await store.nodeBeat(live('a'), now());
      await store.nodeBeat(live('b'), now());
      expect(await store.leaseTakeLines('a', 'salud:', 0, 4, null, now())).toEqual({ taken: L.map(line), last: L[3], more: false });
      // The holder takes its own again; the other node, none.
      expect((await store.leaseTakeLines('a', 'salud:', 0, 4, null, now())).taken).toHaveLength(4);
      expect(await store.leaseTakeLines('b', 'salud:', 0, 4, null, now())).toEqual({ taken: [], last: L[3], more: false });
      await store.leaseGive('a', salud(L[2]!), 0, now());
      expect((await store.leaseTakeLines('b', 'salud:', 0, 4, null, now())).taken).toEqual([line(L[2]!)]);
      expect((await store.leaseTake('a', [salud(L[2]!)], now()))[0]!.taken).toBe(false);
    });

    it('nodes taking the same page of lines resting at once: each line goes to exactly one of them', async () => {
      const { store } = ctx;
      const ids = ['a', 'b', 'c'];
      for (const id of ids) await store.nodeBeat(live(id), now());
      const L = await lines(store, 120);
      // Half of them have a lease row already (taken and given back), half are new: both paths race.
      for (const id of L.slice(0, 60)) {
        await store.leaseTake('a', [salud(id)], now());
        await store.leaseGive('a', salud(id), 0, now());
      }
      const pages = await Promise.all(ids.map((id) => store.leaseTakeLines(id, 'salud:', 0, 200, 60_000, now())));
      for (const id of L)
        expect(
          pages.filter((p) => p.taken.some((l) => l.id === id)),
          salud(id),
        ).toHaveLength(1);
    });

    it('kvFirst: the first value stays; later ones get it back', async () => {
      const { store } = ctx;
      const [x, y] = await Promise.all([store.kvFirst('cluster', 'settings', { tz: 'UTC' }), store.kvFirst('cluster', 'settings', { tz: 'America/Lima' })]);
      expect(x).toEqual(y);
      expect(await store.kvFirst('cluster', 'settings', { tz: 'Europe/Madrid' })).toEqual(x);
      expect(await store.kvGet('cluster', 'settings')).toEqual(x);
    });
  });
}
