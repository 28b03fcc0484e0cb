import type { NodePresence } from './node-presence.js';

/**
 * One engine node per store, for now (D-118). Each line's socket
 * lives in the process that runs the engine; a second `serve --gateway
 * baileys` on the same store would open a second socket on every line's
 * session, and two sockets on one session log each other out. Until a line's
 * session can move between nodes, the engine is a lease (core/leases.ts)
 * that its node holds while it beats: a second node finds it held and
 * refuses to start; when the first stops (its leases are freed at once) or
 * dies (freed once its heartbeat is stale), another may start.
 */
export const ENGINE_STREAM = 'motor:baileys';

/** Whether `--gateway` names the in-process engine. */
export function runsEngine(gateway: string): boolean {
  return gateway === 'baileys';
}

/** Another node holds the engine of this store. */
export class SecondEngineNode extends Error {
  override readonly name = 'SecondEngineNode';
}

/**
 * Takes the engine's lease for this node, or refuses with why: called by
 * `serve` once its node beats, before the engine opens a socket. On a store
 * served by one process (SQLite) the lease is always free.
 */
export async function assertSoleEngineNode(node: Pick<NodePresence, 'takeOne' | 'presentNodes' | 'info'>): Promise<void> {
  if ((await node.takeOne(ENGINE_STREAM)).taken) return;
  const others = (await node.presentNodes()).filter((n) => n.id !== node.info.id).map((n) => n.label);
  const holder =
    others.length > 0 ? `nodes present: ${others.join('; ')}` : 'no node beats now: a node that stopped without leaving frees it once its heartbeat is stale';
  throw new SecondEngineNode(
    `another node of this store runs the engine (--gateway baileys), so this one does not start: two sockets on one line's session log each other out, and a line's session cannot yet move between nodes. Stop that node first, or serve this one with another --gateway (${holder})`,
  );
}
