import type { Writable } from 'node:stream';
import type { ClientPrincipal } from '../auth/auth.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import type { BusEventName } from './events.js';
import { inScope, sseFrame, streamScope, streamStart, type StreamQuery, type StreamScope } from './event-stream.js';

/**
 * The streams open on this node and the loop that feeds each from the
 * store's log (docs/decisions.md D-71). The log is the truth: a stream only
 * ever reads `eventsAfter(its client, its cursor)`; wake-ups say when to
 * read. This node's bus wakes a client's streams at once; a poll every
 * `pollMs` while idle finds what other nodes (and the SQLite background
 * thread's test events) wrote, and what PostgreSQL's xid watermark held
 * back, which a notice could not: a row may be committed but not yet
 * readable in order.
 *
 * Memory per stream is bounded: a batch is read only once the socket has
 * drained, and events are written one at a time, waiting for 'drain'
 * whenever a write says the buffer is full. A reader that leaves the
 * socket full for `stallMs` is cut; it resumes by id.
 *
 * The kernel may take megabytes a reader never reads before a write says
 * so, so a stall is also found from the server's own bookkeeping (D-158):
 * every `stallCheckMs`, what the socket took from the server (its bytes
 * written, less what it still buffers) less what the kernel still holds
 * unacknowledged (SendQueues: on Linux /proc/net/tcp) is what the reader's
 * side took. A stream that owes its reader bytes while that figure stays
 * the same for `stallMs` (on the clock's ticks) is cut.
 */
export interface StreamTiming {
  /** How often an idle stream reads the log without a wake-up. */
  pollMs: number;
  /** A `: ping` comment this often (the design promises one at least every 15 s). */
  pingMs: number;
  /** A reader that takes nothing for this long is cut. */
  stallMs: number;
  /** How often every stream's bookkeeping is compared with what the kernel still holds. */
  stallCheckMs: number;
  /** Events read from the store at a time. */
  batch: number;
  /** Streams per client on this node. */
  perClient: number;
}

export const STREAM_TIMING: StreamTiming = { pollMs: 1000, pingMs: 10_000, stallMs: 30_000, stallCheckMs: 5000, batch: 100, perClient: 10 };

/**
 * What the kernel holds of each socket's sent bytes that the reader's side
 * has not acknowledged, by `localPort:remotePort` (StreamSocket.key);
 * undefined where the platform does not say (then only a full socket counts).
 */
export type SendQueues = () => Promise<ReadonlyMap<string, number> | undefined>;

/** The socket under a stream, for the stall check's bookkeeping. */
export interface StreamSocket {
  /** `localPort:remotePort`, its key in SendQueues. */
  key: string;
  /** Bytes the socket has handed to the kernel so far (written, less what it still buffers). */
  accepted: () => number;
}

/** Kinds made on this node that wake its streams (webhook test events are found by the poll). */
const WAKE_KINDS = ['message.status', 'session.status', 'messages.received', 'celular.frenado', 'celular.reanudado'] as const satisfies readonly BusEventName[];

/** Where a stream writes: the body (a Writable whose write() says when to wait), the socket's buffered bytes, and how to drop the connection. */
export interface StreamIo {
  out: Writable;
  /** Bytes buffered below `out` (the response's socket), for stats. */
  below: () => number;
  /** Drops the connection (a reader cut off). */
  cut: () => void;
  /** The socket, when the stall check may read its bookkeeping (absent: only a full socket counts as a stall). */
  socket?: StreamSocket;
}

export interface StreamStats {
  clienteId: number;
  /** Events read from the store so far. */
  read: number;
  /** Events written to the stream so far. */
  sent: number;
  /** Waiting for the reader to take what was written. */
  blocked: boolean;
  /** Bytes written and not yet taken by the kernel. */
  buffered: number;
  /** Bytes the kernel held unacknowledged by the reader's side at the last stall check (0 where unknown). */
  unacked: number;
  /** Bytes the reader's side had taken at the last stall check (what the stall check watches). */
  taken: number;
}

class EventStream {
  read = 0;
  sent = 0;
  blocked = false;
  unacked = 0;
  /** The stall check's last reading of what the reader's side took, and since when (ticks) it has not moved. */
  private lastTaken = Number.NaN;
  private since = 0;
  private stopped = false;
  private pending = false;
  private waker: (() => void) | null = null;
  private readonly ping: NodeJS.Timeout;
  readonly done: Promise<void>;

  constructor(
    private readonly core: Pick<Core, 'store'>,
    readonly scope: StreamScope,
    private cursor: string | null,
    private readonly follow: boolean,
    private readonly io: StreamIo,
    private readonly timing: StreamTiming,
  ) {
    io.out.once('close', () => this.stop());
    this.ping = setInterval(() => {
      if (!this.blocked && !this.stopped) io.out.write(': ping\n\n');
    }, timing.pingMs);
    this.ping.unref();
    // The first bytes send the headers, so a client knows it is connected before any event.
    io.out.write(`retry: 2000\n\n`);
    this.done = this.run().finally(() => this.stop());
  }

  get buffered(): number {
    return this.io.out.writableLength + this.io.below();
  }

  get taken(): number {
    return Number.isNaN(this.lastTaken) ? 0 : this.lastTaken;
  }

  wake(): void {
    this.pending = true;
    this.waker?.();
  }

  /** Whether the stall check needs the kernel's figures: something was handed to it since the reader's side was last seen to take all. */
  mayOwe(): boolean {
    return !this.stopped && (this.buffered > 0 || (this.io.socket !== undefined && this.io.socket.accepted() !== this.lastTaken));
  }

  /**
   * One stall check: what the reader's side took (the socket's accepted
   * bytes less the kernel's unacknowledged ones). Unchanged for stallMs while
   * bytes wait for the reader (in the server or in the kernel): cut.
   */
  checkStall(queues: ReadonlyMap<string, number> | undefined, now: number): void {
    if (this.stopped) return;
    const kernel = this.io.socket ? queues?.get(this.io.socket.key) : undefined;
    this.unacked = kernel ?? 0;
    const taken = (this.io.socket?.accepted() ?? this.sent) - this.unacked;
    const owed = this.buffered + this.unacked > 0;
    if (!owed || taken !== this.lastTaken) {
      this.lastTaken = taken;
      this.since = now;
      return;
    }
    if (now - this.since >= this.timing.stallMs) {
      this.io.cut();
      this.stop();
    }
  }

  /** Ends the stream: gracefully when the reader keeps up, cut when it holds the socket full (an end would wait for it). */
  close(): void {
    if (this.stopped) return;
    if (this.blocked) this.io.cut();
    else this.io.out.end();
    this.stop();
  }

  private stop(): void {
    this.stopped = true;
    clearInterval(this.ping);
    this.waker?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.pending = false;
      const batch = await this.core.store.eventsAfter(this.scope.clienteId, this.cursor, this.timing.batch);
      if (this.stopped) return;
      this.read += batch.length;
      for (const ev of batch) {
        if (this.stopped) return;
        this.cursor = ev.id;
        if (!inScope(this.scope, ev)) continue;
        this.sent += 1;
        if (!this.io.out.write(sseFrame(ev)) && !(await this.drained())) return;
      }
      if (batch.length < this.timing.batch) {
        if (!this.follow) {
          this.io.out.end();
          return;
        }
        await this.idle();
      }
    }
  }

  /** Until the reader took what is buffered (true), or it stalled and was cut, or the stream stopped (false). */
  private drained(): Promise<boolean> {
    this.blocked = true;
    return new Promise<boolean>((resolve) => {
      const settle = (ok: boolean) => {
        clearTimeout(timer);
        this.io.out.off('drain', onDrain);
        this.waker = null;
        this.blocked = false;
        resolve(ok && !this.stopped);
      };
      const onDrain = () => settle(true);
      const timer = setTimeout(() => {
        this.io.cut();
        this.stop();
        settle(false);
      }, this.timing.stallMs);
      this.io.out.once('drain', onDrain);
      // A stop while blocked ends the wait; a wake-up does not (the reader is still behind).
      this.waker = () => this.stopped && settle(false);
    });
  }

  private idle(): Promise<void> {
    if (this.pending || this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => settle(), this.timing.pollMs);
      const settle = () => {
        clearTimeout(timer);
        this.waker = null;
        resolve();
      };
      this.waker = settle;
    });
  }
}

/** A stream started: its end, and how to end it (as the server's stop does: gracefully, or cut when the reader holds it full). */
export interface OpenStream {
  done: Promise<void>;
  close: () => void;
}

/** This node's streams: the per-client cap, the bus's wake-ups, and their end when the server stops. */
export class EventStreams {
  private readonly byClient = new Map<number, Set<EventStream>>();
  private readonly unsubscribe: Array<() => void> = [];
  private closing = false;
  private checking: Promise<void> | undefined;
  /** The stall check runs only while a stream is open: an idle node's timers each cost a wake-up (D-188). */
  private checker: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: Pick<Core, 'store' | 'bus' | 'clock'>,
    private readonly timing: StreamTiming = STREAM_TIMING,
    /** The kernel's unacknowledged bytes per socket (server/send-queues.ts); absent: only a full socket counts as a stall. */
    private readonly sendQueues?: SendQueues,
  ) {
    for (const kind of WAKE_KINDS) this.unsubscribe.push(core.bus.subscribe(kind, (e) => this.wake(e.cliente_id)));
  }

  /** Every stream's stall check (one at a time: a call meanwhile gets the running one's end, then its own). */
  async checkStalls(): Promise<void> {
    while (this.checking) await this.checking;
    this.checking = this.checkAll().finally(() => (this.checking = undefined));
    return this.checking;
  }

  /** The kernel's figures are read once for all streams, and only when one may owe its reader bytes. */
  private async checkAll(): Promise<void> {
    const all = [...this.byClient.values()].flatMap((set) => [...set]);
    if (all.length === 0) return;
    const queues = this.sendQueues && all.some((s) => s.mayOwe()) ? await this.sendQueues().catch(() => undefined) : undefined;
    const now = this.core.clock.ticks();
    for (const s of all) s.checkStall(queues, now);
  }

  /**
   * A principal's stream, as the route asks for it: its scope (400, 403,
   * 404), where it starts (410), then the cap (429). Resolves once it runs,
   * with its end and how to end it early (the panel's, when its session ends).
   */
  async start(p: ClientPrincipal, q: StreamQuery & { follow: boolean; lastId?: string }, io: StreamIo): Promise<OpenStream> {
    const scope = await streamScope(this.core, p, q);
    const after = await streamStart(this.core, scope, q.lastId, q.follow);
    return this.open(scope, after, q.follow, io);
  }

  /** Starts a stream after `after` (null: from the oldest kept); refused past the client's cap or while the server stops. */
  open(scope: StreamScope, after: string | null, follow: boolean, io: StreamIo): OpenStream {
    if (this.closing) fail('SHUTTING_DOWN', 'the server is stopping', { retryAfter: 5 });
    const mine = this.byClient.get(scope.clienteId) ?? new Set<EventStream>();
    if (mine.size >= this.timing.perClient) {
      fail('STREAM_CAP', `this client already has ${mine.size} event streams open on this node; close one first`, { retryAfter: 5 });
    }
    this.byClient.set(scope.clienteId, mine);
    const s = new EventStream(this.core, scope, after, follow, io, this.timing);
    mine.add(s);
    if (!this.checker) {
      this.checker = setInterval(() => void this.checkStalls(), this.timing.stallCheckMs);
      this.checker.unref();
    }
    const done = s.done.finally(() => {
      mine.delete(s);
      if (mine.size === 0 && this.byClient.get(scope.clienteId) === mine) this.byClient.delete(scope.clienteId);
      if (this.byClient.size === 0) {
        clearInterval(this.checker);
        this.checker = undefined;
      }
    });
    return { done, close: () => s.close() };
  }

  /** New events of this client on this node: its streams read now. */
  wake(clienteId: number): void {
    for (const s of this.byClient.get(clienteId) ?? []) s.wake();
  }

  stats(): StreamStats[] {
    return [...this.byClient.values()].flatMap((set) =>
      [...set].map((s) => ({
        clienteId: s.scope.clienteId,
        read: s.read,
        sent: s.sent,
        blocked: s.blocked,
        buffered: s.buffered,
        unacked: s.unacked,
        taken: s.taken,
      })),
    );
  }

  /** The server stops: no new stream, every open one ends (clients resume by id on another node or after the restart). */
  closeAll(): void {
    this.closing = true;
    clearInterval(this.checker);
    this.checker = undefined;
    for (const u of this.unsubscribe.splice(0)) u();
    for (const set of this.byClient.values()) for (const s of set) s.close();
  }
}
