import type { Server } from 'node:http';

/** Where node keeps a server's timer of its header and request timeouts (node 20: `http.server.connectionsCheckingInterval`). */
const CHECK_TIMER = 'http.server.connectionsCheckingInterval';

/** Node's timer as found: the check it runs (node's own `checkConnections`, bound to the server) and how to stop it. */
function nodeTimer(timer: unknown): { check: () => void; close: () => void } | null {
  if (typeof timer !== 'object' || timer === null) return null;
  const fn: unknown = Reflect.get(timer, '_onTimeout');
  const close: unknown = Reflect.get(timer, 'close');
  if (typeof fn !== 'function' || typeof close !== 'function') return null;
  return { check: () => void Reflect.apply(fn, undefined, []), close: () => void Reflect.apply(close, timer, []) };
}

/**
 * Node checks a server's header and request timeouts on an interval
 * (`connectionsCheckingInterval`) that runs whether or not a connection is
 * open: every second, as the app asks for its timeouts' precision, it was an
 * idle node's most frequent wake-up (D-190). Here the same check runs every
 * `everyMs` only while a connection is open. Node's timer is found by its
 * symbol's name; on a node that keeps it otherwise, its own interval stays
 * as it was (the timeouts hold either way; only the idle wake-ups differ).
 * Call on 'listening', after node has armed its timer. True when taken over.
 */
export function checkTimeoutsWhileConnected(server: Server, everyMs: number): boolean {
  const sym = Object.getOwnPropertySymbols(server).find((s) => s.description === CHECK_TIMER);
  const found = sym ? nodeTimer(Reflect.get(server, sym)) : null;
  if (!sym || !found) return false;
  found.close();
  // Kept where node keeps its own, so node's close() clears ours as it would its own.
  let mine: NodeJS.Timeout | undefined;
  const keep = (t: NodeJS.Timeout | undefined) => {
    clearInterval(mine);
    mine = t;
    Reflect.set(server, sym, t);
  };
  keep(undefined);
  let open = 0;
  server.on('connection', (socket) => {
    open += 1;
    if (open === 1) keep(setInterval(found.check, everyMs).unref());
    socket.once('close', () => {
      open -= 1;
      if (open === 0) keep(undefined);
    });
  });
  server.once('close', () => keep(undefined));
  return true;
}
