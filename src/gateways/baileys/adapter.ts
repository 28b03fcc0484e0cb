import type { Agent } from 'node:https';
import type { Backoff } from '../../core/time/backoff.js';
import type { Clock } from '../../core/time/clock.js';
import {
  GatewayFailure,
  type Gateway,
  type GatewayCapabilities,
  type GatewayEvent,
  type OutboundMessage,
  type PairingResult,
  type QrResult,
  type SessionProfile,
} from '../../core/ports/gateway.js';
import type { SessionStatus } from '../../core/ports/model.js';
import type { FenceSource, HoldFence } from '../../core/ports/engine-holds.js';
import { GatewayEvents } from '../gateway-events.js';
import type { MediaFetcher } from '../media-fetch.js';
import type { EngineAuthSource } from './auth.js';
import { within } from './deadline.js';
import { loadBaileys, type BaileysLib } from './library.js';
import { EngineLine } from './line.js';
import { silentLog, type EngineLog } from './logger.js';
import { signalConsoleLog } from './signal-console.js';
import { contentOf, jidOf, networkIdOf } from './outbound.js';

export interface BaileysOptions {
  auth: EngineAuthSource;
  clock: Clock;
  /** `--baileys-ws-url`: absent, the network's own. */
  wsUrl?: string;
  /** In-process tests: the CA of a test network's media server. */
  ca?: string;
  /** Deadline of a management call (QR, pairing code, logout). */
  timeoutMs: number;
  /** Deadline of a send, upload included. */
  sendTimeoutMs: number;
  keepAliveMs?: number;
  reconnect?: Backoff;
  random?: () => number;
  log?: EngineLog;
  /** Fetches media URLs so Baileys gets a local file (it would otherwise fetch them itself). */
  media?: MediaFetcher;
  /** A shared store: a line's socket opens only while this node holds it (core/engine/engine-keeper.ts). */
  requireFence?: boolean;
  /** Metrics hooks. */
  onStatus?: (instancia: string, status: SessionStatus) => void;
  onReconnect?: (instancia: string) => void;
}

export const BAILEYS_CAPABILITIES: GatewayCapabilities = { unsupported: {} };

/** A lost connection is tried again after 1 s, 2 s, 4 s... up to a minute, and then every minute. */
const RECONNECT: Backoff = { baseMs: 1000, factors: [1, 2, 4, 8, 16, 32, 60], past: 'repeat' };
/** How long a recipient's presence on the network is remembered (one usync query per recipient, not per send). */
const ON_NETWORK_MS = 10 * 60_000;

/**
 * pasarela's own engine (`--gateway baileys`, DESIGN §13): each linked line's
 * socket in this process, over the Baileys library. It reports sessions,
 * receipts and inbound messages as the HTTP-fed adapters do, so the core and
 * the clients cannot tell it apart.
 */
export class BaileysGateway implements Gateway {
  readonly name = 'baileys';
  readonly simulated = false;
  readonly capabilities = BAILEYS_CAPABILITIES;
  private readonly events = new GatewayEvents();
  private readonly lines = new Map<string, EngineLine>();
  /** The lines this node holds (core/engine/engine-holds.ts), with the token each write of their state carries. */
  private readonly fences = new Map<string, HoldFence>();
  private readonly lastFences = new Map<string, HoldFence>();
  private readonly onNetwork = new Map<string, number>();
  /** The pairing code asked on a line's current socket: the same one is answered until that socket ends (as the other gateways do). */
  private readonly codes = new WeakMap<object, string>();
  private lib: BaileysLib | undefined;
  private agent: Agent | undefined;
  private closed = false;

  constructor(private readonly opts: BaileysOptions) {}

  private async library(): Promise<BaileysLib> {
    if (this.lib) return this.lib;
    const lib = await loadBaileys();
    signalConsoleLog(this.opts.log ?? silentLog);
    if (this.opts.ca) {
      const { Agent } = await import('node:https');
      this.agent = new Agent({ ca: this.opts.ca, keepAlive: true });
    }
    this.lib = lib;
    return lib;
  }

  private async line(instancia: string): Promise<EngineLine> {
    if (this.closed) throw new GatewayFailure('the engine is stopping', 'transient');
    let line = this.lines.get(instancia);
    if (line) return line;
    // On a shared store a socket opens only under a hold: a call that lost the race with a release makes none.
    if (this.opts.requireFence && !this.fences.has(instancia))
      throw new GatewayFailure(`this node does not hold the session of ${instancia} now: try again in a moment`, 'transient');
    const lib = await this.library();
    line = this.lines.get(instancia);
    if (line) return line;
    const fence: FenceSource = {
      // After a release the last token still rides on the writes in flight: refused once another node took the line.
      current: () => this.fences.get(instancia) ?? this.lastFences.get(instancia),
      lost: () => {
        this.opts.log?.warn({ instancia }, 'engine: another node holds this line now; its socket here ends');
        void this.release(instancia);
      },
    };
    line = new EngineLine(instancia, {
      fence,
      lib,
      auth: this.opts.auth,
      clock: this.opts.clock,
      log: this.opts.log ?? silentLog,
      wsUrl: this.opts.wsUrl,
      fetchAgent: this.agent,
      keepAliveMs: this.opts.keepAliveMs ?? 25_000,
      connectTimeoutMs: this.opts.timeoutMs,
      queryTimeoutMs: this.opts.timeoutMs,
      reconnect: this.opts.reconnect ?? RECONNECT,
      random: this.opts.random ?? Math.random,
      emit: (e) => this.events.emit(e),
      onStatus: this.opts.onStatus,
      onReconnect: this.opts.onReconnect,
    });
    this.lines.set(instancia, line);
    return line;
  }

  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void {
    this.events.on(listener);
  }

  /** Nothing opens by itself: the engine's keeper (core/engine/engine-keeper.ts) hands it the lines this node holds. */
  async start(): Promise<void> {}

  /**
   * This node holds the line now (its session taken, or its token raised):
   * its socket opens from the stored state when the line is linked. A state
   * that does not open (another key file, an altered row) turns the line to
   * need_scan and is logged (its name and why, no secret).
   */
  async hold(instancia: string, fence: HoldFence): Promise<void> {
    this.fences.set(instancia, fence);
    this.lastFences.set(instancia, fence);
    const log = this.opts.log ?? silentLog;
    let line: EngineLine;
    try {
      line = await this.line(instancia);
    } catch {
      return; // released meanwhile, or the engine stopping
    }
    // Released meanwhile (a failed beat, a lost write): nothing opens.
    const still = () => this.fences.get(instancia) === fence && this.lines.get(instancia) === line;
    if (!still()) return;
    try {
      if ((await line.linked()) && still()) await line.open();
      else if (line.unreadable !== null) log.warn({ instancia }, `engine: ${line.unreadable}`);
      else if (!line.sock) line.status = 'disconnected';
    } catch (err) {
      log.error({ instancia, err: err instanceof Error ? err.message : String(err) }, 'engine: the line could not start; the others do');
    }
  }

  /** The line is no longer this node's: its socket ends (no logout: the state stays for the next holder). */
  async release(instancia: string): Promise<void> {
    this.fences.delete(instancia);
    const line = this.lines.get(instancia);
    this.lines.delete(instancia);
    await line?.dispose();
  }

  /** Whether this node may run the line's socket. */
  holding(instancia: string): boolean {
    return this.fences.has(instancia);
  }

  /** The lines whose socket this node may run. */
  held(): string[] {
    return [...this.fences.keys()];
  }

  /** A link in progress (a QR showing, a code asked): the line does not move to balance the nodes now. */
  linking(instancia: string): boolean {
    const line = this.lines.get(instancia);
    return line !== undefined && !line.registered && line.sock !== null;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.lines.values()].map((l) => l.stop()));
    this.agent?.destroy();
  }

  /** Nothing to create ahead: a line's state is made on its first link attempt. */
  async ensureInstance(): Promise<void> {}

  /** The QR showing now, once the socket has one (Baileys rotates it; each call gives the current one). */
  async connect(instancia: string, _numero: string, opts?: { repair?: boolean }): Promise<QrResult> {
    const line = await this.line(instancia);
    if (line.status === 'connected') return { status: 'connected', qr: '' };
    // Taking the session back from the client that replaced it is the operator's act (restart, link), never the health pass's.
    if (opts?.repair && line.heldElsewhere) return { status: line.status, qr: '' };
    await line.open();
    // A linked line coming back never shows a QR: say so at once (D-133). Waiting for it to connect could take the
    // reconnect's backoff (up to a minute), past the deadline of the client polling for the QR; its next poll sees it.
    if (line.registered) return { status: 'connecting', qr: '' };
    const sock = line.sock;
    // A socket the network closed (unreachable) shows no QR: the answer comes then, not at the deadline (D-133).
    await line.until(() => line.qr !== null || line.status === 'connected' || line.sock !== sock, this.opts.timeoutMs);
    if ((line.status as SessionStatus) === 'connected') return { status: 'connected', qr: '' };
    if (line.qr) return { status: 'need_scan', qr: line.qr };
    // Linked meanwhile (the scan's restart): it comes back without a QR.
    if (line.registered) return { status: 'connecting', qr: '' };
    if (line.sock !== sock) throw new GatewayFailure('the network closed the connection before it showed a QR', 'transient');
    throw new GatewayFailure(`no QR from the network within ${this.opts.timeoutMs} ms`, 'transient');
  }

  async pairingCode(instancia: string, numero: string): Promise<PairingResult> {
    const line = await this.line(instancia);
    if (line.status === 'connected') return { status: 'connected', code: '' };
    await line.open();
    // The socket can ask for a code once the network has greeted it (its first QR).
    await line.until(() => line.qr !== null || line.status === 'connected', this.opts.timeoutMs);
    if ((line.status as SessionStatus) === 'connected') return { status: 'connected', code: '' };
    if (!line.sock || !line.qr) throw new GatewayFailure(`the network did not answer within ${this.opts.timeoutMs} ms`, 'transient');
    const sock = line.sock;
    const known = this.codes.get(sock);
    if (known) return { status: 'need_scan', code: known };
    const raw = await within(this.opts.timeoutMs, 'pairing code', sock.requestPairingCode(numero.replace(/\D/g, '')));
    const plain = raw.replace(/[^A-Za-z0-9]/g, '').toUpperCase();
    const code = plain.length === 8 ? `${plain.slice(0, 4)}-${plain.slice(4)}` : plain;
    this.codes.set(sock, code);
    return { status: 'need_scan', code };
  }

  async status(instancia: string): Promise<SessionStatus> {
    return this.lines.get(instancia)?.status ?? 'unknown';
  }

  async logout(instancia: string): Promise<void> {
    const line = this.lines.get(instancia);
    this.lastFences.delete(instancia);
    // No socket here (nobody holds the line): its state goes all the same.
    if (!line) return this.opts.auth.drop(instancia);
    const sock = line.sock;
    // Tell the network to remove this device when it can hear us; the state is dropped either way.
    if (sock && line.status === 'connected') await within(this.opts.timeoutMs, 'logout', sock.logout()).catch(() => undefined);
    await line.unlink();
  }

  async restart(instancia: string): Promise<SessionStatus> {
    const line = await this.line(instancia);
    await line.stop();
    await line.open();
    if (!line.registered) {
      await line.until(() => line.qr !== null, this.opts.timeoutMs);
      return line.qr ? 'need_scan' : line.status;
    }
    return 'connecting';
  }

  async profile(instancia: string): Promise<SessionProfile | null> {
    const line = this.lines.get(instancia);
    const me = line?.status === 'connected' ? line.me : null;
    if (!me) return null;
    const numero = /^(\d+)/.exec(me.id)?.[1] ?? null;
    return { nombre: me.name ?? null, numero };
  }

  async deleteInstance(instancia: string): Promise<void> {
    await this.logout(instancia);
    this.lines.delete(instancia);
  }

  async send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    const line = this.lines.get(instancia);
    if (line?.status !== 'connected' || !line.sock) throw new GatewayFailure(`session ${instancia} is not connected`, 'transient');
    const { sock, acks } = line;
    const jid = jidOf(msg.destinatario);
    await this.assertOnNetwork(instancia, sock, jid);
    const go = async (m: OutboundMessage) => {
      const content = await contentOf(m);
      const messageId = networkIdOf(m.msgId);
      // Sent once the network acknowledges the stanza, not once it is written (server-acks.ts); one deadline for both.
      const acked = acks.expect(messageId);
      acked.catch(() => undefined);
      try {
        const written = async () => {
          const r = await sock.sendMessage(jid, content, { messageId });
          await acked;
          return r;
        };
        const sent = await within(this.opts.sendTimeoutMs, 'send', written(), true);
        const id = sent?.key.id;
        if (!id) throw new GatewayFailure('the network took the message without an id', 'transient', undefined, true);
        return { gatewayMsgId: id };
      } finally {
        acks.forget(messageId);
      }
    };
    return this.opts.media ? this.opts.media.withBytes(msg, go) : go(msg);
  }

  /** A recipient not on the network is refused for good (the core's `rechazado`), as the other gateways' "not on WhatsApp". */
  private async assertOnNetwork(instancia: string, sock: NonNullable<EngineLine['sock']>, jid: string): Promise<void> {
    const key = `${instancia}\n${jid}`;
    const now = this.opts.clock.now();
    const known = this.onNetwork.get(key);
    if (known !== undefined && known > now) return;
    const answer = await within(this.opts.timeoutMs, 'number check', sock.onWhatsApp(jid));
    // No result at all (Baileys answers undefined for a usync reply that is not a result) says nothing of the number.
    if (answer === undefined) throw new GatewayFailure('number check: the network answered no result', 'transient');
    if (!answer.some((r) => r.exists)) throw new GatewayFailure(`the number ${jid.split('@')[0]} is not on WhatsApp`, 'permanent');
    if (this.onNetwork.size > 10_000) this.onNetwork.clear();
    this.onNetwork.set(key, now + ON_NETWORK_MS);
  }
}
