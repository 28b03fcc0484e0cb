import { AsyncLocalStorage } from 'node:async_hooks';
import type { SignalKeyStore, SignalKeyStoreWithTransaction, SignalRepositoryWithLIDStore } from 'baileys';
import type { AnyKindKeys } from './inbound-journal.js';

type Writes = Record<string, Record<string, unknown>>;

/**
 * The stored ratchet is never behind a stanza that left (docs/decisions.md
 * D-194). Baileys commits a send's Signal writes after the stanza is out:
 * relayMessage encrypts and sends in one key-store transaction that commits
 * at its end, and its cacheable store keeps a session it failed to write. A
 * node killed in between (or a failed commit) leaves the stored session
 * behind what the contact has read; the line's next holder then encrypts with
 * keys the contact has used, and the contact cannot read those messages. So
 * each encrypt's writes are made durable before it returns. A crash after
 * that write and before the send only skips a key, which Signal tolerates.
 */
export class RatchetAhead {
  private readonly writes = new AsyncLocalStorage<Writes>();

  /** `durable`: the store under Baileys' transaction layer (a write there is a write to the database). */
  constructor(private readonly durable: AnyKindKeys) {}

  /** The key store to build the repository over: Baileys' own, with what an encrypt writes also kept aside. */
  keys(given: SignalKeyStore | SignalKeyStoreWithTransaction): SignalKeyStore | SignalKeyStoreWithTransaction {
    return {
      ...given,
      set: (data) => {
        const kept = this.writes.getStore();
        if (kept) for (const [kind, values] of Object.entries(data)) kept[kind] = { ...kept[kind], ...values };
        return given.set(data);
      },
    };
  }

  /** The repository with its encrypts durable before they return; everything else is the repository's own. */
  wrap(repo: SignalRepositoryWithLIDStore): SignalRepositoryWithLIDStore {
    return {
      ...repo,
      encryptMessage: (o: Parameters<SignalRepositoryWithLIDStore['encryptMessage']>[0]) => this.ahead(() => repo.encryptMessage(o)),
      encryptGroupMessage: (o: Parameters<SignalRepositoryWithLIDStore['encryptGroupMessage']>[0]) => this.ahead(() => repo.encryptGroupMessage(o)),
    };
  }

  private async ahead<T>(encrypt: () => Promise<T>): Promise<T> {
    const kept: Writes = {};
    const out = await this.writes.run(kept, encrypt);
    if (Object.keys(kept).length > 0) await this.durable.set(kept);
    return out;
  }
}
