import { createHmac, randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Clock } from '../core/clock.js';
import {
  GatewayFailure,
  type Gateway,
  type GatewayEvent,
  type OutboundMessage,
  type QrResult,
  type SessionStatus,
  type Store,
} from '../core/ports.js';

/**
 * The simulated messaging network (DESIGN §2). Nothing leaves the process.
 * Sessions and failure rules are kept in the store, so, as with a real
 * gateway, a linked line stays linked across restarts of `serve`.
 */
export interface SimOptions {
  /** How often the QR of a pending session changes. */
  qrRotateMs: number;
  deliveryMs: number;
  readMs: number;
}

export const SIM_DEFAULTS: SimOptions = { qrRotateMs: 20_000, deliveryMs: 1000, readMs: 3000 };

interface SimSession {
  numero: string;
  status: SessionStatus;
  /** Secret from which every QR of this link attempt is derived. */
  seed: string;
  qrSince: number;
  connectedAt: number | null;
}

interface SimFailRule {
  motivo: string;
  since: number;
}

const SESSIONS = 'sim.sessions';
const FAILS = 'sim.fail';
/** msg_id -> gateway id of every message the simulated network took (its idempotency memory). */
const SENT = 'sim.sent';

/** A refusal of a simulator control (scan without a QR, receive while offline). */
export class SimConflict extends Error {}

export class SimGateway implements Gateway {
  readonly name = 'sim';
  readonly simulated = true;
  private readonly listeners: Array<(e: GatewayEvent) => void> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  /** Messages really sent by this process (a retry answered from memory does not count). */
  sentCount = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly opts: SimOptions = SIM_DEFAULTS,
  ) {}

  async start(): Promise<void> {}

  onEvent(listener: (event: GatewayEvent) => void): void {
    this.listeners.push(listener);
  }

  private emit(e: GatewayEvent): void {
    for (const l of this.listeners) l(e);
  }

  private async session(instancia: string): Promise<SimSession | null> {
    return this.store.kvGet<SimSession>(SESSIONS, instancia);
  }

  private async save(instancia: string, s: SimSession, emit: boolean): Promise<void> {
    await this.store.kvSet(SESSIONS, instancia, s);
    if (emit) this.emit({ type: 'session', instancia, status: s.status, at: this.clock.now() });
  }

  /** WhatsApp-like `2@ref,key,key,1` content; the ref part changes every rotation. */
  qrFor(s: SimSession, now = this.clock.now()): string {
    const rotation = Math.floor((now - s.qrSince) / this.opts.qrRotateMs);
    const ref = createHmac('sha256', s.seed).update(`ref:${rotation}`).digest('base64');
    const noise = createHmac('sha256', s.seed).update('noise').digest('base64');
    const identity = createHmac('sha256', s.seed).update('identity').digest('base64');
    return `2@${ref},${noise},${identity},1`;
  }

  async connect(instancia: string, numero: string): Promise<QrResult> {
    this.assertOpen();
    const s = await this.session(instancia);
    if (s?.status === 'connected') return { status: 'connected', qr: '' };
    if (s?.status === 'need_scan') return { status: 'need_scan', qr: this.qrFor(s) };
    const fresh: SimSession = { numero, status: 'need_scan', seed: randomBytes(16).toString('hex'), qrSince: this.clock.now(), connectedAt: null };
    await this.save(instancia, fresh, true);
    return { status: 'need_scan', qr: this.qrFor(fresh) };
  }

  async status(instancia: string): Promise<SessionStatus> {
    this.assertOpen();
    return (await this.session(instancia))?.status ?? 'unknown';
  }

  async logout(instancia: string): Promise<void> {
    this.assertOpen();
    const s = await this.session(instancia);
    if (!s || s.status === 'logged_out') return;
    await this.save(instancia, { ...s, status: 'logged_out', connectedAt: null }, true);
  }

  async deleteInstance(instancia: string): Promise<void> {
    await this.store.kvDelete(SESSIONS, instancia);
  }

  async send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    this.assertOpen();
    const s = await this.session(instancia);
    if (s?.status !== 'connected') throw new GatewayFailure(`session ${instancia} is not connected`, false);
    // The network already has this message: answer as it did, send nothing again.
    const already = await this.store.kvGet<{ gatewayMsgId: string }>(SENT, msg.msgId);
    if (already) return { gatewayMsgId: already.gatewayMsgId };
    const rule = await this.store.kvGet<SimFailRule>(FAILS, msg.destinatario);
    if (rule) throw new GatewayFailure(rule.motivo, true);
    if (msg.filePath) {
      const size = await stat(msg.filePath).then((s) => s.size, () => -1);
      if (size <= 0) throw new GatewayFailure('media file missing or empty', true);
    }
    const gatewayMsgId = `3EB0${randomBytes(10).toString('hex').toUpperCase()}`;
    await this.store.kvSet(SENT, msg.msgId, { gatewayMsgId, at: this.clock.now() });
    this.sentCount += 1;
    this.later(this.opts.deliveryMs, () => this.emit({ type: 'receipt', instancia, gatewayMsgId, estado: 'entregado', at: this.clock.now() }));
    this.later(Math.max(this.opts.readMs, this.opts.deliveryMs), () =>
      this.emit({ type: 'receipt', instancia, gatewayMsgId, estado: 'leido', at: this.clock.now() }),
    );
    return { gatewayMsgId };
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  private assertOpen(): void {
    if (this.closed) throw new GatewayFailure('gateway is closed', false);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  // Controls: what the person holding the phone, or the network, would do.

  /** The phone scans the current QR. `qr`, when given, must be the one showing now. */
  async scan(instancia: string, qr?: string): Promise<void> {
    const s = await this.session(instancia);
    if (!s || s.status !== 'need_scan') {
      throw new SimConflict(`no QR is showing for ${instancia}: request one first (celular qr)`);
    }
    if (qr !== undefined && qr !== this.qrFor(s)) throw new SimConflict('that QR has expired: scan the current one');
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
    this.emit({ type: 'inbound', instancia, de, tipo: 'texto', texto, media: null, gatewayMsgId, at: this.clock.now() });
    return { gatewayMsgId };
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
