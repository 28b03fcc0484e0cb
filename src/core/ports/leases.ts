import type { Linea } from './accounts.js';

/** A serving process, as the others see it (see core/nodes/node-presence.ts). */
export interface NodeInfo {
  id: string;
  /** Host and pid, for people. */
  label: string;
  /** How long after its last heartbeat this node's leases may be taken: its longest send plus a margin. */
  staleMs: number;
  /** Its takeover margin: silent this long, it counts as gone (and its engine sessions may be taken). */
  marginMs: number;
  /** Where the other nodes reach its engine (`--gateway baileys`); null: it runs none, or does not listen yet. */
  engineUrl: string | null;
  /** Alone on its store (SQLite, D-191): it beats once, and is there until it leaves. */
  alone?: boolean;
}

export interface NodeRow {
  id: string;
  label: string;
  heartbeat_at: number;
  started_at: number;
  /** Within its stale time (its leases still its own). */
  alive: boolean;
  /** How long ago its last beat was, on the store's clock (PostgreSQL's, not a node's). */
  silent_ms: number;
  /** Its own takeover margin. */
  margin_ms: number;
  /** Where its engine is reached; null: it runs none. */
  engine_url: string | null;
}

/** What a take found for one stream: taken by the caller, or how long before it is due (0: held by a live node). */
export interface LeaseAnswer {
  stream: string;
  taken: boolean;
  restMs: number;
}

/** A page of the health pass (LeasesStore.leaseTakeLines). */
export interface LinePage {
  /** The page's lines whose lease this take got, in id order. */
  taken: Linea[];
  /** The page's last line (null: the page was empty). */
  last: number | null;
  /** Lines follow the page (it was full and one more exists). */
  more: boolean;
}

/** A held stream given back, not to be taken again for `restMs`. */
export interface LeaseGift {
  stream: string;
  restMs: number;
}

/**
 * What a beat found waiting in the store, for any node: a node's safety looks (the queue's, the webhooks') skip a
 * read the beat has already found empty (D-197). Each is exactly what makes that read's answer non-empty.
 */
export interface StoreNews {
  /** A pending message queued (`modo = 'cola'`), or any pending one with a validity: what the queue's look reads. */
  queue: boolean;
  /** A webhook delivery pending: what the webhooks' look reads. */
  outbox: boolean;
  /** A listener live at the beat's `now`: what the webhooks' look reads beside it. */
  listeners: boolean;
}

/**
 * Serial streams shared by the nodes of one store: a line's queue with its
 * human gaps, a line's health check, a client's webhook stream. Each is a
 * lease row: one holder at a time, and a durable `next_at` before which
 * nobody takes it. A holder whose heartbeats stopped for longer than its
 * `staleMs` is dead and its leases are free. `now` is the node's clock; a
 * store shared by several nodes uses its own clock instead, so no two
 * nodes' clocks are ever compared.
 */
export interface LeasesStore {
  /**
   * Records the node alive; its first beat registers it. A store shared by several nodes also answers what waits in it
   * (StoreNews); one served alone answers null (its looks cost no round trip).
   */
  nodeBeat(node: NodeInfo, now: number): Promise<StoreNews | null>;
  /** The node stops: its row goes and its leases are free (their next_at kept). */
  nodeLeave(nodeId: string): Promise<void>;
  nodes(now: number): Promise<NodeRow[]>;
  /**
   * Takes, of `streams`, each that is due and free (unheld, held by this node, or by a dead one); never waits on another taker.
   * `gives`: streams this node gives back in the same call, as leaseGive would (none of them among `streams`).
   */
  leaseTake(nodeId: string, streams: string[], now: number, gives?: LeaseGift[]): Promise<LeaseAnswer[]>;
  /**
   * A page of the lines' health pass, in one call: the lines with a gateway instance after `afterId`, in id order, at most
   * `limit`, each line's lease (`prefix` + its id) taken as leaseTake takes it (`restMs` null: held by this node until given)
   * or taken and at once left unheld, resting `restMs`: a turn nobody need hold, done once a rest by whichever node takes
   * it. A node that dies in that turn leaves its lines to the rest's end; a turn longer than the rest may meet another
   * node's (the turn must bear that). Answers the lines taken, the page's last id, and whether lines follow it.
   */
  leaseTakeLines(nodeId: string, prefix: string, afterId: number, limit: number, restMs: number | null, now: number): Promise<LinePage>;
  /** Gives a held stream back, not to be taken again for `restMs`; a stream taken over meanwhile is left alone. */
  leaseGive(nodeId: string, stream: string, restMs: number, now: number): Promise<void>;
}
