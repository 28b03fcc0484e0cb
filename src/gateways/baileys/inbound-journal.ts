import { createHash } from 'node:crypto';
import type { BinaryNode, SignalKeyStore, SignalKeyStoreWithTransaction, SignalRepositoryWithLIDStore, WAMessage } from 'baileys';
import { INBOUND_SEEN_TTL_MS } from '../../core/billing/ledger.js';
import type { BaileysLib } from './library.js';

/**
 * The inbound journal (docs/decisions.md D-128): each incoming message's
 * plaintext, written in the transaction that moves its Signal ratchet, so it
 * is durable before Baileys sends the delivery receipt that makes the network
 * drop the stanza. An entry is removed once the message's inbound event is
 * durable (line.ts); one left by a crash is replayed at the line's next
 * connect. A stanza delivered again (its receipt never reached the network)
 * carries the same ciphertext, which the moved ratchet would refuse: the
 * entry answers it instead.
 */

/** The key kind of the entries in the line's engine state, sealed like every other (auth-state.ts). */
export const JOURNAL_KIND = 'inbound-plain';

/**
 * An entry older than this is dropped at a connect, not replayed: the store
 * remembers an inbound message's key this long after storing it, later than
 * the entry's time, so a replay within it can never store a message twice.
 */
export const JOURNAL_KEEP_MS = INBOUND_SEEN_TTL_MS;

/** Bounds the in-memory maps of one socket: stanzas never decrypted (refused, ignored) must not grow them. */
const REMEMBERED = 2000;

/** One entry: when, whose, the padded plaintext as libsignal gave it, and the stanza's attributes to rebuild the message. */
export interface JournalEntry {
  at: number;
  /** The Signal address the plaintext came from (a 1:1 device, or group|author): a hit must come from the same one. */
  from: string;
  plain: Uint8Array;
  stanza: Record<string, string> | null;
}

/** The entry's id: a hash of the e2e type and the ciphertext, which a stanza delivered again repeats byte for byte. */
export function journalId(type: string, ciphertext: Uint8Array): string {
  return createHash('sha256').update(type).update('\0').update(ciphertext).digest('hex');
}

type Keys = Pick<SignalKeyStoreWithTransaction, 'get' | 'set' | 'transaction'>;
/**
 * The journal's kind is ours, not in Baileys' key map; its store takes any kind (auth-state.ts), and so does the
 * transaction wrapper Baileys puts over it. This is that store seen with the kind as a string: Baileys' store is
 * assignable to it as declared (methods compare their parameters both ways), so no cast stands between them.
 */
export interface AnyKindKeys {
  get(kind: string, ids: string[]): Awaitable<Record<string, unknown>>;
  set(data: Record<string, Record<string, unknown>>): Awaitable<void>;
}
type Awaitable<T> = T | Promise<T>;

/** A journal entry as read back from the store; anything else (an older shape, a foreign value) is not one. */
function isEntry(v: unknown): v is JournalEntry {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Partial<Record<keyof JournalEntry, unknown>>;
  return typeof e.at === 'number' && typeof e.from === 'string' && e.plain instanceof Uint8Array;
}

/**
 * One socket's view of the journal. The upserted message carries its id but
 * not its ciphertext, and the decrypt call carries the ciphertext but not the
 * id; the stanza carries both, and Baileys emits every received frame
 * (`frame`) before it starts handling it. So the stanza's enc children are
 * noted by entry id, each decrypt moves its entry id under the message's id,
 * and the upsert takes the ids of its message: exactly the entries of the
 * stanzas decrypted for that message, whatever Baileys' event buffer holds.
 */
export class SocketJournal {
  private seen = new Map<string, { msgId: string; attrs: Record<string, string> }>();
  private decrypted = new Map<string, string[]>();
  /** Stanzas the network kept for the line (`offline`), noted and not yet upserted; and whether it said it has sent them all. */
  private backlog = new Set<string>();
  private backlogSent = false;

  constructor(
    private readonly now: () => number,
    private readonly removeKeys: Pick<AnyKindKeys, 'set'>,
  ) {}

  /** A frame the socket received: a message stanza's enc children are noted. */
  onFrame(frame: BinaryNode | Uint8Array): void {
    if (frame instanceof Uint8Array || frame.tag !== 'message' || !frame.attrs.id || !Array.isArray(frame.content)) return;
    if (frame.attrs.offline) remember(this.backlog, frame.attrs.id, frame.attrs.id);
    for (const child of frame.content) {
      if (child.tag !== 'enc' || !(child.content instanceof Uint8Array) || !child.attrs.type) continue;
      remember(this.seen, journalId(child.attrs.type, child.content), { msgId: frame.attrs.id, attrs: { ...frame.attrs } });
    }
  }

  /** The entry ids decrypted for a message since its last upsert: taken at the upsert, removed once its event is durable. */
  take(msgId: string | null | undefined): string[] {
    if (!msgId) return [];
    this.backlog.delete(msgId);
    const ids = this.decrypted.get(msgId) ?? [];
    this.decrypted.delete(msgId);
    return ids;
  }

  /** The network has sent what it kept for the line (`receivedPendingNotifications`). */
  backlogAllSent(): void {
    this.backlogSent = true;
  }

  /**
   * Every stanza the network kept for the line has been upserted, so every
   * one delivered again has been decrypted: the entries replayed at this
   * connect are no longer needed to answer one. A kept stanza Baileys never
   * upserts (one it refuses) holds them until the next connect replays them
   * again, which the store's dedupe key makes harmless.
   */
  backlogDone(): boolean {
    return this.backlogSent && this.backlog.size === 0;
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.removeKeys.set({ [JOURNAL_KIND]: Object.fromEntries(ids.map((id) => [id, null])) });
  }

  /** Baileys' repository with its two decrypts journaled; everything else is the repository's own. */
  wrap(repo: SignalRepositoryWithLIDStore, given: SignalKeyStore | Keys): SignalRepositoryWithLIDStore {
    // Baileys hands its repository the store it made transaction-capable (Socket/socket.js): without that, no atomicity to rely on.
    if (!('transaction' in given)) throw new Error('the inbound journal needs the transaction-capable key store Baileys makes');
    const keys: Keys & AnyKindKeys = given;
    const journaled = async (type: string, ciphertext: Uint8Array, from: string, txKey: string, decrypt: () => Promise<Uint8Array>) =>
      // The same transaction key as the repository's own: its transaction nests in this one, so the ratchet and the entry commit together.
      keys.transaction(async () => {
        const id = journalId(type, ciphertext);
        const found = (await keys.get(JOURNAL_KIND, [id]))[id];
        const hit = isEntry(found) ? found : undefined;
        const stanza = this.seen.get(id);
        this.seen.delete(id);
        if (stanza) remember(this.decrypted, stanza.msgId, [...(this.decrypted.get(stanza.msgId) ?? []), id]);
        if (hit && hit.from === from) return hit.plain;
        const plain = await decrypt();
        const entry: JournalEntry = { at: this.now(), from, plain, stanza: stanza?.attrs ?? null };
        await keys.set({ [JOURNAL_KIND]: { [id]: entry } });
        return plain;
      }, txKey);
    // The repository's methods close over its state and never read `this`: a copy with two replaced is the repository.
    return {
      ...repo,
      decryptMessage: (o: Parameters<SignalRepositoryWithLIDStore['decryptMessage']>[0]) =>
        journaled(o.type, o.ciphertext, o.jid, o.jid, () => repo.decryptMessage(o)),
      decryptGroupMessage: (o: Parameters<SignalRepositoryWithLIDStore['decryptGroupMessage']>[0]) =>
        journaled('skmsg', o.msg, `${o.group}|${o.authorJid}`, o.group, () => repo.decryptGroupMessage(o)),
    };
  }
}

function remember<V>(m: Map<string, V> | Set<string>, k: string, v: V): void {
  m.delete(k);
  if (m instanceof Set) m.add(k);
  else m.set(k, v);
  if (m.size > REMEMBERED) m.delete(m.keys().next().value!);
}

/**
 * The messages a connect replays: the entries left by a crash (or a socket
 * that ended between a decrypt and its upsert), rebuilt as Baileys builds a
 * received message (decodeMessageNode on the stanza's attributes, the
 * plaintext unpadded and decoded, cleanMessage), the entries of one stanza
 * merged. Entries past JOURNAL_KEEP_MS, or without a stanza or a readable
 * plaintext, or not entries at all, are only dropped.
 */
export function replayOf(
  lib: Pick<BaileysLib, 'decodeMessageNode' | 'unpadRandomMax16' | 'proto' | 'cleanMessage'>,
  entries: ReadonlyMap<string, unknown>,
  me: { id: string; lid?: string | undefined },
  now: number,
): { messages: Array<{ message: WAMessage; ids: string[] }>; dropped: string[] } {
  const byMsg = new Map<string, { message: WAMessage; ids: string[] }>();
  const dropped: string[] = [];
  for (const [id, e] of entries) {
    if (!isEntry(e) || now - e.at > JOURNAL_KEEP_MS || !e.stanza?.id) {
      dropped.push(id);
      continue;
    }
    try {
      const decoded = lib.proto.Message.decode(lib.unpadRandomMax16(e.plain));
      const msg = decoded.deviceSentMessage?.message ?? decoded;
      const known = byMsg.get(e.stanza.id);
      if (known) {
        Object.assign(known.message.message!, msg);
        known.ids.push(id);
        continue;
      }
      const { fullMessage } = lib.decodeMessageNode({ tag: 'message', attrs: e.stanza }, me.id, me.lid ?? '');
      fullMessage.message = msg;
      byMsg.set(e.stanza.id, { message: fullMessage, ids: [id] });
    } catch {
      dropped.push(id);
    }
  }
  for (const { message } of byMsg.values()) lib.cleanMessage(message, me.id, me.lid ?? '');
  return { messages: [...byMsg.values()], dropped };
}
