import { createHmac, randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Clock } from '../core/time/clock.js';
import {
  GatewayFailure,
  type Gateway,
  type GatewayEvent,
  type GatewayCapabilities,
  type OutboundMessage,
  type PairingResult,
  type QrResult,
  type SessionProfile,
} from '../core/ports/gateway.js';
import type { ReceiptEstado, SessionStatus } from '../core/ports/model.js';
import type { KvKey } from '../core/ports/kv.js';
import type { Store } from '../core/ports/store.js';
import { GatewayEvents } from './gateway-events.js';

/**
 * The simulated messaging network (docs/design.md §2). Nothing leaves the process.
 * Sessions and failure rules are kept in the store, so, as with a real
 * gateway, a linked line stays linked across restarts of `serve`.
 */
export interface SimOptions {
  /** How often the QR of a pending session changes. */
  qrRotateMs: number;
  deliveryMs: number;
  readMs: number;
}

interface SimSession {
  numero: string;
  status: SessionStatus;
  /** Secret from which every QR of this link attempt is derived. */
  seed: string;
  qrSince: number;
  connectedAt: number | null;
  /** A restart in progress: connected again at this clock time (a read after it finds it done, if the process stopped meanwhile). */
  backAt?: number;
}

interface SimFailRule {
  motivo: string;
  since: number;
}

const SESSIONS = 'sim.sessions';
const FAILS = 'sim.fail';
/** msg_id -> gateway id of every message the simulated network took (its idempotency memory). */
const SENT = 'sim.sent';
/**
 * How long that memory lasts: well past the queue's TTL (24 h), after which
 * nobody sends the same msg_id again. It expires so it stays bounded.
 */
const SENT_TTL_MS = 48 * 60 * 60 * 1000;
/** How often expired entries are removed, and at most how many at a time. */
const EXPIRE_EVERY_MS = 60_000;
const EXPIRE_BATCH = 5_000;
/** Receipts the network still owes, so that they arrive even across a restart of `serve`. */
const RECEIPTS = 'sim.receipts';
/** How long a handled receipt waits to be forgotten with others (see forget). */
const FORGET_MS = 20;

interface OwedReceipt {
  instancia: string;
  gatewayMsgId: string;
  estado: 'entregado' | 'leido';
  /** Clock time when it is due. */
  at: number;
}

/** How long a restarted session takes to connect again. */
const RESTART_MS = 300;
/** The name the simulated phone shows on WhatsApp. */
export const SIM_PUSH_NAME = 'Simulated phone';

/** A refusal of a simulator control (scan without a QR, receive while offline). */
export class SimConflict extends Error {}

export class SimGateway implements Gateway {
  readonly name = 'sim';
  readonly simulated = true;
  readonly capabilities: GatewayCapabilities = { unsupported: {} };
  private readonly events = new GatewayEvents();
  /** While true the network is unreachable: every call fails as a gateway that is down would. */
  private outage = false;
  /** Sends still to be refused as rate-limited (the network's "slow down"). */
  private rateLimited = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  /** Receipts handled and not yet forgotten. */
  private readonly handled: KvKey[] = [];
  /** Messages really sent by this process (a retry answered from memory does not count). */
  sentCount = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** `serve --sim-qr-ms`, `--sim-delivery-ms`, `--sim-read-ms` (server/config-knobs.ts). */
    private readonly opts: SimOptions,
  ) {}

  /** Receipts owed from before a restart go out when due (at once if overdue), as a real network's would. */
  async start(): Promise<void> {
    const now = this.clock.now();
    for (const { key, value } of await this.store.kvList<OwedReceipt>(RECEIPTS)) this.arm(key, value, value.at - now);
    this.expireLater();
  }

  /** Forgets what the network no longer needs to remember, once a minute. */
  private expireLater(): void {
    this.later(EXPIRE_EVERY_MS, async () => {
      try {
        await this.store.kvExpire(this.clock.now(), EXPIRE_BATCH);
      } finally {
        this.expireLater();
      }
    });
  }

  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void {
    this.events.on(listener);
  }

  /** Resolves once every listener has handled the event (made it durable). */
  private emit(e: GatewayEvent): Promise<void> {
    return this.events.emit(e);
  }

  private async session(instancia: string): Promise<SimSession | null> {
    return this.store.kvGet<SimSession>(SESSIONS, instancia);
  }

  private async save(instancia: string, s: SimSession, emit: boolean): Promise<void> {
    await this.store.kvSet(SESSIONS, instancia, s);
    if (emit) await this.emit({ type: 'session', instancia, status: s.status, at: this.clock.now() });
  }

  /** WhatsApp-like `2@ref,key,key,1` content; the ref part changes every rotation. */
  qrFor(s: SimSession, now = this.clock.now()): string {
    const rotation = Math.floor((now - s.qrSince) / this.opts.qrRotateMs);
    const ref = createHmac('sha256', s.seed).update(`ref:${rotation}`).digest('base64');
    const noise = createHmac('sha256', s.seed).update('noise').digest('base64');
    const identity = createHmac('sha256', s.seed).update('identity').digest('base64');
    return `2@${ref},${noise},${identity},1`;
  }

  /** The network keeps no state for an instance until a link attempt starts. */
  async ensureInstance(): Promise<void> {
    this.assertOpen();
  }

  /** The session waiting for a scan, started now when there is none. */
  private async linking(instancia: string, numero: string): Promise<SimSession> {
    const s = await this.session(instancia);
    if (s?.status === 'connected' || s?.status === 'need_scan') return s;
    const fresh: SimSession = { numero, status: 'need_scan', seed: randomBytes(16).toString('hex'), qrSince: this.clock.now(), connectedAt: null };
    await this.save(instancia, fresh, true);
    return fresh;
  }

  async connect(instancia: string, numero: string): Promise<QrResult> {
    this.assertOpen();
    const s = await this.linking(instancia, numero);
    return s.status === 'connected' ? { status: 'connected', qr: '' } : { status: 'need_scan', qr: this.qrFor(s) };
  }

  async pairingCode(instancia: string, numero: string): Promise<PairingResult> {
    this.assertOpen();
    const s = await this.linking(instancia, numero);
    return s.status === 'connected' ? { status: 'connected', code: '' } : { status: 'need_scan', code: this.codeFor(s) };
  }

  /** WhatsApp-like 8-character pairing code `XXXX-XXXX`, fixed for one link attempt. */
  codeFor(s: SimSession): string {
    const alphabet = 'ABCDEFGHJKLMNPQRSTVWXYZ23456789';
    const d = createHmac('sha256', s.seed).update('pairing').digest();
    const chars = Array.from(d.subarray(0, 8), (b) => alphabet[b % alphabet.length]).join('');
    return `${chars.slice(0, 4)}-${chars.slice(4)}`;
  }

  async status(instancia: string): Promise<SessionStatus> {
    this.assertOpen();
    const s = await this.session(instancia);
    if (s?.backAt !== undefined && s.backAt <= this.clock.now()) return (await this.reconnect(instancia)) ?? 'unknown';
    return s?.status ?? 'unknown';
  }

  /** `status` of each, its sessions read in one go. */
  async statuses(instancias: string[]): Promise<SessionStatus[]> {
    this.assertOpen();
    const found = (await this.store.kvGetMany(instancias.map((key) => ({ ns: SESSIONS, key })))) as Array<SimSession | null>;
    return Promise.all(
      found.map(async (s, i) =>
        s?.backAt !== undefined && s.backAt <= this.clock.now() ? ((await this.reconnect(instancias[i]!)) ?? 'unknown') : (s?.status ?? 'unknown'),
      ),
    );
  }

  /**
   * A linked session drops its connection and comes back RESTART_MS later
   * (`connecting`, then `connected`, each by event); one waiting for a scan
   * starts a new link attempt (a fresh QR); none is `logged_out`.
   */
  async restart(instancia: string): Promise<SessionStatus> {
    this.assertOpen();
    const s = await this.session(instancia);
    if (!s || s.status === 'logged_out') return 'logged_out';
    if (s.status === 'need_scan') {
      await this.save(instancia, { ...s, seed: randomBytes(16).toString('hex'), qrSince: this.clock.now() }, true);
      return 'need_scan';
    }
    await this.save(instancia, { ...s, status: 'connecting', backAt: this.clock.now() + RESTART_MS }, true);
    this.later(RESTART_MS, async () => void (await this.reconnect(instancia)));
    return 'connecting';
  }

  /** A restart's end: connected again, unless something else happened to the session meanwhile. */
  private async reconnect(instancia: string): Promise<SessionStatus | null> {
    const s = await this.session(instancia);
    if (!s || s.backAt === undefined) return s?.status ?? null;
    const { backAt: _done, ...rest } = s;
    await this.save(instancia, { ...rest, status: 'connected', connectedAt: this.clock.now() }, true);
    return 'connected';
  }

  /** The simulated phone: a fixed name and the number it was linked with. */
  async profile(instancia: string): Promise<SessionProfile | null> {
    this.assertOpen();
    const s = await this.session(instancia);
    return s?.status === 'connected' ? { nombre: SIM_PUSH_NAME, numero: s.numero } : null;
  }

  async logout(instancia: string): Promise<void> {
    this.assertOpen();
    const s = await this.session(instancia);
    if (!s || s.status === 'logged_out') return;
    const { backAt: _restart, ...rest } = s;
    await this.save(instancia, { ...rest, status: 'logged_out', connectedAt: null }, true);
  }

  async deleteInstance(instancia: string): Promise<void> {
    await this.store.kvDelete(SESSIONS, instancia);
  }

  async send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    this.assertOpen();
    // The line's session, the network's memory of this msg_id and the recipient's failure rule: one read.
    const [s, already, rule] = (await this.store.kvGetMany([
      { ns: SESSIONS, key: instancia },
      { ns: SENT, key: msg.msgId },
      { ns: FAILS, key: msg.destinatario },
    ])) as [SimSession | null, { gatewayMsgId: string } | null, SimFailRule | null];
    if (s?.status !== 'connected') throw new GatewayFailure(`session ${instancia} is not connected`, 'transient');
    // The network already has this message: answer as it did, send nothing again.
    if (already) return { gatewayMsgId: already.gatewayMsgId };
    if (this.rateLimited > 0) {
      this.rateLimited -= 1;
      throw new GatewayFailure('rate-overlimit: the network asks this line to slow down', 'rate_limited', 30_000);
    }
    if (rule) throw new GatewayFailure(rule.motivo, 'permanent');
    if (msg.filePath) {
      const size = await stat(msg.filePath).then(
        (s) => s.size,
        () => -1,
      );
      if (size <= 0) throw new GatewayFailure('media file missing or empty', 'permanent');
    }
    const gatewayMsgId = `3EB0${randomBytes(10).toString('hex').toUpperCase()}`;
    const now = this.clock.now();
    const owed = (estado: OwedReceipt['estado'], inMs: number) => ({
      ns: RECEIPTS,
      key: `${gatewayMsgId}:${estado}`,
      value: { instancia, gatewayMsgId, estado, at: now + inMs } satisfies OwedReceipt,
    });
    const receipts = [owed('entregado', this.opts.deliveryMs), owed('leido', Math.max(this.opts.readMs, this.opts.deliveryMs))];
    // The network's memory of the send and the receipts it owes, in one write.
    await this.store.kvSetMany([{ ns: SENT, key: msg.msgId, value: { gatewayMsgId, at: now }, expiraAt: now + SENT_TTL_MS }, ...receipts]);
    for (const r of receipts) this.arm(r.key, r.value, r.value.at - now);
    this.sentCount += 1;
    return { gatewayMsgId };
  }

  /** The network's memory of a send (kept SENT_TTL_MS): whether the message sent as `msgId` went, and when. */
  async sentMessage(_instancia: string, msgId: string): Promise<{ gatewayMsgId: string; at: number } | null> {
    this.assertOpen();
    const s = await this.store.kvGet<{ gatewayMsgId: string; at: number }>(SENT, msgId);
    return s ? { gatewayMsgId: s.gatewayMsgId, at: s.at } : null;
  }

  /** Delivers an owed receipt after `ms`; it is forgotten only once it was handled. */
  private arm(key: string, r: OwedReceipt, ms: number): void {
    this.later(Math.max(0, ms), async () => {
      await this.receiptNow(r.instancia, r.gatewayMsgId, r.estado);
      this.forget(key);
    });
  }

  /**
   * Handled receipts are forgotten together, FORGET_MS after the first: a
   * message's two receipts, or a busy moment's many, in one statement. One
   * handled but not yet forgotten when the process stops goes out again at
   * the next start, which a receipt already applied ignores (as a real
   * network's repeated webhook).
   */
  private forget(key: string): void {
    this.handled.push({ ns: RECEIPTS, key });
    if (this.handled.length === 1) this.later(FORGET_MS, () => this.forgetHandled());
  }

  private async forgetHandled(): Promise<void> {
    const keys = this.handled.splice(0);
    if (keys.length > 0) await this.store.kvDeleteMany(keys);
  }

  private later(ms: number, fn: () => Promise<void>): void {
    // setTimeout's ceiling (~24.8 days): a longer delay would fire at once.
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        // A listener's failure is reported by the listener; a timer has no caller to tell.
        if (!this.closed) fn().catch(() => undefined);
      },
      Math.min(ms, 2 ** 31 - 1),
    );
    t.unref();
    this.timers.add(t);
  }

  private assertOpen(): void {
    if (this.closed) throw new GatewayFailure('gateway is closed', 'transient');
    if (this.outage) throw new GatewayFailure('sim gateway unreachable (simulated outage)', 'transient');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    // Best effort: what is not forgotten now goes out again at the next start (see forget).
    await this.forgetHandled().catch(() => undefined);
  }

  // Controls: what the person holding the phone, or the network, would do.

  /**
   * The phone scans the current QR, or types the pairing code. `qr`, when
   * given, must be the one showing now; `code` the one issued for this attempt.
   */
  async scan(instancia: string, qr?: string, code?: string): Promise<void> {
    const s = await this.session(instancia);
    if (!s || s.status !== 'need_scan') {
      throw new SimConflict(`no QR or pairing code is waiting for ${instancia}: request one first (celular qr, or celular link --pairing-code)`);
    }
    if (qr !== undefined && qr !== this.qrFor(s)) throw new SimConflict('that QR has expired: scan the current one');
    if (code !== undefined && code.toUpperCase().replace(/[^A-Z0-9]/g, '') !== this.codeFor(s).replace('-', '')) {
      throw new SimConflict('that pairing code is not the one issued for this line');
    }
    await this.save(instancia, { ...s, status: 'connected', connectedAt: this.clock.now() }, true);
  }

  /** The phone removes the linked device. */
  async phoneLogout(instancia: string): Promise<void> {
    const s = await this.session(instancia);
    if (!s || s.status !== 'connected') throw new SimConflict(`${instancia} is not connected`);
    await this.save(instancia, { ...s, status: 'logged_out', connectedAt: null }, true);
  }

  /** Someone sends a message to the line. */
  async receive(instancia: string, de: string, texto: string): Promise<{ gatewayMsgId: string }> {
    const s = await this.session(instancia);
    if (!s || s.status !== 'connected') throw new SimConflict(`${instancia} is not connected: a line only receives while linked`);
    const gatewayMsgId = `SIM${randomBytes(10).toString('hex').toUpperCase()}`;
    await this.emit({
      type: 'inbound',
      instancia,
      de,
      tipo: 'texto',
      texto,
      media: null,
      gatewayMsgId,
      at: this.clock.now(),
      dedupeKey: `sim:${instancia}:${gatewayMsgId}`,
    });
    return { gatewayMsgId };
  }

  /** The recipient's phone acknowledges a message now (receipts otherwise follow --sim-delivery-ms / --sim-read-ms). */
  /** A receipt now; `error` is the network reporting a message it took as failed (as a real gateway's webhook may). */
  async receiptNow(instancia: string, gatewayMsgId: string, estado: ReceiptEstado, error?: string): Promise<void> {
    await this.emit({ type: 'receipt', instancia, gatewayMsgId, estado, at: this.clock.now(), ...(error === undefined ? {} : { error }) });
  }

  /** The next `n` sends are refused as rate-limited (retry after 30 s). */
  rateLimitNext(n: number): void {
    this.rateLimited = n;
  }

  /** The network becomes unreachable (true) or comes back (false). */
  setOutage(on: boolean): void {
    this.outage = on;
  }

  /** Every later send to `numero` fails permanently with `motivo`. */
  async failNumber(numero: string, motivo: string): Promise<void> {
    await this.store.kvSet<SimFailRule>(FAILS, numero, { motivo, since: this.clock.now() });
  }

  async clearFail(numero: string): Promise<boolean> {
    const had = (await this.store.kvGet(FAILS, numero)) !== null;
    await this.store.kvDelete(FAILS, numero);
    return had;
  }

  async failRules(): Promise<Array<{ numero: string; motivo: string }>> {
    return (await this.store.kvList<SimFailRule>(FAILS)).map((r) => ({ numero: r.key, motivo: r.value.motivo }));
  }
}
