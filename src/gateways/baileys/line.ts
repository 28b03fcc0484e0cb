import type { Agent } from 'node:https';
import type { BinaryNode } from 'baileys';
import { backoffMs, type Backoff } from '../../core/time/backoff.js';
import type { Clock } from '../../core/time/clock.js';
import type { GatewayEvent } from '../../core/ports/gateway.js';
import type { SessionStatus } from '../../core/ports/model.js';
import type { FenceSource } from '../../core/ports/engine-holds.js';
import { takeTurns } from './address-turns.js';
import type { EngineAuthSource, LineAuth } from './auth.js';
import { EngineStateUnreadable } from '../../core/engine/engine-key.js';
import { closeCode, closeOutcome } from './close-codes.js';
import { inboundOf, ownStatusOf, receiptOf, userReceiptOf } from './inbound.js';
import { JOURNAL_KIND, replayOf, SocketJournal, type AnyKindKeys } from './inbound-journal.js';
import type { BaileysLib } from './library.js';
import { libraryLogger, type EngineLog } from './logger.js';
import { RatchetAhead } from './ratchet-ahead.js';
import { ServerAcks } from './server-acks.js';

/** How long Baileys may hold its event buffer before the engine releases it (see unstick). */
const BUFFER_HELD_MS = 1000;

export type Socket = ReturnType<BaileysLib['makeWASocket']>;

/** What every line of one engine shares. */
export interface LineDeps {
  lib: BaileysLib;
  auth: EngineAuthSource;
  clock: Clock;
  log: EngineLog;
  /** The network's web socket (`--baileys-ws-url`); Baileys' own default when absent. */
  wsUrl?: string;
  /** For media uploads and downloads (a test network's CA). */
  fetchAgent?: Agent;
  keepAliveMs: number;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  reconnect: Backoff;
  random: () => number;
  /** Resolves once the event is durable. */
  emit: (e: GatewayEvent) => Promise<void>;
  /** Each status change, and each reconnect, for the metrics. */
  onStatus?: (instancia: string, status: SessionStatus) => void;
  onReconnect?: (instancia: string) => void;
  /** The engine's hold of this line, carried by each write of its state (core/engine/engine-holds.ts). */
  fence?: FenceSource;
}

/**
 * One line's socket: started on a link attempt or, for a linked line, when
 * the engine starts; its status follows `connection.update`; it reconnects
 * by itself after a lost connection (with backoff) or a restart request (at
 * once). Never two sockets at once: a new one is made only after the last
 * has ended, and events of an ended socket are ignored (its generation).
 */
export class EngineLine {
  status: SessionStatus = 'connecting';
  qr: string | null = null;
  sock: Socket | null = null;
  /** The network's acks of the current socket's message stanzas: a send is taken once its ack comes. */
  acks = new ServerAcks();
  private auth: LineAuth | null = null;
  private generation = 0;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  private waiters = new Set<() => void>();
  /** Events of this line in the order Baileys gave them, each durable before the next. */
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Journal entries replayed at this connect: removed once the socket has handled the stanzas the network kept for it. */
  private replayed: string[] = [];

  constructor(
    readonly instancia: string,
    private readonly d: LineDeps,
  ) {}

  get registered(): boolean {
    return Boolean(this.auth?.state.creds.me?.id);
  }

  /** The linked phone's id and name, when linked. */
  get me(): { id: string; name?: string } | null {
    return this.auth?.state.creds.me ?? null;
  }

  /** The last close was another client taking the session over (440): it stays stopped until an operator acts. */
  heldElsewhere = false;

  /** Why the stored state does not open (another key, an altered row): the line needs a new scan, which replaces it. */
  unreadable: string | null = null;

  /** Whether the stored state holds a link (a line half-way through a scan holds state but no link). */
  async linked(): Promise<boolean> {
    try {
      this.auth ??= await this.d.auth.forLine(this.d.lib, this.instancia, this.d.fence);
    } catch (err) {
      if (!(err instanceof EngineStateUnreadable)) throw err;
      // Kept, not dropped: the right key file may still be given. A link asked for later replaces it (connect).
      this.unreadable = err.message;
      this.set('need_scan');
      return false;
    }
    return this.registered;
  }

  /** Released by the engine (its node no longer holds the line): it never opens again. */
  private disposed = false;

  /** Starts a socket unless one is running or waiting to reconnect. */
  async open(): Promise<void> {
    if (this.disposed) return;
    this.stopped = false;
    if (this.sock || this.retry) return;
    await this.startConnect();
  }

  private connecting: Promise<void> | null = null;

  /** Two starts at once (the keeper's, a link's, a reconnect's) make one socket: the second waits for the first. */
  private startConnect(): Promise<void> {
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<void> {
    this.retry = undefined;
    if (this.stopped) return;
    this.heldElsewhere = false;
    if (this.unreadable !== null && !this.auth) {
      // A link asked for on a line whose state does not open: that state is worthless now, a new scan replaces it.
      await this.d.auth.drop(this.instancia);
      this.unreadable = null;
    }
    this.auth ??= await this.d.auth.forLine(this.d.lib, this.instancia, this.d.fence);
    await this.replay(this.auth);
    // Stopped or released while its state was read: no socket after all.
    if (this.stopped || this.disposed) return;
    const gen = ++this.generation;
    const { lib } = this.d;
    const keys = lib.makeCacheableSignalKeyStore(this.auth.state.keys, libraryLogger(this.d.log, this.instancia));
    const journal = new SocketJournal(() => this.d.clock.now(), keys);
    const ahead = new RatchetAhead(keys);
    const sock = lib.makeWASocket({
      auth: { creds: this.auth.state.creds, keys },
      // Each decrypt journals its plaintext in the ratchet's own transaction (inbound-journal.ts, D-128); each encrypt's
      // ratchet is stored before its stanza can leave (ratchet-ahead.ts, D-194); each call into libsignal waits for
      // the contact's address to be free, so it runs in its own transaction (address-turns.ts, D-195).
      makeSignalRepository: (auth, logger, pnToLid) =>
        takeTurns(
          journal.wrap(ahead.wrap(lib.DEFAULT_CONNECTION_CONFIG.makeSignalRepository({ ...auth, keys: ahead.keys(auth.keys) }, logger, pnToLid)), auth.keys),
        ),
      ...(this.d.wsUrl ? { waWebSocketUrl: this.d.wsUrl } : {}),
      ...(this.d.fetchAgent ? { fetchAgent: this.d.fetchAgent } : {}),
      logger: libraryLogger(this.d.log, this.instancia),
      keepAliveIntervalMs: this.d.keepAliveMs,
      connectTimeoutMs: this.d.connectTimeoutMs,
      defaultQueryTimeoutMs: this.d.queryTimeoutMs,
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldSyncHistoryMessage: () => false,
      printQRInTerminal: false,
      // A message the network asks us to send again: we keep none (pasarela's store has the send, not the proto).
      getMessage: async () => undefined,
    });
    this.sock = sock;
    const acks = new ServerAcks();
    this.acks = acks;
    sock.ws.on('CB:ack,class:message', (node: BinaryNode) => acks.onAck(node));
    // Whichever generation: a socket that ended takes no more acks.
    sock.ev.on('connection.update', (u) => u.connection === 'close' && acks.close());
    const current = () => gen === this.generation;
    // Every frame, before Baileys handles it: a stanza's ciphertexts tie its decrypts to its message id.
    sock.ws.on('frame', (f: Parameters<SocketJournal['onFrame']>[0]) => journal.onFrame(f));
    this.unstick(sock, current);
    sock.ev.on('creds.update', () => {
      const auth = this.auth;
      if (auth) this.serial(() => auth.saveCreds());
    });
    sock.ev.on('connection.update', (u) => {
      if (!current()) return;
      if (u.qr) {
        this.qr = u.qr;
        this.set('need_scan');
      }
      if (u.isNewLogin) {
        this.qr = null;
        this.set('connecting');
      }
      if (u.connection === 'connecting' && !this.qr) this.set('connecting');
      if (u.connection === 'open') {
        this.qr = null;
        this.failures = 0;
        this.set('connected');
      }
      if (u.connection === 'close') this.closed(closeCode(u.lastDisconnect?.error));
      if (u.receivedPendingNotifications) {
        journal.backlogAllSent();
        this.settleReplayed(journal);
      }
    });
    sock.ev.on('messages.upsert', ({ messages, type }) => {
      if (!current()) return;
      for (const m of messages) {
        // Taken now, while the upsert is the message's latest: its journal entries go once its event (if any) is durable.
        const journaled = journal.take(m.key.id);
        // Receipts that beat the record of our own send are folded by Baileys' event buffer into that record's status.
        const folded = ownStatusOf(this.instancia, m, this.d.clock.now());
        // `append`: messages that arrived while the line was offline, given at login (history sync is off, D-122).
        // A repeat (redelivered, or replayed from the journal) is dropped by the store's unique key on dedupeKey.
        const e = folded ?? (type === 'notify' || type === 'append' ? inboundOf(this.instancia, m, this.d.clock.now()) : null);
        this.serial(async () => {
          if (e) await this.d.emit(e);
          await journal.remove(journaled);
        });
      }
      this.settleReplayed(journal);
    });
    sock.ev.on('messages.update', (updates) => {
      if (!current()) return;
      for (const u of updates) {
        const e = receiptOf(this.instancia, u, this.d.clock.now());
        if (e) this.serial(() => this.d.emit(e));
      }
    });
    sock.ev.on('message-receipt.update', (receipts) => {
      if (!current()) return;
      for (const r of receipts) {
        const e = userReceiptOf(this.instancia, r, this.d.clock.now());
        if (e) this.serial(() => this.d.emit(e));
      }
    });
  }

  /**
   * Baileys holds events in a buffer while it processes some stanzas and
   * releases them when the work ends; its count of nested work can be left
   * above zero, and then receipts and messages wait for its 30 s safety
   * flush. With no history sync there is nothing to consolidate: a buffer
   * held past a second is released.
   */
  private unstick(sock: Socket, current: () => boolean): void {
    let since: number | null = null;
    const timer = setInterval(() => {
      if (!current()) return clearInterval(timer);
      if (!sock.ev.isBuffering()) since = null;
      else if (since === null) since = performance.now();
      else if (performance.now() - since > BUFFER_HELD_MS) {
        since = null;
        sock.ev.flush();
      }
    }, BUFFER_HELD_MS / 4);
    timer.unref();
  }

  /** Entries replayed at this connect go once the socket has had, and handled, every stanza the network kept for the line. */
  private settleReplayed(journal: SocketJournal): void {
    if (journal.backlogDone()) this.serial(() => journal.remove(this.replayed.splice(0)));
  }

  /**
   * The journal's leftovers (a crash after a decrypt, before its event was
   * durable; a socket that ended in between) become events again, in the
   * line's order, before the new socket starts; expired or unreadable ones
   * are dropped. A message already stored is dropped by its dedupeKey.
   */
  private async replay(auth: LineAuth): Promise<void> {
    const me = auth.state.creds.me;
    if (!me?.id) return;
    let entries: Map<string, unknown>;
    try {
      entries = await auth.readKind(JOURNAL_KIND);
    } catch (err) {
      this.d.log.error({ instancia: this.instancia, error: err instanceof Error ? err.name : 'unknown' }, 'engine: the inbound journal could not be read');
      return;
    }
    if (entries.size === 0) return;
    const { messages, dropped } = replayOf(this.d.lib, entries, me, this.d.clock.now());
    this.d.log.warn({ instancia: this.instancia, replayed: messages.length, dropped: dropped.length }, 'engine: inbound journal replayed');
    for (const { message, ids } of messages) {
      const e = inboundOf(this.instancia, message, this.d.clock.now());
      this.serial(async () => {
        if (e) await this.d.emit(e);
        this.replayed.push(...ids);
      });
    }
    const keys: AnyKindKeys = auth.state.keys;
    if (dropped.length > 0) this.serial(async () => keys.set({ [JOURNAL_KIND]: Object.fromEntries(dropped.map((id) => [id, null])) }));
  }

  private serial(step: () => Promise<void>): void {
    this.chain = this.chain
      .then(step)
      .catch((err: unknown) =>
        this.d.log.error(
          { instancia: this.instancia, error: err instanceof Error ? err.name : 'unknown' },
          'engine: an event of the line could not be handled',
        ),
      );
  }

  /** The socket ended by itself: what its code means for the line. */
  private closed(code: number | undefined): void {
    this.sock = null;
    this.qr = null;
    const out = closeOutcome(code, this.registered);
    this.heldElsewhere = out.heldElsewhere === true;
    this.d.log.warn({ instancia: this.instancia, code: code ?? null }, `engine: connection closed (${out.reason})`);
    this.set(out.status);
    if (out.forget) void this.forget();
    if (this.stopped || out.reconnect === 'no') return;
    this.d.onReconnect?.(this.instancia);
    if (out.reconnect === 'now') {
      void this.startConnect().catch(() => undefined);
      return;
    }
    this.failures += 1;
    const ms = backoffMs(this.d.reconnect, this.failures, this.d.random) ?? this.d.reconnect.baseMs;
    this.retry = setTimeout(() => void this.startConnect().catch(() => undefined), ms);
  }

  private async forget(): Promise<void> {
    const auth = this.auth;
    this.auth = null;
    await this.chain;
    await auth?.clear();
  }

  private set(status: SessionStatus): void {
    for (const w of this.waiters) w();
    if (status === this.status) return;
    this.status = status;
    this.d.onStatus?.(this.instancia, status);
    this.serial(() => this.d.emit({ type: 'session', instancia: this.instancia, status, at: this.d.clock.now() }));
  }

  /** Resolves when `done()` holds, checked at each change of the line; false past `ms`. */
  async until(done: () => boolean, ms: number): Promise<boolean> {
    if (done()) return true;
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        finish(true);
      };
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(ok);
      };
      const timer = setTimeout(() => finish(done()), ms);
      this.waiters.add(check);
    });
  }

  /** Ends the socket without reconnecting; `status` says what the line is afterwards. */
  async stop(status?: SessionStatus): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.retry = undefined;
    this.generation += 1;
    const sock = this.sock;
    this.sock = null;
    this.qr = null;
    this.acks.close();
    if (sock) await sock.end(undefined).catch(() => undefined);
    if (status) this.set(status);
    await this.chain;
  }

  /** Ends the socket for good: the engine's node gave the line up, and this object is never opened again. */
  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop();
  }

  /** The phone is unlinked (a logout asked here): the state is dropped. */
  async unlink(): Promise<void> {
    await this.stop('logged_out');
    await this.forget();
  }

  /** Events handled so far are durable. */
  idle(): Promise<void> {
    return this.chain;
  }
}
