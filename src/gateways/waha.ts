import { setTimeout as sleep } from 'node:timers/promises';
import {
  GatewayFailure,
  InboundRefused,
  type Gateway,
  type GatewayCapabilities,
  type GatewayEvent,
  type InboundCall,
  type InstanceSpec,
  type OutboundMessage,
  type PairingResult,
  type QrResult,
  type SessionProfile,
} from '../core/ports/gateway.js';
import type { SessionStatus } from '../core/ports/model.js';
import { GatewayEvents, inboundJson } from './gateway-events.js';
import { describeBody, GatewayHttp, obj, ok, str, type Json, type JsonReply } from './http-json.js';
import { instanceSecret } from './inbound-secret.js';
import type { HttpGatewayOptions } from './index.js';
import { profileOf } from './profile.js';
import { classifyWaha } from './waha-failure.js';
import { sentMessageId } from './waha-ids.js';
import { authenticWahaCall, wahaEvents } from './waha-inbound.js';
import { STICKER_UNSUPPORTED, wahaSend } from './waha-send.js';

/**
 * The WAHA adapter (contract: shared/research/evolution-api-contract.md §5).
 * It translates between the Gateway port and WAHA's HTTP API, classifies its
 * refusals (waha-failure.ts), builds sends (waha-send.ts) and maps its
 * webhooks (waha-inbound.ts); every business rule stays in the core.
 */
export interface WahaTuning {
  /** Pause between reads of a STARTING session while waiting for its QR. */
  pollPauseMs: number;
  /** Reads of a STARTING session before answering `connecting`. */
  polls: number;
}

export const WAHA_EVENTS = ['message', 'message.ack', 'session.status'];
export const WAHA_CAPABILITIES: GatewayCapabilities = { unsupported: { sticker: STICKER_UNSUPPORTED } };

const seg = encodeURIComponent;

export class WahaGateway implements Gateway {
  readonly name = 'waha';
  readonly simulated = false;
  readonly capabilities = WAHA_CAPABILITIES;
  private readonly http: GatewayHttp;
  private readonly events = new GatewayEvents();
  /**
   * Sessions a send found not WORKING (422) since they were last confirmed:
   * WAHA may go on reporting a dead session as WORKING (issues #2073, #137),
   * so status() checks `/me` for these before answering `connected`.
   */
  private readonly suspect = new Set<string>();
  private readonly tuning: WahaTuning;

  // opts is read at each call, not copied: serve sets callbackUrl once it listens.
  constructor(
    private readonly opts: HttpGatewayOptions,
    tuning: Partial<WahaTuning> = {},
  ) {
    this.tuning = { pollPauseMs: 250, polls: 8, ...tuning };
    this.http = new GatewayHttp({ name: 'waha', baseUrl: opts.url, headers: { 'x-api-key': opts.key }, timeoutMs: opts.timeoutMs });
  }

  async start(): Promise<void> {}

  close(): Promise<void> {
    return this.http.close();
  }

  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void {
    this.events.on(listener);
  }

  private fail(r: JsonReply, instancia: string, numero?: string): GatewayFailure {
    const redact = [this.opts.key, this.opts.secret, instanceSecret(this.opts.secret, 'waha', instancia)];
    return classifyWaha(r, { instancia, numero, redact, now: this.opts.clock.now() });
  }

  /** Where and how the session reports to pasarela (contract 5.5). */
  private webhook(instancia: string) {
    const secret = instanceSecret(this.opts.secret, 'waha', instancia);
    return {
      url: `${this.opts.callbackUrl}/gateway/waha/${seg(instancia)}`,
      events: WAHA_EVENTS,
      hmac: { key: secret },
      // The fallback where HMAC is not available (a paid feature in 2024 builds).
      customHeaders: [{ name: 'X-Pasarela-Secret', value: secret }],
    };
  }

  private session(instancia: string): Promise<JsonReply> {
    return this.http.call('GET', `/api/sessions/${seg(instancia)}`);
  }

  // The spec is not needed: WAHA takes no per-session token, and the number only matters for pairing.
  async ensureInstance(instancia: string, _spec?: InstanceSpec): Promise<void> {
    const hook = this.webhook(instancia);
    const r = await this.http.call('POST', '/api/sessions', { json: { name: instancia, start: false, config: { webhooks: [hook] } } });
    if (ok(r)) return;
    if (r.status !== 422) throw this.fail(r, instancia);
    // It exists: adopt it. A PUT restarts a running session, so only when our webhook is missing.
    const g = await this.session(instancia);
    if (!ok(g)) throw this.fail(g, instancia);
    const config = obj(obj(g.body).config);
    const others: unknown[] = Array.isArray(config.webhooks) ? config.webhooks : [];
    if (others.some((w) => obj(w).url === hook.url)) return;
    const p = await this.http.call('PUT', `/api/sessions/${seg(instancia)}`, { json: { config: { ...config, webhooks: [...others, hook] } } });
    if (!ok(p)) throw this.fail(p, instancia);
  }

  /** The session, created if WAHA does not know it, started if stopped, read until it leaves STARTING (or we give up). */
  private async running(instancia: string): Promise<Json> {
    let r = await this.session(instancia);
    if (r.status === 404) {
      await this.ensureInstance(instancia);
      r = await this.session(instancia);
    }
    if (!ok(r)) throw this.fail(r, instancia);
    let info = obj(r.body);
    if (info.status === 'STOPPED' || info.status === 'FAILED') {
      const s = await this.http.call('POST', `/api/sessions/${seg(instancia)}/start`);
      if (!ok(s)) throw this.fail(s, instancia);
      info = { status: 'STARTING', ...obj(s.body) };
    }
    for (let i = 0; info.status === 'STARTING' && i < this.tuning.polls; i++) {
      if (this.tuning.pollPauseMs > 0) await sleep(this.tuning.pollPauseMs);
      const g = await this.session(instancia);
      if (!ok(g)) throw this.fail(g, instancia);
      info = obj(g.body);
    }
    return info;
  }

  async connect(instancia: string, _numero: string): Promise<QrResult> {
    const info = await this.running(instancia);
    if (info.status !== 'SCAN_QR_CODE') return { status: await this.judge(instancia, info), qr: '' };
    const r = await this.http.call('GET', `/api/${seg(instancia)}/auth/qr`, { query: { format: 'raw' } });
    const value = ok(r) ? str(obj(r.body).value) : undefined;
    if (value) return { status: 'need_scan', qr: value };
    if (!ok(r) && r.status !== 422) throw this.fail(r, instancia);
    // 422: it left SCAN_QR_CODE meanwhile (scanned, or restarting): say what it is now.
    return { status: await this.status(instancia), qr: '' };
  }

  async pairingCode(instancia: string, numero: string): Promise<PairingResult> {
    const info = await this.running(instancia);
    if (info.status !== 'SCAN_QR_CODE') return { status: await this.judge(instancia, info), code: '' };
    const r = await this.http.call('POST', `/api/${seg(instancia)}/auth/request-code`, { json: { phoneNumber: numero.replace(/\D/g, '') } });
    const code = ok(r) ? str(obj(r.body).code) : undefined;
    if (code) return { status: 'need_scan', code };
    if (!ok(r) && r.status !== 422) throw this.fail(r, instancia);
    return { status: await this.status(instancia), code: '' };
  }

  async status(instancia: string): Promise<SessionStatus> {
    const r = await this.session(instancia);
    if (r.status === 404) return 'logged_out';
    if (!ok(r)) throw this.fail(r, instancia);
    return this.judge(instancia, obj(r.body));
  }

  /** Our status for a session as WAHA describes it, verifying a WORKING that may be false. */
  private async judge(instancia: string, info: Json): Promise<SessionStatus> {
    switch (info.status) {
      case 'SCAN_QR_CODE':
        return 'need_scan';
      case 'STARTING':
        return 'connecting';
      case 'STOPPED':
      case 'FAILED':
        return 'disconnected';
      case 'WORKING':
        break;
      default:
        return 'unknown';
    }
    // WORKING without `me` is a session still logging in, or one whose socket died (#2073/#137).
    if (!str(obj(info.me).id)) return 'connecting';
    if (!this.suspect.has(instancia)) return 'connected';
    const m = await this.http.call('GET', `/api/sessions/${seg(instancia)}/me`);
    if (ok(m) && str(obj(m.body).id)) {
      this.suspect.delete(instancia);
      return 'connected';
    }
    if (!ok(m) && m.status !== 404 && m.status !== 422) throw this.fail(m, instancia);
    return 'connecting';
  }

  async logout(instancia: string): Promise<void> {
    const r = await this.http.call('POST', `/api/sessions/${seg(instancia)}/logout`);
    if (!ok(r) && r.status !== 404) throw this.fail(r, instancia);
    this.suspect.delete(instancia);
  }

  /** `POST /api/sessions/{session}/restart` (201, the session as it stands); a session WAHA does not know is `logged_out`. */
  async restart(instancia: string): Promise<SessionStatus> {
    const r = await this.http.call('POST', `/api/sessions/${seg(instancia)}/restart`);
    if (r.status === 404) return 'logged_out';
    if (!ok(r)) throw this.fail(r, instancia);
    this.suspect.delete(instancia);
    switch (obj(r.body).status) {
      case 'SCAN_QR_CODE':
        return 'need_scan';
      case 'STOPPED':
      case 'FAILED':
        return 'disconnected';
      default:
        // STARTING, or WORKING before the restart took: its session events say when it is back.
        return 'connecting';
    }
  }

  /** `GET /api/sessions/{session}/me`: `{id, pushName}` of the linked phone, null without a link. */
  async profile(instancia: string): Promise<SessionProfile | null> {
    const r = await this.http.call('GET', `/api/sessions/${seg(instancia)}/me`);
    if (r.status === 404 || r.status === 422) return null;
    if (!ok(r)) throw this.fail(r, instancia);
    const me = obj(r.body);
    return profileOf(me.pushName, me.id);
  }

  async deleteInstance(instancia: string): Promise<void> {
    const r = await this.http.call('DELETE', `/api/sessions/${seg(instancia)}`);
    if (!ok(r) && r.status !== 404) throw this.fail(r, instancia);
    this.suspect.delete(instancia);
  }

  async send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    // Stickers are refused before anything is fetched.
    if (msg.tipo === 'sticker' || !this.opts.media) return this.sendNow(instancia, msg);
    return this.opts.media.withBytes(msg, (m) => this.sendNow(instancia, m));
  }

  private async sendNow(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    const req = await wahaSend(instancia, msg);
    const r = await this.http.call('POST', `/api/${req.route}`, { json: req.body, timeoutMs: this.opts.sendTimeoutMs });
    if (!ok(r)) {
      if (r.status === 422) this.suspect.add(instancia);
      throw this.fail(r, instancia, msg.destinatario);
    }
    const id = sentMessageId(r.body);
    // Accepted but unreadable: a retry could send it twice, so it is not retried (permanent), and it may have gone (mayHaveSent).
    if (!id) throw new GatewayFailure(`WAHA accepted the send but answered no message id: ${describeBody(r.body, 120)}`, 'permanent', undefined, true);
    this.suspect.delete(instancia);
    return { gatewayMsgId: id };
  }

  async handleInbound(call: InboundCall): Promise<{ eventos: number }> {
    if (!authenticWahaCall(call, instanceSecret(this.opts.secret, 'waha', call.instancia))) {
      throw new InboundRefused(401, 'missing or wrong webhook signature');
    }
    const envelope = obj(inboundJson(call));
    if (envelope.session !== call.instancia) throw new InboundRefused(400, 'the session in the body is not the instance in the path');
    // One at a time, in order: WAHA is answered only once all are durable.
    return { eventos: await this.events.emitAll(wahaEvents(call.instancia, envelope, this.opts.clock.now())) };
  }
}
