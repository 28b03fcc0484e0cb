import { describe, expect, it } from 'vitest';
import { holdTakable, planHolds, shareOf, type HoldPlanInput, GIVES_PER_PASS } from '../../src/core/engine/engine-holds.js';
import type { EngineHold } from '../../src/core/ports/engine-holds.js';

/** Who holds each line, and how long: the plan's input as the store would give it. */
const hold = (instancia: string, nodo: string | null, o: { presente?: boolean; held_ms?: number } = {}): EngineHold => ({
  instancia,
  nodo,
  token: 1,
  presente: o.presente ?? nodo !== null,
  held_ms: o.held_ms ?? 60_000,
  url: null,
});
const names = (n: number) => Array.from({ length: n }, (_, i) => `l${String(i).padStart(3, '0')}`);
const input = (o: Partial<HoldPlanInput> & Pick<HoldPlanInput, 'me' | 'holds' | 'nodes'>): HoldPlanInput => ({
  cooling: new Set(),
  pinned: new Set(),
  settleMs: 30_000,
  ...o,
});

/** A seeded random (mulberry32): each simulation runs the same way every time. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('shareOf and holdTakable', () => {
  it('a share is the lines over the nodes, rounded up; no nodes counts as one', () => {
    expect(shareOf(30, 3)).toBe(10);
    expect(shareOf(31, 3)).toBe(11);
    expect(shareOf(0, 3)).toBe(0);
    expect(shareOf(5, 0)).toBe(5);
  });
  it('a line is takable free, by its own holder, or from a holder no longer present; never from a present one', () => {
    expect(holdTakable({ nodo: null, presente: false }, 'a')).toBe(true);
    expect(holdTakable({ nodo: 'a', presente: true }, 'a')).toBe(true);
    expect(holdTakable({ nodo: 'b', presente: false }, 'a')).toBe(true);
    expect(holdTakable({ nodo: 'b', presente: true }, 'a')).toBe(false);
  });
});

describe('planHolds: one pass of a node', () => {
  it('from nothing, each of 3 nodes asks for its share of 30 lines and no more, in a random order', () => {
    const holds = names(30).map((i) => hold(i, null));
    const asked = ['a', 'b', 'c'].map((me, k) => planHolds(input({ me, holds, nodes: ['a', 'b', 'c'] }), seeded(k + 1)));
    for (const p of asked) {
      expect(p.take).toHaveLength(10);
      expect(new Set(p.take).size).toBe(10);
      expect(p.give).toEqual([]);
    }
    // Shuffled: three nodes asking at once mostly ask for different lines.
    expect(asked[0]!.take).not.toEqual(asked[1]!.take);
  });

  it('with some lines already, a node asks only for the room left under its share; at its share it asks for none', () => {
    const holds = names(30).map((i, k) => hold(i, k < 4 ? 'a' : k < 10 ? 'b' : null));
    const p = planHolds(input({ me: 'a', holds, nodes: ['a', 'b', 'c'] }));
    expect(p.take).toHaveLength(6);
    for (const i of p.take) expect(holds.find((h) => h.instancia === i)!.nodo).toBeNull();
    const full = names(30).map((i, k) => hold(i, k < 10 ? 'a' : null));
    expect(planHolds(input({ me: 'a', holds: full, nodes: ['a', 'b', 'c'] }))).toEqual({ take: [], give: [] });
  });

  it("a gone holder's lines are takable; a present holder's are not", () => {
    const holds = [hold('l1', 'gone', { presente: false }), hold('l2', 'gone', { presente: false }), hold('l3', 'b'), hold('l4', 'b')];
    const p = planHolds(input({ me: 'a', holds, nodes: ['a', 'b'] }));
    expect(p.take.sort()).toEqual(['l1', 'l2']);
  });

  it('lines cooling here (given away a moment ago) are not taken back', () => {
    const holds = [hold('l1', null), hold('l2', null), hold('l3', null)];
    const p = planHolds(input({ me: 'a', holds, nodes: ['a'], cooling: new Set(['l2']) }));
    expect(p.take.sort()).toEqual(['l1', 'l3']);
  });

  it('a node holding all 30 with 2 new nodes gives a few lines a pass (GIVES_PER_PASS), only settled ones and not pinned ones', () => {
    const settled = names(30).map((i) => hold(i, 'a', { held_ms: 60_000 }));
    const p = planHolds(input({ me: 'a', holds: settled, nodes: ['a', 'b', 'c'] }));
    expect(p.take).toEqual([]);
    expect(p.give).toHaveLength(GIVES_PER_PASS);
    // Held a moment only: not yet moved.
    const fresh = names(30).map((i) => hold(i, 'a', { held_ms: 29_999 }));
    expect(planHolds(input({ me: 'a', holds: fresh, nodes: ['a', 'b', 'c'] }))).toEqual({ take: [], give: [] });
    // Pinned (a link in progress) and unsettled lines stay; the one settled and free to move goes.
    const mixed = names(30).map((i, k) => hold(i, 'a', { held_ms: k < 2 ? 60_000 : 0 }));
    expect(planHolds(input({ me: 'a', holds: mixed, nodes: ['a', 'b', 'c'], pinned: new Set(['l000']) })).give).toEqual(['l001']);
    expect(planHolds(input({ me: 'a', holds: mixed, nodes: ['a', 'b', 'c'], pinned: new Set(['l000', 'l001']) })).give).toEqual([]);
  });

  it('at its share a node never gives, though another holds less than the share', () => {
    // 31 lines on 3 nodes, share 11: a at 11 with the others at 10 is as even as it gets.
    const holds = names(31).map((i, k) => hold(i, k < 11 ? 'a' : k < 21 ? 'b' : 'c'));
    expect(planHolds(input({ me: 'a', holds, nodes: ['a', 'b', 'c'] }))).toEqual({ take: [], give: [] });
    expect(planHolds(input({ me: 'a', holds: names(30).map((i, k) => hold(i, k < 15 ? 'a' : 'b')), nodes: ['a', 'b'] }))).toEqual({ take: [], give: [] });
    // Over its share by 6 (b came back): a few lines go, never more than the excess.
    expect(planHolds(input({ me: 'a', holds: names(30).map((i, k) => hold(i, k < 16 ? 'a' : 'c')), nodes: ['a', 'b', 'c'] })).give).toHaveLength(
      GIVES_PER_PASS,
    );
    expect(planHolds(input({ me: 'a', holds: names(30).map((i, k) => hold(i, k < 12 ? 'a' : 'c')), nodes: ['a', 'b', 'c'] })).give).toHaveLength(2);
  });

  it('a node that is not yet present to itself still counts its own lines against its share', () => {
    const holds = names(4).map((i) => hold(i, 'a', { presente: false }));
    expect(planHolds(input({ me: 'a', holds, nodes: ['a', 'b'] })).take).toEqual([]);
  });
});

/**
 * The keepers of several nodes over one in-memory table, pass after pass,
 * each node in a random order per round: the store's take as PostgreSQL
 * makes it (holdTakable per line), gives, cooling for three passes, and
 * lines settled after one round.
 */
class Cluster {
  readonly rows = new Map<string, { nodo: string | null; since: number }>();
  readonly cooling = new Map<string, Map<string, number>>();
  round = 0;
  constructor(
    lines: number,
    public nodes: string[],
    private readonly random: () => number,
  ) {
    for (const i of names(lines)) this.rows.set(i, { nodo: null, since: 0 });
  }

  holds(): EngineHold[] {
    return [...this.rows].map(([i, r]) =>
      hold(i, r.nodo, { presente: r.nodo !== null && this.nodes.includes(r.nodo), held_ms: (this.round - r.since) * 1000 }),
    );
  }

  /** One round: each node one pass; whether anything moved. */
  step(): boolean {
    this.round++;
    let moved = false;
    const order = [...this.nodes].sort(() => this.random() - 0.5);
    for (const me of order) {
      const cool = this.cooling.get(me) ?? new Map<string, number>();
      this.cooling.set(me, cool);
      for (const [i, until] of cool) if (until <= this.round) cool.delete(i);
      const plan = planHolds({ me, holds: this.holds(), nodes: this.nodes, cooling: new Set(cool.keys()), pinned: new Set(), settleMs: 1000 }, this.random);
      for (const i of plan.take) {
        const r = this.rows.get(i)!;
        if (r.nodo === me || !holdTakable({ nodo: r.nodo, presente: r.nodo !== null && this.nodes.includes(r.nodo) }, me)) continue;
        moved = true;
        this.rows.set(i, { nodo: me, since: this.round });
      }
      for (const i of plan.give) {
        moved = true;
        this.rows.set(i, { nodo: null, since: this.round });
        cool.set(i, this.round + 3);
      }
    }
    return moved;
  }

  /** Rounds until nothing moves for longer than a cooling lasts. */
  settle(): number {
    let quiet = 0;
    for (let n = 0; n < 500; n++) {
      quiet = this.step() ? 0 : quiet + 1;
      if (quiet > 4) return this.round;
    }
    throw new Error(`no rest after 500 rounds: ${JSON.stringify(this.counts())}`);
  }

  counts(): Record<string, number> {
    const c: Record<string, number> = Object.fromEntries(this.nodes.map((n) => [n, 0]));
    for (const r of this.rows.values()) if (r.nodo !== null) c[r.nodo] = (c[r.nodo] ?? 0) + 1;
    return c;
  }

  expectBalanced(): void {
    const share = shareOf(this.rows.size, this.nodes.length);
    for (const [n, c] of Object.entries(this.counts())) expect(c, `${n} of ${JSON.stringify(this.counts())}`).toBeLessThanOrEqual(share);
    for (const [i, r] of this.rows) expect(r.nodo !== null && this.nodes.includes(r.nodo), `${i} held by ${r.nodo}`).toBe(true);
  }
}

describe('planHolds: passes of several nodes until they rest', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`30 lines on 3 nodes from nothing: 10 each (seed ${seed})`, () => {
      const c = new Cluster(30, ['a', 'b', 'c'], seeded(seed));
      c.settle();
      c.expectBalanced();
      expect(c.counts()).toEqual({ a: 10, b: 10, c: 10 });
    });

    it(`31 lines on 3 nodes: none over 11, every line held (seed ${seed})`, () => {
      const c = new Cluster(31, ['a', 'b', 'c'], seeded(seed));
      c.settle();
      c.expectBalanced();
    });

    it(`one node holding 30, then two more join: spread to 10 each (seed ${seed})`, () => {
      const c = new Cluster(30, ['a'], seeded(seed));
      c.settle();
      expect(c.counts()).toEqual({ a: 30 });
      c.nodes = ['a', 'b', 'c'];
      c.settle();
      c.expectBalanced();
    });

    it(`a node leaving (3 to 2): its lines are taken over, none over 15 (seed ${seed})`, () => {
      const c = new Cluster(30, ['a', 'b', 'c'], seeded(seed));
      c.settle();
      c.nodes = ['a', 'c'];
      c.settle();
      c.expectBalanced();
      expect(c.counts()).toEqual({ a: 15, c: 15 });
    });

    it(`31 lines, a node leaving and a new one joining (seed ${seed})`, () => {
      const c = new Cluster(31, ['a', 'b', 'c'], seeded(seed));
      c.settle();
      c.nodes = ['a', 'b'];
      c.settle();
      c.expectBalanced();
      c.nodes = ['a', 'b', 'd'];
      c.settle();
      c.expectBalanced();
    });
  }
});
