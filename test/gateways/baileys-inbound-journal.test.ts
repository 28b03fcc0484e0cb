import * as baileys from 'baileys';
import type { BinaryNode, SignalRepositoryWithLIDStore } from 'baileys';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { engineCipherOf } from '../../src/core/engine/engine-key.js';
import { storedAuthState } from '../../src/gateways/baileys/auth-state.js';
import { JOURNAL_KEEP_MS, JOURNAL_KIND, journalId, replayOf, SocketJournal, type JournalEntry } from '../../src/gateways/baileys/inbound-journal.js';
import { ADAPTERS, storeEachTest } from '../contract/adapters.js';

/**
 * The inbound journal's wrapper of Baileys' signal repository (D-128), over
 * the real store and Baileys' own transaction layer (addTransactionCapability,
 * as the socket builds it). The repository underneath is a stand-in for
 * libsignal that behaves as a ratchet does: each decrypt writes the session,
 * and a ciphertext seen before is refused.
 */
const cipher = engineCipherOf(Buffer.alloc(32, 0x3c));
const logger = pino({ level: 'silent' });
const INST = 'pasarela-j';
const JID = '5491100000001@s.whatsapp.net';

/** A stanza as the network sends it: one enc child. */
const stanza = (id: string, type: string, ciphertext: Uint8Array): BinaryNode => ({
  tag: 'message',
  attrs: { id, from: JID, t: '1700000000', type: 'text', notify: 'Ana' },
  content: [{ tag: 'enc', attrs: { v: '2', type }, content: ciphertext }],
});

/** The padded plaintext of a text, as a sender's phone encrypts it. */
const plainOf = (text: string) => baileys.writeRandomPadMax16(baileys.proto.Message.encode({ conversation: text }).finish());

for (const adapter of ADAPTERS) {
  describe(`${adapter.name}: the inbound journal around the signal repository`, () => {
    const ctx = storeEachTest(adapter);

    /** The line's keys as the socket has them, the wrapped repository, and the stand-in's calls. */
    async function setup(opts: { now?: () => number } = {}) {
      const auth = await storedAuthState(baileys, ctx.store, cipher, INST);
      const cached = baileys.makeCacheableSignalKeyStore(auth.state.keys, logger);
      const keys = baileys.addTransactionCapability(cached, logger, { maxCommitRetries: 1, delayBetweenTriesMs: 1 });
      const plains = new Map<string, Uint8Array>();
      const used = new Set<string>();
      const calls: string[] = [];
      const ratchet = async (ct: Uint8Array) => {
        const k = Buffer.from(ct).toString('hex');
        calls.push(k);
        if (used.has(k)) throw new Error('Key used already or never filled');
        used.add(k);
        // As libsignal does: the session moves in the same transaction.
        await keys.set({ session: { [JID]: Buffer.from(`after ${k}`) } });
        const plain = plains.get(k);
        // An altered ciphertext: the transaction rolls back what was set in it.
        if (!plain) throw new Error('Bad MAC');
        return plain;
      };
      const inner = {
        decryptMessage: (o: { ciphertext: Uint8Array }) => ratchet(o.ciphertext),
        decryptGroupMessage: (o: { msg: Uint8Array }) => ratchet(o.msg),
        encryptMessage: () => Promise.reject(new Error('not in this test')),
      } as unknown as SignalRepositoryWithLIDStore;
      const journal = new SocketJournal(opts.now ?? (() => 1_000), cached);
      const repo = journal.wrap(inner, keys);
      const message = (text: string) => {
        const ct = Buffer.from(`ct:${text}:${Math.random()}`);
        plains.set(ct.toString('hex'), plainOf(text));
        return ct;
      };
      const entries = async () => (await auth.readKind(JOURNAL_KIND)) as Map<string, JournalEntry>;
      return { auth, keys, journal, repo, message, calls, entries };
    }

    it('a miss decrypts once and writes the plaintext, with the stanza, in the ratchet commit; the upsert takes its id and removal empties the journal', async () => {
      const t = await setup();
      const ct = t.message('hola');
      t.journal.onFrame(stanza('MSG1', 'msg', ct));
      const plain = await t.repo.decryptMessage({ jid: JID, type: 'msg', ciphertext: ct });
      expect(baileys.proto.Message.decode(baileys.unpadRandomMax16(plain)).conversation).toBe('hola');
      expect(t.calls).toHaveLength(1);
      const stored = await t.entries();
      const id = journalId('msg', ct);
      expect([...stored.keys()]).toEqual([id]);
      expect(stored.get(id)!.from).toBe(JID);
      expect(stored.get(id)!.stanza).toMatchObject({ id: 'MSG1', from: JID });
      expect(Buffer.from(stored.get(id)!.plain).equals(Buffer.from(plain))).toBe(true);
      // The session the same decrypt moved is there too.
      expect((await ctx.store.readAuth(INST, 'session', [JID])).size).toBe(1);

      expect(t.journal.take('OTHER')).toEqual([]);
      const ids = t.journal.take('MSG1');
      expect(ids).toEqual([id]);
      expect(t.journal.take('MSG1')).toEqual([]);
      await t.journal.remove(ids);
      expect((await t.entries()).size).toBe(0);
    });

    it('a hit (the same stanza again, the ratchet moved on) answers the stored plaintext without calling the ratchet', async () => {
      const t = await setup();
      const ct = t.message('una vez');
      t.journal.onFrame(stanza('MSG2', 'pkmsg', ct));
      const first = await t.repo.decryptMessage({ jid: JID, type: 'pkmsg', ciphertext: ct });
      t.journal.take('MSG2');
      // Delivered again (its receipt never reached the network), through a new socket's journal over the same store.
      const again = await setup();
      again.journal.onFrame(stanza('MSG2', 'pkmsg', ct));
      const second = await again.repo.decryptMessage({ jid: JID, type: 'pkmsg', ciphertext: ct });
      expect(again.calls).toHaveLength(0);
      expect(Buffer.from(second).equals(Buffer.from(first))).toBe(true);
      expect(again.journal.take('MSG2')).toEqual([journalId('pkmsg', ct)]);
    });

    it('an entry answers only its own sender: the same ciphertext from another address goes to the ratchet, which refuses it', async () => {
      const t = await setup();
      const ct = t.message('mío');
      await t.repo.decryptMessage({ jid: JID, type: 'msg', ciphertext: ct });
      await expect(t.repo.decryptMessage({ jid: '5491100000002@s.whatsapp.net', type: 'msg', ciphertext: ct })).rejects.toThrow(/Key used already/);
      expect(t.calls).toHaveLength(2);
    });

    it('a decrypt the ratchet refuses, after writing its session in the transaction, leaves nothing: no entry, no session', async () => {
      const t = await setup();
      await expect(t.repo.decryptMessage({ jid: JID, type: 'msg', ciphertext: Buffer.from('altered') })).rejects.toThrow(/Bad MAC/);
      expect((await t.entries()).size).toBe(0);
      expect((await ctx.store.readAuth(INST, 'session', [JID])).size).toBe(0);
    });

    it('a group message is journaled under its group and author', async () => {
      const t = await setup();
      const ct = t.message('al grupo');
      const group = '120363000000000001@g.us';
      await t.repo.decryptGroupMessage({ group, authorJid: JID, msg: ct });
      const e = (await t.entries()).get(journalId('skmsg', ct))!;
      expect(e.from).toBe(`${group}|${JID}`);
      expect(t.calls).toHaveLength(1);
      await t.repo.decryptGroupMessage({ group, authorJid: JID, msg: ct });
      expect(t.calls).toHaveLength(1);
    });
  });
}

describe('the backlog: replayed entries wait until every stanza the network kept has been upserted', () => {
  const offline = (id: string): BinaryNode => ({ ...stanza(id, 'msg', Buffer.from(id)), attrs: { id, from: JID, offline: '1' } });

  it('not done before the offline marker, nor while a kept stanza is not upserted; a live stanza does not hold it', () => {
    const j = new SocketJournal(() => 0, { set: () => Promise.resolve() });
    expect(j.backlogDone()).toBe(false);
    j.onFrame(offline('K1'));
    j.onFrame(offline('K2'));
    j.onFrame(stanza('LIVE', 'msg', Buffer.from('live')));
    j.backlogAllSent();
    expect(j.backlogDone()).toBe(false);
    j.take('K1');
    expect(j.backlogDone()).toBe(false);
    j.take('K2');
    expect(j.backlogDone()).toBe(true);
  });

  it('no stanza kept: done at the marker', () => {
    const j = new SocketJournal(() => 0, { set: () => Promise.resolve() });
    j.onFrame(Buffer.from('not a node'));
    j.backlogAllSent();
    expect(j.backlogDone()).toBe(true);
  });
});

describe('replayOf: leftover entries as the messages Baileys would have upserted', () => {
  const me = { id: '5491199999999:3@s.whatsapp.net', lid: '777:3@lid' };
  const entry = (text: string, at: number, attrs: Record<string, string> | null): JournalEntry => ({
    at,
    from: JID,
    plain: plainOf(text),
    stanza: attrs,
  });

  it('rebuilds key, sender, time and text from the stanza and the plaintext; expired and stanza-less entries are dropped', () => {
    const now = 50 * 24 * 3600 * 1000;
    const entries = new Map<string, JournalEntry>([
      ['a', entry('recuperado', now - 1000, { id: 'MSGA', from: JID, t: '1700000000', type: 'text', notify: 'Ana' })],
      ['old', entry('viejo', now - JOURNAL_KEEP_MS - 1, { id: 'MSGB', from: JID, t: '1', type: 'text' })],
      ['bare', entry('sin estrofa', now, null)],
      ['bad', { at: now, from: JID, plain: Buffer.from([1, 2, 3, 200]), stanza: { id: 'MSGC', from: JID, t: '1', type: 'text' } }],
    ]);
    const { messages, dropped } = replayOf(baileys, entries, me, now);
    expect(dropped.sort()).toEqual(['bad', 'bare', 'old']);
    expect(messages).toHaveLength(1);
    const m = messages[0]!;
    expect(m.ids).toEqual(['a']);
    expect(m.message.key).toMatchObject({ id: 'MSGA', remoteJid: JID, fromMe: false });
    expect(m.message.message?.conversation).toBe('recuperado');
    expect(Number(m.message.messageTimestamp)).toBe(1700000000);
    expect(m.message.pushName).toBe('Ana');
  });

  it('the entries of one stanza (several enc children) make one message', () => {
    const attrs = { id: 'MSGD', from: JID, t: '1700000001', type: 'text' };
    const entries = new Map<string, JournalEntry>([
      ['x', entry('parte', 10, attrs)],
      ['y', entry('parte', 10, attrs)],
    ]);
    const { messages, dropped } = replayOf(baileys, entries, me, 20);
    expect(dropped).toEqual([]);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.ids).toEqual(['x', 'y']);
  });
});
