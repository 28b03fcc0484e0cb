import * as baileys from 'baileys';
import type { SignalKeyStoreWithTransaction, SignalRepositoryWithLIDStore } from 'baileys';
import { ProtocolAddress } from 'libsignal';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { engineCipherOf } from '../../src/core/engine/engine-key.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { RatchetAhead } from '../../src/gateways/baileys/ratchet-ahead.js';
import { SignalParty } from '../fakewa/signal-party.js';
import { ADAPTERS, storeEachTest } from '../contract/adapters.js';

/**
 * A send's Signal ratchet is stored before the encrypt returns (D-194), over
 * the real store, Baileys' own repository and transaction layer, and a
 * contact that really decrypts (libsignal). Baileys encrypts and sends in one
 * transaction that commits after the stanza is out: a node killed in between
 * leaves what the store holds as the next holder of the line finds it.
 */
const cipher = engineCipherOf(Buffer.alloc(32, 0x5a));
const logger = pino({ level: 'silent' });
const INST = 'pasarela-r';
const CONTACT = '5491100000002@s.whatsapp.net';
// The contact's name for the line's device: any fixed one, its sessions are keyed by it.
const LINE = new ProtocolAddress('5491100000009', 1);
const text = (t: string) => Buffer.from(baileys.writeRandomPadMax16(baileys.proto.Message.encode({ conversation: t }).finish()));
const read = (plain: Buffer) => baileys.proto.Message.decode(baileys.unpadRandomMax16(plain)).conversation ?? '';

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: a send's ratchet, stored before its stanza can leave`, () => {
    const ctx = storeEachTest(adapter);

    /** A node holding the line: its stored state as the socket opens it, and the repository the socket builds over it. */
    async function holder(ahead: boolean) {
      const auth = await storedAuthState(baileys, ctx.store, cipher, INST);
      await auth.saveCreds();
      const cached = baileys.makeCacheableSignalKeyStore(auth.state.keys, logger);
      const keys: SignalKeyStoreWithTransaction = baileys.addTransactionCapability(cached, logger, { maxCommitRetries: 1, delayBetweenTriesMs: 1 });
      const make = baileys.DEFAULT_CONNECTION_CONFIG.makeSignalRepository;
      let repo: SignalRepositoryWithLIDStore;
      if (ahead) {
        const a = new RatchetAhead(cached);
        repo = a.wrap(make({ creds: auth.state.creds, keys: a.keys(keys) }, logger));
      } else repo = make({ creds: auth.state.creds, keys }, logger);
      // As relayMessage: the encrypt and the stanza's send in one transaction, committed after the send.
      const send = (t: string, sent: (ct: { type: string; ciphertext: Uint8Array }) => Promise<void>) =>
        keys.transaction(async () => sent(await repo.encryptMessage({ jid: CONTACT, data: text(t) })), 'me');
      return { repo, send };
    }

    async function killedAfterTheStanza(ahead: boolean) {
      const contact = new SignalParty();
      const b = contact.bundle();
      const k = (x: Buffer) => Buffer.concat([Buffer.from([5]), x]);
      const first = await holder(ahead);
      await first.repo.injectE2ESession({
        jid: CONTACT,
        session: {
          registrationId: b.registrationId,
          identityKey: k(b.identity),
          signedPreKey: { keyId: b.signedPreKey.id, publicKey: k(b.signedPreKey.pub), signature: b.signedPreKey.signature },
          preKey: { keyId: b.preKey!.id, publicKey: k(b.preKey!.pub) },
        },
      });
      const decrypt = async (ct: { type: string; ciphertext: Uint8Array }) => read(await contact.decrypt(LINE, ct.type, Buffer.from(ct.ciphertext)));
      const got: string[] = [];
      await first.send('uno', async (ct) => void got.push(await decrypt(ct)));
      // The second send: the contact reads its stanza, the next holder opens the line from the store, and the node dies
      // before its transaction commits (the work throws: Baileys commits nothing).
      let next: Awaited<ReturnType<typeof holder>> | undefined;
      const killed = first.send('dos', async (ct) => {
        got.push(await decrypt(ct));
        next = await holder(ahead);
        await next.repo.validateSession(CONTACT);
        throw new Error('killed');
      });
      await expect(killed).rejects.toThrow('killed');
      let third = '';
      await next!.send('tres', async (ct) => {
        third = await decrypt(ct).catch((e: unknown) => `not read: ${String(e)}`);
      });
      return { got, third };
    }

    it('the next holder, opening the stored state while the last send was out and uncommitted, sends what the contact reads', async () => {
      const r = await killedAfterTheStanza(true);
      expect(r.got).toEqual(['uno', 'dos']);
      expect(r.third).toBe('tres');
    });

    it("without it, Baileys' own order: the next holder reuses a key the contact has used (the failure D-194 mends)", async () => {
      const r = await killedAfterTheStanza(false);
      expect(r.got).toEqual(['uno', 'dos']);
      expect(r.third).toMatch(/not read: .*Key used already/);
    });
  });
}
