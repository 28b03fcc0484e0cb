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
