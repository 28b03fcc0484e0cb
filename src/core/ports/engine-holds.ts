/** A line's engine session and the node holding it (core/engine/engine-holds.ts has the rule). */
export interface EngineHold {
  instancia: string;
  /** The holder's node id; null: free (never taken, given back, or its holder stopped). */
  nodo: string | null;
  /** The fencing token: raised each time the session changes hands; a holder's writes carry it. */
  token: number;
  /** The holder beats within its own takeover margin (false when free). */
  presente: boolean;
  /** How long the holder has held it, on the store's clock. */
  held_ms: number;
  /** Where the holder's engine is reached (null: free, or its node runs none yet). */
  url: string | null;
}

/** A holder's proof on each write of the line's state: refused once another node took the session. */
export interface HoldFence {
  nodo: string;
  token: number;
}

/** A line's fence as its writer sees it: the hold now, and what to do once a write finds it lost. */
export interface FenceSource {
  current(): HoldFence | undefined;
  lost(err: HoldLost): void;
}

/** The write of a line's state came from a node that no longer holds its session. */
export class HoldLost extends Error {
  override readonly name = 'HoldLost';
  constructor(readonly instancia: string) {
    super(`the session of ${instancia} is held by another node now`);
  }
}

/**
 * Which node holds each linked line's engine session (`--gateway baileys`,
 * D-136): one row per line with stored state. A store served by one process
 * keeps them in memory (its node holds every line); PostgreSQL in
 * `motor_sesiones`, judged on its own clock.
 */
export interface EngineHoldsStore {
  /** Makes a row for every line with stored state that has none (lines linked before this table, or imported). */
  holdSeed(): Promise<void>;
  /** Every line's row, in name order. */
  holdsAll(now: number): Promise<EngineHold[]>;
  /** One line's row, or null when it has none. */
  holdOf(instancia: string, now: number): Promise<EngineHold | null>;
  /**
   * Takes, of `instancias`, each free, already this node's, or held by a node
   * no longer present (silent past its own margin); a line without a row gets
   * one unless `create` is false. Never waits on another taker. The token rises when the holder changes.
   */
  holdTake(
    nodeId: string,
    instancias: string[],
    now: number,
    opts?: { create?: boolean },
  ): Promise<Array<{ instancia: string; token: number; from: string | null }>>;
  /** Frees the node's holds of `instancias` (its sockets already closed). */
  holdGive(nodeId: string, instancias: string[]): Promise<void>;
  /** Removes a line's row (its state removed: logged out or deleted). */
  holdForget(instancia: string): Promise<void>;
}
