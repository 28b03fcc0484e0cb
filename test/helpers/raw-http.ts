import { connect, type Socket } from 'node:net';
import { until } from './poll.js';

/**
 * One HTTP/1.1 request over a raw socket, for tests that must control when
 * body bytes go out: headers first, then the body in pieces, reading the
 * answer whenever it comes (even while the body is still being sent).
 */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}

export class RawRequest {
  readonly socket: Socket;
  private buf = Buffer.alloc(0);
  /** Set once the server closed its side (or the socket failed). */
  closed = false;
  /** Body bytes handed to the socket. */
  sent = 0;
  /** The socket's error, if any (ECONNRESET when the server reset the connection). */
  error: Error | undefined;

  constructor(base: string, method: string, path: string, headers: Record<string, string | number>) {
    const u = new URL(base);
    // Half-open allowed: after the server's FIN the client may still send (what a lingering close must absorb).
    this.socket = connect({ port: Number(u.port), host: u.hostname, allowHalfOpen: true });
    this.socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
    });
    const done = () => {
      this.closed = true;
    };
    this.socket.on('end', done);
    this.socket.on('close', done);
    // The server may close while we still write: that is what some tests wait for.
    this.socket.on('error', (e) => {
      this.error = e;
      done();
    });
    const head = [`${method} ${path} HTTP/1.1`, `Host: ${u.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
    this.socket.write(head);
  }

  /** Writes body bytes; resolves when they are handed to the kernel (or the socket is gone). */
  write(data: string | Buffer): Promise<void> {
    if (this.closed || this.socket.destroyed) return Promise.resolve();
    const b = typeof data === 'string' ? Buffer.from(data) : data;
    return new Promise((resolve) => {
      this.socket.write(b, () => {
        this.sent += b.length;
        resolve();
      });
    });
  }

  /** The answer, once its headers and Content-Length body are in. */
  parsed(): RawResponse | undefined {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const lines = this.buf.toString('latin1', 0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const len = Number(headers['content-length'] ?? 0);
    if (this.buf.length < end + 4 + len) return undefined;
    const text = this.buf.toString('utf8', end + 4, end + 4 + len);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: Number(lines[0]!.split(' ')[1]), headers, text, body };
  }

  /** Waits for the answer (or fails when the connection ends without one, or after `ms`). */
  async response(ms = 20_000): Promise<RawResponse> {
    return until(
      () => {
        const r = this.parsed();
        if (!r && this.closed) throw new Error(`connection closed without an answer: ${this.buf.toString('latin1').slice(0, 200)}`);
        return r;
      },
      { what: 'an answer', timeoutMs: ms, stepMs: 5 },
    );
  }

  /** Resolves once the server has closed the connection. */
  async closedByServer(ms = 10_000): Promise<void> {
    await until(() => this.closed, { what: 'the server to close the connection', timeoutMs: ms });
  }

  /** Writes `total` bytes from `body` in chunks until the answer comes; returns it. */
  async sendUntilAnswered(body: Buffer, chunk = 64 * 1024): Promise<RawResponse> {
    for (let at = 0; at < body.length && !this.parsed() && !this.closed; at += chunk) await this.write(body.subarray(at, at + chunk));
    return this.response();
  }

  /** Ends our side (a FIN): the body is over as far as the client is concerned. */
  end(): void {
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }
}
