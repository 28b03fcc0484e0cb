import type { SignalRepositoryWithLIDStore } from 'baileys';

/**
 * One Signal operation at a time per contact address in the whole process,
 * each run in its own caller's async context (docs/decisions.md D-195).
 *
 * libsignal serializes every session operation on an address through one
 * process-wide queue, and a queued job runs in the async context of the job
 * that started the queue draining: the context of another line's encrypt to
 * the same contact, or of this line's decrypt of that contact's message.
 * Baileys' transactions and ratchet-ahead's capture are AsyncLocalStorage, so
 * such a job ran outside its own transaction: an encrypt could not see the
 * session its send had just made ("No sessions", a 502 with the outcome
 * unknown), and its ratchet write landed outside the transaction or inside
 * another one. Taking the address's turn here, before libsignal, means its
 * queue is always empty on entry, so each job runs where it was called.
 *
 * Every entry into libsignal's queue goes through the repository's three
 * methods wrapped here (Baileys' group cipher has no such queue). A turn is
 * taken before any transaction of the call and held to its end, so the order
 * is always turn, then transaction: no two holders wait on each other.
 */
const turns = new Map<string, Promise<void>>();

export async function inTurn<T>(address: string, work: () => Promise<T>): Promise<T> {
  const before = turns.get(address);
  let done!: () => void;
  const mine = new Promise<void>((r) => (done = r));
  const last = before ? before.then(() => mine) : mine;
  turns.set(address, last);
  try {
    await before;
    return await work();
  } finally {
    done();
    if (turns.get(address) === last) turns.delete(address);
  }
}

/** Addresses with a turn taken or waiting (tests: none once the work is done). */
export function turnsHeld(): number {
  return turns.size;
}

/** The repository with its libsignal entries taken in turn; everything else is the repository's own. */
export function takeTurns(repo: SignalRepositoryWithLIDStore): SignalRepositoryWithLIDStore {
  type R = SignalRepositoryWithLIDStore;
  const address = (jid: string) => repo.jidToSignalProtocolAddress(jid);
  return {
    ...repo,
    encryptMessage: (o: Parameters<R['encryptMessage']>[0]) => inTurn(address(o.jid), () => repo.encryptMessage(o)),
    decryptMessage: (o: Parameters<R['decryptMessage']>[0]) => inTurn(address(o.jid), () => repo.decryptMessage(o)),
    injectE2ESession: (o: Parameters<R['injectE2ESession']>[0]) => inTurn(address(o.jid), () => repo.injectE2ESession(o)),
  };
}
