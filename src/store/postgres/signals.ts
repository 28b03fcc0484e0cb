import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { SignalHandler, Signals } from '../../core/ports/signals.js';
import { LocalSignals } from '../../core/nodes/signals-local.js';
import { Turns } from '../../core/queue/turns.js';

export interface PgSignalsOptions {
  /** The store's schema: each gets its own channels, so stores (parallel tests, deployments) in one database never hear each other. */
  schema?: string;
  /** The pool NOTIFY goes through (the store's). */
  pool: pg.Pool;
  /** Bound of a connect, a LISTEN and a NOTIFY. */
  timeoutMs?: number;
  /** First pause before a reconnection; doubled up to 5 s. */
  retryMs?: number;
  onError?: (err: unknown) => void;
}

const MAX_RETRY_MS = 5_000;

/**
 * Signals over PostgreSQL's LISTEN/NOTIFY: one dedicated connection listens
 * (a pooled one could be handed to a query mid-notice); a publish reaches
 * this node's subscribers at once and the others through `pg_notify` on the
 * pool. When the listening connection drops, subscribers hear `gap` at once
 * and again once it listens again (what was sent in between is lost); it
 * reconnects with a doubling pause. Notices are tagged with this node's id
 * so it does not hear its own twice.
 */
export class PgSignals implements Signals {
  private readonly local = new LocalSignals();
  private readonly origin = randomUUID();
  private readonly timeoutMs: number;
  private readonly retryMs: number;
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private pause: number;
  private connecting: Promise<void> | null = null;
  /** The LISTENs of subscriptions made while connected, in turn. */
  private listens: Promise<unknown> = Promise.resolve();
  /** channel name in PostgreSQL -> our channel */
  private readonly names = new Map<string, string>();

  constructor(
    private readonly url: string,
    private readonly opts: PgSignalsOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.retryMs = opts.retryMs ?? 250;
    this.pause = this.retryMs;
  }

  /** Connects and listens; a failure is reported and retried in the background, never thrown. */
  start(): Promise<void> {
    return this.connect();
  }

  /** Whether the listening connection is up (tests, health). */
  get listening(): boolean {
    return this.client !== null;
  }

  /** The listening connection's backend pid, or null. */
  get pid(): number | null {
    return this.client === null ? null : backendPid(this.client);
  }

  async publish(channel: string, payload: string): Promise<void> {
    this.local.deliver(channel, payload);
    if (this.closed) return;
    const sent = this.notices.add({ name: this.pgName(channel), payload: `${this.origin} ${payload}` });
    this.sending.add(sent);
    try {
      await sent;
    } finally {
      this.sending.delete(sent);
    }
  }

  /** Publishes on their way to PostgreSQL: close waits for them, before the store's pool ends. */
  private readonly sending = new Set<Promise<void>>();

  /**
   * The publishes arriving while one NOTIFY runs go together in the next: one statement, one commit (a busy flow's
   * signals, D-193); PostgreSQL delivers a transaction's notices in order, a repeated one once.
   */
  private readonly notices = new Turns<{ name: string; payload: string }, void>(
    async (items) => {
      try {
        await this.opts.pool.query({
          text: 'SELECT pg_notify(x.name, x.payload) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(name, payload, o) ORDER BY x.o',
          values: [items.map((i) => i.name), items.map((i) => i.payload)],
          query_timeout: this.timeoutMs,
        } as pg.QueryConfig);
      } catch (err) {
        // Lost, the turn's whole (small ids each: none is refused alone): the other nodes' copies expire by their TTL.
        this.opts.onError?.(err);
      }
      return items.map(() => ({ status: 'fulfilled', value: undefined }));
    },
    { max: 100, concurrent: 1 },
  );

  subscribe(channel: string, handler: SignalHandler): () => void {
    const name = this.pgName(channel);
    const fresh = !this.names.has(name);
    this.names.set(name, channel);
    const off = this.local.subscribe(channel, handler);
    const c = this.client;
    // One LISTEN after another on the connection (pg 9 refuses a query while one runs); a connection made since listens on its own.
    if (fresh && c) this.listens = this.listens.then(() => (this.client === c ? this.listen(c, name) : undefined)).catch((err: unknown) => this.lost(c, err));
    return off;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.sending);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const c = this.client;
    this.client = null;
    await this.connecting?.catch(() => undefined);
    await Promise.race([c?.end().catch(() => undefined), new Promise((r) => setTimeout(r, this.timeoutMs).unref())]);
    await this.local.close();
  }

  /** A PostgreSQL channel name: short (63 bytes at most) and the schema's own. */
  private pgName(channel: string): string {
    return `pasarela_${createHash('sha256')
      // `public` names its channels as before schemas counted, so nodes of an older version still hear them.
      .update(`${this.opts.schema === 'public' ? '' : (this.opts.schema ?? '')}\0${channel}`)
      .digest('hex')
      .slice(0, 24)}`;
  }

  private listen(c: pg.Client, name: string): Promise<unknown> {
    return c.query({ text: `LISTEN ${c.escapeIdentifier(name)}`, query_timeout: this.timeoutMs } as pg.QueryConfig);
  }

  private connect(): Promise<void> {
    const run = async () => {
      const c = new pg.Client({
        connectionString: this.url,
        connectionTimeoutMillis: this.timeoutMs,
        keepAlive: true,
        application_name: 'pasarela-signals',
      });
      c.on('error', (err) => this.lost(c, err));
      c.on('end', () => this.lost(c, new Error('the listening connection ended')));
      c.on('notification', (n) => this.heard(n.channel, n.payload));
      try {
        await c.connect();
        for (const name of this.names.keys()) await this.listen(c, name);
      } catch (err) {
        await c.end().catch(() => undefined);
        throw err;
      }
      if (this.closed) {
        await c.end().catch(() => undefined);
        return;
      }
      this.client = c;
      this.pause = this.retryMs;
      // Whatever was published while nobody listened is lost.
      this.local.gap();
    };
    this.connecting = run()
      .catch((err) => {
        this.opts.onError?.(err);
        this.retry();
      })
      .finally(() => {
        this.connecting = null;
      });
    return this.connecting;
  }

  private lost(c: pg.Client | null, err: unknown): void {
    if (c === null || this.client !== c) return;
    this.client = null;
    c.end().catch(() => undefined);
    if (this.closed) return;
    this.opts.onError?.(err);
    this.local.gap();
    this.retry();
  }

  private retry(): void {
    if (this.closed || this.timer) return;
    const wait = this.pause;
    this.pause = Math.min(this.pause * 2, MAX_RETRY_MS);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.closed) void this.connect();
    }, wait);
    this.timer.unref();
  }

  private heard(name: string, payload: string | undefined): void {
    const channel = this.names.get(name);
    if (!channel || payload === undefined) return;
    const space = payload.indexOf(' ');
    if (space < 0 || payload.slice(0, space) === this.origin) return;
    this.local.deliver(channel, payload.slice(space + 1));
  }
}

/** pg's Client keeps its backend's pid in `processID`, which its type declarations leave out: read it where it is a number. */
function backendPid(client: object): number | null {
  return 'processID' in client && typeof client.processID === 'number' ? client.processID : null;
}
