import { describe, expect, it } from 'vitest';
import { ADAPTERS, storeEachTest } from './adapters.js';

/** The adapters' key-value space. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: KvStore contract`, () => {
    const ctx = storeEachTest(adapter);

    it('kv entries with an expiry are removed once past it, in batches; the others stay', async () => {
      await ctx.store.kvSet('ns', 'keep', 1);
      await ctx.store.kvSet('ns', 'old1', 2, 10);
      await ctx.store.kvSet('ns', 'old2', 3, 20);
      await ctx.store.kvSet('ns', 'young', 4, 1000);
      expect(await ctx.store.kvExpire(500, 1)).toBe(1);
      expect(await ctx.store.kvExpire(500, 10)).toBe(1);
      expect(await ctx.store.kvExpire(500, 10)).toBe(0);
      expect((await ctx.store.kvList('ns')).map((e) => e.key)).toEqual(['keep', 'young']);
    });
  });
}

/** The many-forms: one read, one write, one removal for several entries (the simulator's per message). */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: KvStore many-forms`, () => {
    const ctx = storeEachTest(adapter);

    it('reads several entries in the order asked, null where absent, across namespaces', async () => {
      await ctx.store.kvSet('a', 'x', { n: 1 });
      await ctx.store.kvSet('b', 'x', 'two');
      expect(
        await ctx.store.kvGetMany([
          { ns: 'b', key: 'x' },
          { ns: 'a', key: 'missing' },
          { ns: 'a', key: 'x' },
          { ns: 'b', key: 'x' },
        ]),
      ).toEqual(['two', null, { n: 1 }, 'two']);
      expect(await ctx.store.kvGetMany([])).toEqual([]);
    });

    it('writes several entries at once, replacing values and expiries; a key given twice keeps its last value', async () => {
      await ctx.store.kvSet('ns', 'old', 'before', 10);
      await ctx.store.kvSetMany([
        { ns: 'ns', key: 'old', value: 'after' },
        { ns: 'ns', key: 'new', value: [1, 2], expiraAt: 10 },
        { ns: 'other', key: 'twice', value: 1 },
        { ns: 'other', key: 'twice', value: 2 },
      ]);
      expect(await ctx.store.kvGet('ns', 'old')).toBe('after');
      expect(await ctx.store.kvGet('other', 'twice')).toBe(2);
      // 'old' no longer expires; 'new' does.
      expect(await ctx.store.kvExpire(500, 10)).toBe(1);
      expect((await ctx.store.kvList('ns')).map((e) => e.key)).toEqual(['old']);
    });

    it('removes several entries at once and leaves the rest, absent keys ignored', async () => {
      await ctx.store.kvSetMany([
        { ns: 'ns', key: 'a', value: 1 },
        { ns: 'ns', key: 'b', value: 2 },
        { ns: 'ns', key: 'c', value: 3 },
      ]);
      await ctx.store.kvDeleteMany([
        { ns: 'ns', key: 'a' },
        { ns: 'ns', key: 'c' },
        { ns: 'ns', key: 'nope' },
        { ns: 'elsewhere', key: 'b' },
      ]);
      expect(await ctx.store.kvList('ns')).toEqual([{ key: 'b', value: 2 }]);
    });
  });
}

/** Claims and takes: the panel's one-use form tokens and secrets shown once, on several nodes. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: KvStore claims and takes`, () => {
    const ctx = storeEachTest(adapter);

    it('kvClaim: of claims of one key at once exactly one stores its value (null); the others get that value; it expires', async () => {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => ctx.store.kvClaim('form', 'tok', { n: i }, 1000)));
      const winners = answers.map((a, i) => (a === null ? i : -1)).filter((i) => i >= 0);
      expect(winners).toHaveLength(1);
      for (const a of answers) if (a !== null) expect(a).toEqual({ n: winners[0] });
      // Later claims see the first value, kvSet may replace it, and it expires as any entry.
      expect(await ctx.store.kvClaim('form', 'tok', { n: 99 }, 1000)).toEqual({ n: winners[0] });
      await ctx.store.kvSet('form', 'tok', { to: '/panel/x' }, 1000);
      expect(await ctx.store.kvClaim('form', 'tok', { n: 99 }, 1000)).toEqual({ to: '/panel/x' });
      expect(await ctx.store.kvExpire(2000, 10)).toBe(1);
      expect(await ctx.store.kvClaim('form', 'tok', { n: 7 }, 3000)).toBeNull();
    });

    it('kvTake: returns the value and removes it; of takes at once one gets it; absent is null', async () => {
      await ctx.store.kvSet('shown', 'a', { secret: 's' }, 1000);
      const takes = await Promise.all(Array.from({ length: 6 }, () => ctx.store.kvTake('shown', 'a')));
      expect(takes.filter((t) => t !== null)).toEqual([{ secret: 's' }]);
      expect(await ctx.store.kvGet('shown', 'a')).toBeNull();
      expect(await ctx.store.kvTake('shown', 'nope')).toBeNull();
    });
  });
}
