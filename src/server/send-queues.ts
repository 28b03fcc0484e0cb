import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import type { SendQueues, StreamSocket } from '../core/events/event-stream-pump.js';

/** The kernel's tables of TCP sockets (Linux): one line per socket, `tx_queue` in the fifth column. */
const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'];
/** ESTABLISHED in the `st` column. */
const ESTABLISHED = '01';

/**
 * The kernel's unacknowledged bytes per established socket, by
 * `localPort:remotePort`, read from /proc/net/tcp and tcp6 (tx_queue: bytes
 * written to the socket that the other side has not acknowledged; a reader
 * that stops reading lets them pile up once its own buffer is full). A key
 * two sockets share is left out (not known). undefined where the tables do
 * not exist (not Linux): the event streams then count only a full socket.
 */
export function procSendQueues(tables: readonly string[] = TABLES): SendQueues {
  let unsupported = false;
  return async () => {
    if (unsupported) return undefined;
    const texts = await Promise.all(tables.map((t) => readFile(t, 'latin1').catch(() => undefined)));
    if (texts.every((t) => t === undefined)) {
      unsupported = true;
      return undefined;
    }
    const queues = new Map<string, number>();
    const shared = new Set<string>();
    for (const text of texts) {
      if (text === undefined) continue;
      for (const line of text.split('\n').slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f.length < 5 || f[3] !== ESTABLISHED) continue;
        const local = f[1]!.slice(f[1]!.lastIndexOf(':') + 1);
        const remote = f[2]!.slice(f[2]!.lastIndexOf(':') + 1);
        const tx = f[4]!.slice(0, f[4]!.indexOf(':'));
        const key = `${parseInt(local, 16)}:${parseInt(remote, 16)}`;
        if (queues.has(key)) shared.add(key);
        queues.set(key, parseInt(tx, 16));
      }
    }
    for (const key of shared) queues.delete(key);
    return queues;
  };
}

/** The stall check's view of a response's socket (none once it is gone). */
export function streamSocket(socket: Socket | null): { socket?: StreamSocket } {
  if (!socket || socket.localPort === undefined || socket.remotePort === undefined) return {};
  return { socket: { key: `${socket.localPort}:${socket.remotePort}`, accepted: () => (socket.bytesWritten ?? 0) - socket.writableLength } };
}
