import { type HolderState, holderAlive, type LeaseState, leaseTakable } from '../../core/nodes/leases.js';
import type { Linea } from '../../core/ports/accounts.js';
import type { LeaseAnswer, LeaseGift, LeasesStore, LinePage, NodeInfo, NodeRow } from '../../core/ports/leases.js';

/**
 * Leases of a store that one process serves alone (SQLite: the data
 * directory's lock sees to it). They live in memory: no other node can hold
 * one, and after a restart no stream has a holder to wait for. What is lost
 * is a line's pending human gap, which a restart cuts short. A node alone
 * on the store does not beat (D-191): it reads as beating now until it leaves.
 */
export function leases(lineas: (afterId: number, limit: number) => Linea[]): LeasesStore {
  const leases = new Map<string, LeaseState>();
  const holders = new Map<string, HolderState & { label: string; started_at: number; margin_ms: number; engine_url: string | null; alone: boolean }>();
  /** A holder as read at `now`: an alone one beating then. */
  const seen = <H extends HolderState & { alone: boolean }>(h: H, now: number): H => (h.alone ? { ...h, heartbeat_at: now } : h);
  /** The stream held by nobody, resting `restMs`; with no rest ahead it holds nothing worth keeping: the map stays as small as the work in hand. */
  const rest = (s: string, restMs: number, now: number): void => {
    if (restMs > 0) leases.set(s, { nodo: null, next_at: now + restMs });
    else leases.delete(s);
  };
  const give = (nodeId: string, s: string, restMs: number, now: number): void => {
    if (leases.get(s)?.nodo === nodeId) rest(s, restMs, now);
  };
  /** Why `nodeId` may not take the stream now (its answer), or null when it may. */
  const refused = (s: string, nodeId: string, now: number): LeaseAnswer | null => {
    const l = leases.get(s);
    const h = l?.nodo ? holders.get(l.nodo) : undefined;
    return l && !leaseTakable(l, nodeId, h && seen(h, now), now) ? { stream: s, taken: false, restMs: Math.max(0, l.next_at - now) } : null;
  };
  /** Takes `s` if it may: held by `nodeId` (`restMs` null) or left resting. */
  const take = (nodeId: string, s: string, restMs: number | null, now: number): LeaseAnswer => {
    const no = refused(s, nodeId, now);
    if (no) return no;
    if (restMs === null) leases.set(s, { nodo: nodeId, next_at: leases.get(s)?.next_at ?? 0 });
    else rest(s, restMs, now);
    return { stream: s, taken: true, restMs: 0 };
  };
  return {
    async nodeBeat(node: NodeInfo, now: number): Promise<null> {
      const h = holders.get(node.id);
      if (h) {
        h.heartbeat_at = now;
        h.engine_url = node.engineUrl;
      } else
        holders.set(node.id, {
          label: node.label,
          heartbeat_at: now,
          stale_ms: node.staleMs,
          started_at: now,
          margin_ms: node.marginMs,
          engine_url: node.engineUrl,
          alone: node.alone === true,
        });
      // The store is this process's alone: what waits in it, its looks read without a round trip.
      return null;
    },

    async nodeLeave(nodeId: string): Promise<void> {
      holders.delete(nodeId);
      for (const l of leases.values()) if (l.nodo === nodeId) l.nodo = null;
    },

    async nodes(now: number): Promise<NodeRow[]> {
      return [...holders].map(([id, held]) => {
        const h = seen(held, now);
        return {
          id,
          label: h.label,
          heartbeat_at: h.heartbeat_at,
          started_at: h.started_at,
          alive: holderAlive(h, now),
          silent_ms: Math.max(0, now - h.heartbeat_at),
          margin_ms: h.margin_ms,
          engine_url: h.engine_url,
        };
      });
    },

    async leaseTake(nodeId: string, streams: string[], now: number, gives: LeaseGift[] = []): Promise<LeaseAnswer[]> {
      for (const g of gives) give(nodeId, g.stream, g.restMs, now);
      return streams.map((s) => take(nodeId, s, null, now));
    },

    async leaseTakeLines(nodeId: string, prefix: string, afterId: number, limit: number, restMs: number | null, now: number): Promise<LinePage> {
      // One more than the page: whether lines follow it, without a read of an empty page.
      const page = lineas(afterId, limit + 1);
      const more = page.length > limit;
      if (more) page.pop();
      return { taken: page.filter((l) => take(nodeId, `${prefix}${l.id}`, restMs, now).taken), last: page.at(-1)?.id ?? null, more };
    },

    async leaseGive(nodeId: string, s: string, restMs: number, now: number): Promise<void> {
      give(nodeId, s, restMs, now);
    },
  };
}
