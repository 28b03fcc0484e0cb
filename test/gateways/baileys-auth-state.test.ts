import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as baileys from 'baileys';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { engineCipherOf, EngineStateUnreadable } from '../../src/core/engine/engine-key.js';
import type { EngineAuthStore } from '../../src/core/ports/engine-auth.js';
import type { Store } from '../../src/core/ports/store.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import type { PgStore } from '../../src/store/postgres/store.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { ADAPTERS, storeEachTest } from '../contract/adapters.js';

/**
 * Baileys' authentication state over the store, with the real `baileys`
 * module: its own credentials, its own pre-key generation and its own
 * transactions write through storedAuthState, on every dialect.
 */
const { BufferJSON } = baileys;
const key = Buffer.alloc(32, 0x5a);
const cipher = engineCipherOf(key);
const asJson = (v: unknown) => JSON.stringify(v, BufferJSON.replacer);

/** The store, counting its reads and writes. */
function counted(store: Store): EngineAuthStore & { reads: number; writes: number } {
  const c = {
    reads: 0,
    writes: 0,
    readAuth: (...a: Parameters<Store['readAuth']>) => (c.reads++, store.readAuth(...a)),
    readAuthKind: (...a: Parameters<Store['readAuthKind']>) => (c.reads++, store.readAuthKind(...a)),
    writeAuth: (...a: Parameters<Store['writeAuth']>) => (c.writes++, store.writeAuth(...a)),
    clearAuth: (i: string) => store.clearAuth(i),
    authInstancias: () => store.authInstancias(),
  };
  return c;
}

/** Every byte the store holds of the engine's state: the SQLite files (database and WAL), or PostgreSQL's rows. */
async function storedBytes(adapter: string, store: Store): Promise<Buffer> {
  if (adapter === 'sqlite') {
    const file = (store as SqliteStore).db.name;
    const dir = dirname(file);
    return Buffer.concat(readdirSync(dir).map((f) => readFileSync(join(dir, f))));
  }
  const rows = await (store as PgStore).db.q<{ instancia: string; kind: string; id: string; valor: Buffer }>(
    'SELECT instancia, kind, id, valor FROM motor_auth',
  );
  return Buffer.concat(rows.flatMap((r) => [Buffer.from(`${r.instancia}|${r.kind}|${r.id}|`), r.valor]));
}

/** The forms a secret could take in a store that kept it in the clear: raw, base64 (BufferJSON's), hex. */
const forms = (secret: Uint8Array) => [
  Buffer.from(secret),
  Buffer.from(Buffer.from(secret).toString('base64')),
  Buffer.from(Buffer.from(secret).toString('hex')),
];

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: Baileys' auth state in the store, sealed`, () => {
    const ctx = storeEachTest(adapter);

    it("new credentials are Baileys' own; saved, they come back whole after a restart", async () => {
      const first = await storedAuthState(baileys, ctx.store, cipher, 'pasarela-1');
      const creds = first.state.creds;
      expect(creds.registered).toBe(false);
      expect(creds.noiseKey.private).toHaveLength(32);
      creds.registered = true;
      creds.me = { id: '5215550001111:1@s.whatsapp.net', lid: '100000000000001:1@lid' };
      await first.saveCreds();
      const store = await ctx.reopen();
      const again = await storedAuthState(baileys, store, cipher, 'pasarela-1');
      expect(asJson(again.state.creds)).toBe(asJson(creds));
      expect(Buffer.isBuffer(again.state.creds.noiseKey.private)).toBe(true);
      // Another line has its own.
      const other = await storedAuthState(baileys, store, cipher, 'pasarela-2');
      expect(other.state.creds.registered).toBe(false);
    });

    it("Baileys' pre-key generation writes 812 keys in one set; each kind reads back as Baileys wrote it; one read per get", async () => {
      const s = counted(ctx.store);
      const { state } = await storedAuthState(baileys, s, cipher, 'pasarela-1');
      s.writes = 0;
      s.reads = 0;
      const { update, preKeys } = await baileys.getNextPreKeys(state, 812);
      expect(s.writes).toBe(1);
      expect(s.reads).toBe(1);
      expect(Object.keys(preKeys)).toHaveLength(812);
      expect(update.nextPreKeyId).toBe(813);
      const some = await state.keys.get('pre-key', ['1', '400', '812', '9999']);
      expect(s.reads).toBe(2);
      expect(Buffer.from(some['400']!.private).equals(Buffer.from(preKeys[400]!.private))).toBe(true);
      expect(some['9999']).toBeNull();

      const appKey = baileys.proto.Message.AppStateSyncKeyData.fromObject({ keyData: Buffer.alloc(32, 3), timestamp: 1700000000 });
      await state.keys.set({
        session: { '200000000000002.0': new Uint8Array([1, 2, 3]) },
        'app-state-sync-key': { AAAAAP8x: appKey },
        'lid-mapping': { '5215559998888': '200000000000002' },
        'sender-key-memory': { 'g@g.us': { 'a@s.whatsapp.net': true } },
        'device-list': { '5215559998888': ['0', '1'] },
      });
      expect(s.writes).toBe(2);
      const session = await state.keys.get('session', ['200000000000002.0']);
      expect([...session['200000000000002.0']!]).toEqual([1, 2, 3]);
      const app = (await state.keys.get('app-state-sync-key', ['AAAAAP8x']))['AAAAAP8x']!;
      expect(app).toBeInstanceOf(baileys.proto.Message.AppStateSyncKeyData);
      expect(Buffer.from(app.keyData!).equals(Buffer.alloc(32, 3))).toBe(true);
      expect((await state.keys.get('lid-mapping', ['5215559998888']))['5215559998888']).toBe('200000000000002');
      expect((await state.keys.get('sender-key-memory', ['g@g.us']))['g@g.us']).toEqual({ 'a@s.whatsapp.net': true });
      expect((await state.keys.get('device-list', ['5215559998888']))['5215559998888']).toEqual(['0', '1']);
    });

    it("a null removes a key; a Baileys transaction's many sets are committed as one write", async () => {
      const s = counted(ctx.store);
      const { state } = await storedAuthState(baileys, s, cipher, 'pasarela-1');
      await state.keys.set({ session: { a: new Uint8Array([1]), b: new Uint8Array([2]) }, 'pre-key': { '1': baileys.Curve.generateKeyPair() } });
      await state.keys.set({ session: { a: null }, 'pre-key': { '1': null } });
      expect(await state.keys.get('session', ['a', 'b'])).toEqual({ a: null, b: Buffer.from([2]) });
      expect((await state.keys.get('pre-key', ['1']))['1']).toBeNull();

      const keys = baileys.addTransactionCapability(state.keys, pino({ level: 'silent' }), { maxCommitRetries: 1, delayBetweenTriesMs: 1 });
      s.writes = 0;
      await keys.transaction(async () => {
        await keys.set({ session: { c: new Uint8Array([3]) } });
        await keys.set({ session: { d: new Uint8Array([4]) }, 'lid-mapping': { x: 'y' } });
        await keys.set({ session: { b: null } });
      }, 'test');
      expect(s.writes).toBe(1);
      expect(await state.keys.get('session', ['b', 'c', 'd'])).toEqual({ b: null, c: Buffer.from([3]), d: Buffer.from([4]) });
    });

    it('a set that fails midway leaves nothing of itself', async () => {
      const { state } = await storedAuthState(baileys, ctx.store, cipher, 'pasarela-1');
      await state.keys.set({ session: { kept: new Uint8Array([9]) } });
      await ctx.exec(
        adapter.name === 'sqlite'
          ? `CREATE TRIGGER refuse_boom BEFORE INSERT ON motor_auth WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'refused for the test'); END;`
          : `CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'boom' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$;
             CREATE TRIGGER refuse_boom BEFORE INSERT ON motor_auth FOR EACH ROW EXECUTE FUNCTION refuse_boom();`,
      );
      await expect(
        state.keys.set({
          session: { kept: null, a: new Uint8Array([1]) },
          'pre-key': { boom: baileys.Curve.generateKeyPair() },
          'lid-mapping': { z: 'z' },
        }),
      ).rejects.toThrow();
      expect(await state.keys.get('session', ['kept', 'a'])).toEqual({ kept: Buffer.from([9]), a: null });
      expect(await state.keys.get('lid-mapping', ['z'])).toEqual({ z: null });
    });

    it("the store holds no plaintext of a known key: not the credentials' private keys, not a pre-key's, in any form", async () => {
      const { state, saveCreds } = await storedAuthState(baileys, ctx.store, cipher, 'pasarela-1');
      await saveCreds();
      const { preKeys } = await baileys.getNextPreKeys(state, 30);
      const secrets = [state.creds.noiseKey.private, state.creds.signedIdentityKey.private, state.creds.advSecretKey, preKeys[7]!.private].map((s) =>
        typeof s === 'string' ? Buffer.from(s, 'base64') : s,
      );
      if (adapter.name === 'sqlite') await ctx.store.close();
      const bytes = await storedBytes(adapter.name, adapter.name === 'sqlite' ? await ctx.reopen() : ctx.store);
      // The search works: what is stored in the clear (the line's name, the kinds) is found.
      expect(bytes.includes(Buffer.from('pasarela-1'))).toBe(true);
      expect(bytes.includes(Buffer.from('pre-key'))).toBe(true);
      for (const secret of secrets) for (const form of forms(secret)) expect(bytes.includes(form)).toBe(false);
      expect(bytes.includes(Buffer.from('"type":"Buffer"'))).toBe(false);
    });

    it('another key refuses clearly, naming the line and both key ids, for the credentials and for a key', async () => {
      const first = await storedAuthState(baileys, ctx.store, cipher, 'pasarela-7');
      await first.saveCreds();
      await first.state.keys.set({ session: { s: new Uint8Array([1]) } });
      const wrong = engineCipherOf(Buffer.alloc(32, 0x11));
      const err = await storedAuthState(baileys, ctx.store, wrong, 'pasarela-7').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineStateUnreadable);
      expect((err as EngineStateUnreadable).instancia).toBe('pasarela-7');
      expect((err as Error).message).toBe(
        `the engine's stored state of line pasarela-7 cannot be read: its creds "": it was sealed with another key (id ${cipher.keyId}; this node's key is ${wrong.keyId}); give the key file it was sealed with, or link the line again with a new scan`,
      );
      // A row moved to another line does not open there either.
      const moved = (await ctx.store.readAuth('pasarela-7', 'session', ['s'])).get('s')!;
      await ctx.store.writeAuth('pasarela-8', [{ kind: 'session', id: 's', value: moved }]);
      const eight = await storedAuthState(baileys, ctx.store, cipher, 'pasarela-8');
      await expect(eight.state.keys.get('session', ['s'])).rejects.toThrow(
        `the engine's stored state of line pasarela-8 cannot be read: its session "s": it does not open with this key (altered, or moved from another row)`,
      );
      // clear() removes the line's state: the next start is a new link.
      await first.clear();
      expect((await storedAuthState(baileys, ctx.store, wrong, 'pasarela-7')).state.creds.registered).toBe(false);
    });
  });
}
