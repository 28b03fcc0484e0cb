import type { IncomingMessage } from 'node:http';

/** How long a refused upload is read and discarded after its answer (Apache's lingering close waits about 2 s). */
export const LINGER_MS = 2000;

/**
 * Closes gently a connection answered before its body arrived (a 401, 413
 * or 429 mid-upload). Node ends such a connection with `destroySoon()` once
 * the answer is written; closing a socket while the client's bytes are still
 * unread makes the kernel send a reset, and a reset can discard the answer
 * in the client's buffer before the client reads it. So: half-close (the
 * answer and a FIN go out), read and discard what still comes, and destroy
 * when the client closes its side or after `LINGER_MS`, whichever is first.
 * The time is fixed, so a client that keeps sending costs nothing more.
 */
export function lingerOnClose(req: IncomingMessage, ms = LINGER_MS): void {
  const socket = req.socket;
  if (!socket || socket.destroyed) return;
  socket.destroySoon = function lingeringDestroySoon() {
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), ms);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
    if (this.readableEnded) this.destroy();
    else this.once('end', () => this.destroy());
    // Flowing with no reader: the body's bytes are parsed and dropped, never kept.
    req.resume();
  };
}
