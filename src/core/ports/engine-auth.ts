import type { HoldFence } from './engine-holds.js';

/** One row of a line's engine state as the store holds it: sealed bytes (core/engine/engine-key.ts), never plaintext. */
export interface EngineAuthRow {
  /** What the value is: `creds`, or one of Baileys' key kinds (`pre-key`, `session`, `sender-key`, `app-state-sync-key`, `lid-mapping`...). */
  kind: string;
  id: string;
  /** The sealed value; null removes the row. */
  value: Buffer | null;
}

/**
 * The engine's authentication state of each line (`--gateway baileys`):
 * credentials and signal keys, sealed by core/engine/engine-key.ts before they reach
 * the store, so an adapter only ever sees opaque bytes. Keyed by (instancia,
 * kind, id); the primary key serves every read and a line's removal.
 */
export interface EngineAuthStore {
  /** The values of `ids` of one kind, in one statement; an id without a row is absent from the map. */
  readAuth(instancia: string, kind: string, ids: string[]): Promise<Map<string, Buffer>>;
  /**
   * Every value of one kind of a line, by id: for the few kinds read whole,
   * such as the inbound journal (gateways/baileys/inbound-journal.ts), read
   * at a line's start. One statement, a range of the primary key.
   */
  readAuthKind(instancia: string, kind: string): Promise<Map<string, Buffer>>;
  /**
   * Every row in one transaction: all written, or none. A (kind, id) given twice keeps its last value.
   * `fence`: the writer's hold of the line's session (core/engine/engine-holds.ts); on a shared store the write is
   * refused with HoldLost once another node took it. A store one process serves has no other writer to fence.
   */
  writeAuth(instancia: string, rows: EngineAuthRow[], fence?: HoldFence): Promise<void>;
  /** Removes every row of the line (its celular deleted, or the phone logged it out). */
  clearAuth(instancia: string): Promise<void>;
  /** The lines holding any state, in name order. */
  authInstancias(): Promise<string[]>;
}
