import type { EngineHold } from '../ports/engine-holds.js';

/**
 * Engine sessions over several nodes (`--gateway baileys`, D-136). Each
 * linked line's socket lives on exactly one node: the holder of its row
 * (core/ports/engine-holds.ts). A node holds a line only while it beats;
 * it stops its sockets before its silence could let another node take them
 * (FENCE_AT of its margin), and a watchdog child ends the process at
 * WATCHDOG_AT should it be frozen (server/watchdog.ts); others take the
 * line once the holder has been silent for its whole margin, so the two
 * sockets never overlap. Each take raises the row's token, and every write
 * of the line's state carries the holder's token, so a holder that lost the
 * line cannot write over its successor.
 */

/** Of a node's takeover margin: past this since its last good beat was sent, it closes its sockets. */
export const FENCE_AT = 0.6;
/** Past this, the watchdog ends the node's process (its sockets close with it): a frozen node cannot close them itself. */
export const WATCHDOG_AT = 0.8;

/** The rule the in-memory store applies (PostgreSQL's is the same, in SQL): free, the taker's own, or its holder gone. */
export function holdTakable(h: Pick<EngineHold, 'nodo' | 'presente'>, taker: string): boolean {
  return h.nodo === null || h.nodo === taker || !h.presente;
}

export interface HoldPlanInput {
  me: string;
  holds: EngineHold[];
  /** The engine nodes present now, this one included. */
  nodes: string[];
  /** Lines this node gave away a moment ago: left to the others for now. */
  cooling: ReadonlySet<string>;
  /** Lines that must not move now (a link in progress here). */
  pinned: ReadonlySet<string>;
  /** A line moves to balance only after its holder has had it this long. */
  settleMs: number;
}

/** Lines a node over its share gives away in one pass: a joining node fills in a few beats, never in one storm of reconnects. */
export const GIVES_PER_PASS = 4;

/** A node's share of the lines: no node holds more than this, which is at most the even share plus one. */
export function shareOf(lines: number, nodes: number): number {
  return Math.ceil(lines / Math.max(1, nodes));
}

/**
 * One pass of a node's keeper: which free (or orphaned) lines it takes, up
 * to its share, and which it gives away, a few per pass, when it holds more
 * than its share while another node holds less. Taking is first come:
 * the store's take is atomic, so two nodes asking for one line get one
 * holder. Lines are taken in a random order so that nodes asking at once
 * mostly ask for different lines.
 */
export function planHolds(i: HoldPlanInput, random: () => number = Math.random): { take: string[]; give: string[] } {
  const share = shareOf(i.holds.length, i.nodes.length);
  const held = new Map<string, number>();
  for (const h of i.holds) if (h.nodo !== null && h.presente) held.set(h.nodo, (held.get(h.nodo) ?? 0) + 1);
  const mine = i.holds.filter((h) => h.nodo === i.me);
  const room = share - mine.length;
  if (room > 0) {
    const free = i.holds.filter((h) => h.nodo !== i.me && holdTakable(h, i.me) && !i.cooling.has(h.instancia));
    return {
      take: shuffled(free, random)
        .slice(0, room)
        .map((h) => h.instancia),
      give: [],
    };
  }
  // Over its share: a few lines a pass go to whoever holds less (the others take it from the free lines).
  if (room < 0 && i.nodes.some((n) => n !== i.me && (held.get(n) ?? 0) < share)) {
    const movable = mine.filter((h) => h.held_ms >= i.settleMs && !i.pinned.has(h.instancia));
    return { take: [], give: movable.slice(0, Math.min(-room, GIVES_PER_PASS)).map((h) => h.instancia) };
  }
  return { take: [], give: [] };
}

function shuffled<T>(xs: T[], random: () => number): T[] {
  const a = [...xs];
  for (let k = a.length - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1));
    [a[k], a[j]] = [a[j]!, a[k]!];
  }
  return a;
}
