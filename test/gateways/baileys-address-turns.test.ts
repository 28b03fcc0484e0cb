import { AsyncLocalStorage } from 'node:async_hooks';
import * as baileys from 'baileys';
import type { SignalKeyStoreWithTransaction, SignalRepositoryWithLIDStore } from 'baileys';
import { ProtocolAddress } from 'libsignal';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { engineCipherOf } from '../../src/core/engine/engine-key.js';
import { takeTurns, turnsHeld } from '../../src/gateways/baileys/address-turns.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { SignalParty, type Bundle } from '../fakewa/signal-party.js';
import { ADAPTERS, storeEachTest } from '../contract/adapters.js';

/**
 * Two lines of one process sending to one contact at once (D-195), over the
 * real store, Baileys' own repository and transaction layer, and a contact
 * that really decrypts (libsignal). libsignal queues both encrypts on the
 * contact's address in one queue for the process; the second, queued behind
 * the first, ran in the first's async context, outside its own send's
 * transaction, and could not see the session that transaction had just made.
 */
const cipher = engineCipherOf(Buffer.alloc(32, 0x5b));
const logger = pino({ level: 'silent' });
const CONTACT = '5491100000003@s.whatsapp.net';
const text = (t: string) => Buffer.from(baileys.writeRandomPadMax16(baileys.proto.Message.encode({ conversation: t }).finish()));
const read = (plain: Buffer) => baileys.proto.Message.decode(baileys.unpadRandomMax16(plain)).conversation ?? '';
const k = (x: Buffer) => Buffer.concat([Buffer.from([5]), x]);
const session = (b: Bundle) => ({
  registrationId: b.registrationId,
  identityKey: k(b.identity),
  signedPreKey: { keyId: b.signedPreKey.id, publicKey: k(b.signedPreKey.pub), signature: b.signedPreKey.signature },
  preKey: { keyId: b.preKey!.id, publicKey: k(b.preKey!.pub) },
});

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: two lines of one process, one contact, at once`, () => {
    const ctx = storeEachTest(adapter);

    /** A line as its socket builds it; `gate`, when set, holds its next read of a session until it opens. */
    async function line(inst: string, turns: boolean) {
      const auth = await storedAuthState(baileys, ctx.store, cipher, inst);
      await auth.saveCreds();
      const cached = baileys.makeCacheableSignalKeyStore(auth.state.keys, logger);
      const keys: SignalKeyStoreWithTransaction = baileys.addTransactionCapability(cached, logger, { maxCommitRetries: 1, delayBetweenTriesMs: 1 });
      const held = { gate: undefined as Promise<void> | undefined, reached: () => undefined as void };
      const gated: SignalKeyStoreWithTransaction = {
        ...keys,
        get: async (type, ids) => {
          const gate = type === 'session' ? held.gate : undefined;
          if (gate) {
            held.gate = undefined;
            held.reached();
            await gate;
          }
          return keys.get(type, ids);
        },
      };
      const made = baileys.DEFAULT_CONNECTION_CONFIG.makeSignalRepository({ creds: auth.state.creds, keys: gated }, logger);
      const repo: SignalRepositoryWithLIDStore = turns ? takeTurns(made) : made;
      /** Holds the line's next session read; resolves the first promise once a read is held there. */
      const hold = (until: Promise<void>) => {
        held.gate = until;
        return new Promise<void>((r) => (held.reached = r));
      };
      return { repo, keys, hold };
    }

    async function twoAtOnce(turns: boolean) {
      const contact = new SignalParty();
      const a = await line('pasarela-a', turns);
      const b = await line('pasarela-b', turns);
      await b.repo.injectE2ESession({ jid: CONTACT, session: session(contact.bundle()) });
      let open!: () => void;
      const opened = new Promise<void>((r) => (open = r));
      let sentB: Promise<{ type: string; ciphertext: Uint8Array }> | undefined;
      // Line b's send comes from elsewhere (another request), not from inside line a's transaction.
      const elsewhere = AsyncLocalStorage.snapshot();
      // As relayMessage: line a's send makes its session with the contact in its transaction, then encrypts. Line b's
      // encrypt to the same contact is in libsignal's queue meanwhile, held at its session read.
      const sentA = a.keys.transaction(async () => {
        await a.repo.injectE2ESession({ jid: CONTACT, session: session(contact.bundle()) });
        const heldB = b.hold(opened);
        sentB = elsewhere(() => b.repo.encryptMessage({ jid: CONTACT, data: text('de b') }));
        if (!turns) await heldB;
        const encrypting = a.repo.encryptMessage({ jid: CONTACT, data: text('de a') });
        setImmediate(open);
        return encrypting;
      }, 'me');
      const [ra, rb] = await Promise.allSettled([sentA, until(() => sentB).then((p) => p)]);
      const got = async (r: PromiseSettledResult<{ type: string; ciphertext: Uint8Array }>, device: string) =>
        r.status === 'fulfilled'
          ? read(await contact.decrypt(new ProtocolAddress(device, 1), r.value.type, Buffer.from(r.value.ciphertext)))
          : `not sent: ${String(r.reason)}`;
      return { a: await got(ra, '5491100000011'), b: await got(rb, '5491100000012') };
    }

    it('each encrypt runs in its own send: both sends made, the contact reads both', async () => {
      expect(await twoAtOnce(true)).toEqual({ a: 'de a', b: 'de b' });
      expect(turnsHeld()).toBe(0);
    });

    it("without turns, libsignal's order: the queued encrypt runs outside its send and finds no session (the failure D-195 mends)", async () => {
      const r = await twoAtOnce(false);
      expect(r.b).toBe('de b');
      expect(r.a).toMatch(/not sent: .*No sessions/);
    });
  });
}

/** Polls a value into being (the second send is started inside the first's transaction). */
async function until<T>(f: () => T | undefined): Promise<T> {
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
}
