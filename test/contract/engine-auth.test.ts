import { describe, expect, it } from 'vitest';
import { ADAPTERS, storeEachTest } from './adapters.js';

const b = (s: string) => Buffer.from(s, 'utf8');

/** The engine's sealed state (D-116): opaque bytes by (instancia, kind, id), a write all or nothing. */
for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: EngineAuthStore contract`, () => {
    const ctx = storeEachTest(adapter);

    it('reads many ids of one kind in one call; absent ids and other kinds and lines are left out; bytes come back as written', async () => {
      const bytes = Buffer.from([0, 1, 2, 255, 0, 128]);
      await ctx.store.writeAuth('l1', [
        { kind: 'session', id: 'a@s', value: b('A') },
        { kind: 'session', id: 'b@s', value: bytes },
        { kind: 'pre-key', id: 'a@s', value: b('other kind') },
      ]);
      await ctx.store.writeAuth('l2', [{ kind: 'session', id: 'a@s', value: b('other line') }]);
      const got = await ctx.store.readAuth('l1', 'session', ['a@s', 'b@s', 'missing']);
      expect([...got.keys()].sort()).toEqual(['a@s', 'b@s']);
      expect(got.get('a@s')!.toString()).toBe('A');
      expect(Buffer.compare(got.get('b@s')!, bytes)).toBe(0);
      expect((await ctx.store.readAuth('l1', 'session', [])).size).toBe(0);
    });

    it('readAuthKind gives every value of one kind of one line, nothing of other kinds or lines; none is an empty map', async () => {
      await ctx.store.writeAuth('l1', [
        { kind: 'inbound-plain', id: 'h1', value: b('one') },
        { kind: 'inbound-plain', id: 'h2', value: b('two') },
        { kind: 'session', id: 'h3', value: b('other kind') },
      ]);
      await ctx.store.writeAuth('l2', [{ kind: 'inbound-plain', id: 'h4', value: b('other line') }]);
      const got = await ctx.store.readAuthKind('l1', 'inbound-plain');
      expect(Object.fromEntries([...got].map(([k, v]) => [k, v.toString()]))).toEqual({ h1: 'one', h2: 'two' });
      await ctx.store.writeAuth('l1', [{ kind: 'inbound-plain', id: 'h1', value: null }]);
      expect([...(await ctx.store.readAuthKind('l1', 'inbound-plain')).keys()]).toEqual(['h2']);
      expect((await ctx.store.readAuthKind('l3', 'inbound-plain')).size).toBe(0);
    });

    it('writes replace, nulls remove, a (kind, id) given twice keeps its last value', async () => {
      await ctx.store.writeAuth('l1', [
        { kind: 'pre-key', id: '1', value: b('one') },
        { kind: 'pre-key', id: '2', value: b('two') },
      ]);
      await ctx.store.writeAuth('l1', [
        { kind: 'pre-key', id: '1', value: null },
        { kind: 'pre-key', id: '2', value: b('two again') },
        { kind: 'pre-key', id: '3', value: b('first') },
        { kind: 'pre-key', id: '3', value: b('last') },
        { kind: 'pre-key', id: '4', value: b('gone') },
        { kind: 'pre-key', id: '4', value: null },
        { kind: 'pre-key', id: 'never', value: null },
      ]);
      const got = await ctx.store.readAuth('l1', 'pre-key', ['1', '2', '3', '4']);
      expect(Object.fromEntries([...got].map(([k, v]) => [k, v.toString()]))).toEqual({ '2': 'two again', '3': 'last' });
    });

    it('a thousand keys in one write, read back in one call', async () => {
      const ids = Array.from({ length: 1000 }, (_, i) => String(i + 1));
      await ctx.store.writeAuth(
        'l1',
        ids.map((id) => ({ kind: 'pre-key', id, value: b(`k${id}`) })),
      );
      const got = await ctx.store.readAuth('l1', 'pre-key', ids);
      expect(got.size).toBe(1000);
      expect(got.get('777')!.toString()).toBe('k777');
    });

    it('a write that fails midway leaves nothing of itself (one transaction)', async () => {
      await ctx.store.writeAuth('l1', [{ kind: 'session', id: 'kept', value: b('before') }]);
      // A row the database refuses, between others: the whole write must roll back.
      await ctx.exec(
        adapter.name === 'sqlite'
          ? `CREATE TRIGGER refuse_boom BEFORE INSERT ON motor_auth WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'refused for the test'); END;`
          : `CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'boom' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$;
             CREATE TRIGGER refuse_boom BEFORE INSERT ON motor_auth FOR EACH ROW EXECUTE FUNCTION refuse_boom();`,
      );
      await expect(
        ctx.store.writeAuth('l1', [
          { kind: 'session', id: 'kept', value: null },
          { kind: 'session', id: 'a', value: b('a') },
          { kind: 'session', id: 'boom', value: b('x') },
          { kind: 'session', id: 'z', value: b('z') },
        ]),
      ).rejects.toThrow();
      const got = await ctx.store.readAuth('l1', 'session', ['kept', 'a', 'boom', 'z']);
      expect(Object.fromEntries([...got].map(([k, v]) => [k, v.toString()]))).toEqual({ kept: 'before' });
    });

    it("clearAuth removes one line's rows, of every kind; authInstancias lists the lines holding any", async () => {
      for (const l of ['pasarela-3', 'pasarela-1', 'pasarela-2'])
        await ctx.store.writeAuth(l, [
          { kind: 'creds', id: '', value: b('c') },
          { kind: 'session', id: 'x', value: b('s') },
        ]);
      expect(await ctx.store.authInstancias()).toEqual(['pasarela-1', 'pasarela-2', 'pasarela-3']);
      await ctx.store.clearAuth('pasarela-2');
      await ctx.store.clearAuth('never-there');
      expect(await ctx.store.authInstancias()).toEqual(['pasarela-1', 'pasarela-3']);
      expect((await ctx.store.readAuth('pasarela-2', 'creds', [''])).size).toBe(0);
      expect((await ctx.store.readAuth('pasarela-1', 'creds', [''])).size).toBe(1);
      // Kept across a restart.
      const again = await ctx.reopen();
      expect((await again.readAuth('pasarela-3', 'session', ['x'])).get('x')!.toString()).toBe('s');
    });
  });
}
