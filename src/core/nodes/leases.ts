/**
 * The rule every leases adapter applies (the PostgreSQL one in SQL): a stream
 * may be taken when it is due (its rest is over) and free: held by nobody, by
 * the taker itself, or by a node whose heartbeats stopped longer ago than that
 * node's own stale time (its longest send plus a margin). A live but slow node
 * keeps beating, so its streams are never taken from it.
 */
export interface LeaseState {
  nodo: string | null;
  next_at: number;
}

export interface HolderState {
  heartbeat_at: number;
  stale_ms: number;
}

export function holderAlive(h: HolderState | undefined, now: number): boolean {
  return h !== undefined && h.heartbeat_at + h.stale_ms >= now;
}

export function leaseTakable(l: LeaseState, taker: string, holder: HolderState | undefined, now: number): boolean {
  return l.next_at <= now && (l.nodo === null || l.nodo === taker || !holderAlive(holder, now));
}

/** A line's health check's stream: this and the line's id (the store names a page's streams itself: leaseTakeLines). */
export const SALUD = 'salud:';

/** Stream names: one per line's queue, per line's health check, per client's webhooks. */
export const stream = {
  cola: (celularId: number) => `cola:${celularId}`,
  salud: (celularId: number) => `${SALUD}${celularId}`,
  webhooks: (clienteId: number) => `webhooks:${clienteId}`,
};
