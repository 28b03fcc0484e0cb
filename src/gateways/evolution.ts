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
import { classifyEvolution, CONNECTION_TROUBLE, evolutionMessage } from './evolution-failure.js';
import { eventName, evolutionEvents } from './evolution-inbound.js';
import { evolutionSend } from './evolution-send.js';
import { GatewayEvents, inboundJson } from './gateway-events.js';
import { describeBody, GatewayHttp, obj, ok, scrub, str, type Json, type JsonReply } from './http-json.js';
import { header, instanceSecret, sameSecret } from './inbound-secret.js';
import type { HttpGatewayOptions } from './index.js';
import { profileOf } from './profile.js';

/**
 * The Evolution API v2 adapter (contract: shared/research/evolution-api-contract.md).
 * It translates between the Gateway port and Evolution's HTTP API, classifies
 * its refusals (evolution-failure.ts) and maps its webhooks (evolution-inbound.ts);
 * every business rule stays in the core. Always called with the global key.
 */
export interface EvolutionTuning {
  /** Pause before asking `connect` again when it answered without a QR (issues #2385, #1541). */
  qrRetryPauseMs: number;
}

/** Events each instance reports to pasarela. */
export const EVOLUTION_EVENTS = ['MESSAGES_UPSERT', 'MESSAGES_UPDATE', 'CONNECTION_UPDATE', 'QRCODE_UPDATED', 'LOGOUT_INSTANCE', 'REMOVE_INSTANCE'];
const QR_REASKS = 3;
/** Evolution sends every kind. */
export const EVOLUTION_CAPABILITIES: GatewayCapabilities = { unsupported: {} };

const seg = encodeURIComponent;

export class EvolutionGateway implements Gateway {
  readonly name = 'evolution';
  readonly simulated = false;
  readonly capabilities = EVOLUTION_CAPABILITIES;
  private readonly http: GatewayHttp;
  private readonly events = new GatewayEvents();
  /** Restarts asked for by status(), awaited on close so none outlives the agent. */
  private readonly restarts = new Set<Promise<unknown>>();
  private readonly tuning: EvolutionTuning;

  // opts is read at each call, not copied: serve sets callbackUrl once it listens.
  constructor(
    private readonly opts: HttpGatewayOptions,
    tuning: Partial<EvolutionTuning> = {},
  ) {
    this.tuning = { qrRetryPauseMs: 250, ...tuning };
    this.http = new GatewayHttp({ name: 'evolution', baseUrl: opts.url, headers: { apikey: opts.key }, timeoutMs: opts.timeoutMs });
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    await Promise.all(this.restarts);
    await this.http.close();
  }

  onEvent(listener: (event: GatewayEvent) => Promise<void> | void): void {
    this.events.on(listener);
  }

  private fail(r: JsonReply, instancia: string, ...redact: Array<string | undefined>): GatewayFailure {
    return classifyEvolution(r, {
      instancia,
      redact: [this.opts.key, this.opts.secret, ...redact.filter((s): s is string => !!s)],
      now: this.opts.clock.now(),
    });
  }

  private scrub(text: string): string {
    return scrub(text, [this.opts.key, this.opts.secret]);
  }

  private webhook(instancia: string) {
    return {
      enabled: true,
      url: `${this.opts.callbackUrl}/gateway/evolution/${seg(instancia)}`,
      headers: { 'x-pasarela-secret': instanceSecret(this.opts.secret, 'evolution', instancia) },
      byEvents: false,
      base64: false,
      events: EVOLUTION_EVENTS,
    };
  }

  async ensureInstance(instancia: string, spec: InstanceSpec): Promise<void> {
    const r = await this.http.call('POST', '/instance/create', {
      json: {
        instanceName: instancia,
        integration: 'WHATSAPP-BAILEYS',
        qrcode: false,
        ...(spec.token ? { token: spec.token } : {}),
        webhook: this.webhook(instancia),
      },
    });
    if (ok(r)) return;
    if (!(r.status === 403 && /already in use/i.test(evolutionMessage(r.body)))) throw this.fail(r, instancia, spec.token);
    // Adopt it, re-pointing its webhook (the callback URL or the secret may have changed).
    const w = await this.http.call('POST', `/webhook/set/${seg(instancia)}`, { json: { webhook: this.webhook(instancia) } });
    if (!ok(w)) throw this.fail(w, instancia);
  }

  /** A call on an instance that is created first when Evolution does not know it (it was down when the line was made). */
  private async onInstance(instancia: string, numero: string, call: () => Promise<JsonReply>): Promise<JsonReply> {
    const r = await call();
    if (r.status !== 404) return r;
    await this.ensureInstance(instancia, { numero });
    return call();
  }

  /**
   * `connect`, asked again while it answers with neither a code nor `open`:
   * right after the socket starts Evolution may have no QR yet (`{count:0}`).
   */
  private async connectAnswer(instancia: string, numero: string, query: Record<string, string> | undefined, has: (b: Json) => boolean): Promise<Json> {
    for (let attempt = 0; ; attempt++) {
      const r = await this.onInstance(instancia, numero, () => this.http.call('GET', `/instance/connect/${seg(instancia)}`, { query }));
      if (!ok(r)) throw this.fail(r, instancia);
      const b = obj(r.body);
      // connect catches its own errors and answers 200 {error:true, message}.
      if (b.error === true) throw new GatewayFailure(`Evolution could not connect ${instancia}: ${this.scrub(describeBody(b.message ?? b, 200))}`, 'transient');
      if (has(b) || obj(b.instance).state === 'open' || attempt >= QR_REASKS) return b;
      if (this.tuning.qrRetryPauseMs > 0) await new Promise((res) => setTimeout(res, this.tuning.qrRetryPauseMs));
    }
  }

  async connect(instancia: string, numero: string): Promise<QrResult> {
    const b = await this.connectAnswer(instancia, numero, undefined, (x) => !!str(x.code));
    if (str(b.code)) return { status: 'need_scan', qr: b.code as string };
    if (obj(b.instance).state === 'open') return { status: 'connected', qr: '' };
    return { status: 'connecting', qr: '' };
  }

  /**
   * Evolution asks WhatsApp for a pairing code only when a socket starts with
   * a number; while one is `connecting` it answers the current QR and ignores
   * `number`. A QR without a code is therefore a socket started for a QR (the
   * line showed one): it is closed (logout is accepted while connecting) and
   * started again with the number.
   */
  async pairingCode(instancia: string, numero: string): Promise<PairingResult> {
    const number = numero.replace(/\D/g, '');
    const hasCode = (x: Json) => !!str(x.pairingCode);
    let b = await this.connectAnswer(instancia, numero, { number }, (x) => hasCode(x) || !!str(x.code));
    if (!hasCode(b) && str(b.code)) {
      await this.closePendingLink(instancia);
      b = await this.connectAnswer(instancia, numero, { number }, hasCode);
    }
    if (hasCode(b)) return { status: 'need_scan', code: b.pairingCode as string };
    if (obj(b.instance).state === 'open') return { status: 'connected', code: '' };
    throw new GatewayFailure(`Evolution gave no pairing code for ${instancia} yet`, 'transient');
  }

  /** Logs out a socket still waiting for its QR, then waits (briefly) until Evolution reports it closed. */
  private async closePendingLink(instancia: string): Promise<void> {
    await this.logout(instancia);
    for (let attempt = 0; attempt < QR_REASKS; attempt++) {
      // Evolution answers the logout before its socket has ended.
      const r = await this.http.call('GET', `/instance/connectionState/${seg(instancia)}`);
      if (!ok(r) || obj(obj(r.body).instance).state !== 'connecting') return;
      if (this.tuning.qrRetryPauseMs > 0) await new Promise((res) => setTimeout(res, this.tuning.qrRetryPauseMs));
    }
  }

  async status(instancia: string, opts: { act?: boolean } = {}): Promise<SessionStatus> {
    const r = await this.http.call('GET', `/instance/connectionState/${seg(instancia)}`);
    if (r.status === 404) return 'logged_out';
    if (!ok(r)) throw this.fail(r, instancia);
    const state = obj(obj(r.body).instance).state;
    if (state === 'connecting') return 'connecting';
    // Evolution reconnects by itself from every close but the terminal ones (logout, forbidden).
    if (state === 'close') return 'logged_out';
    if (state !== 'open') return 'disconnected';
    return this.verifyOpen(instancia, opts.act !== false);
  }

  /**
   * `open` is not proof of life (issues #1398, #2403): a presence update needs
   * the live socket. `unavailable` is the idle presence, so the probe changes nothing.
   */
  private async verifyOpen(instancia: string, act: boolean): Promise<SessionStatus> {
    const p = await this.http.call('POST', `/instance/setPresence/${seg(instancia)}`, { json: { presence: 'unavailable' } });
    if (ok(p)) return 'connected';
    if (p.status === 404) return 'logged_out';
    if (!CONNECTION_TROUBLE.test(evolutionMessage(p.body))) throw this.fail(p, instancia);
    if (!act) return 'connecting';
    const restart = this.http.call('POST', `/instance/restart/${seg(instancia)}`).catch(() => undefined);
    this.restarts.add(restart);
    void restart.finally(() => this.restarts.delete(restart));
    return 'connecting';
  }

  async logout(instancia: string): Promise<void> {
    const r = await this.http.call('DELETE', `/instance/logout/${seg(instancia)}`);
    if (ok(r) || r.status === 404 || (r.status === 400 && /not connected/i.test(evolutionMessage(r.body)))) return;
    throw this.fail(r, instancia);
  }

  /**
   * `POST /instance/restart`: Evolution ends the socket and connects again
   * with the kept credentials, answering the connection state or, unlinked, a
   * QR. A closed instance cannot be restarted: it answers 200 `{error:true}`
   * ("is not connected"), or 400 in some versions: the session is gone.
   */
  async restart(instancia: string): Promise<SessionStatus> {
    const r = await this.http.call('POST', `/instance/restart/${seg(instancia)}`);
    const gone = (m: string) => /not connected|does not exist/i.test(m);
    if (r.status === 404 || (r.status === 400 && gone(evolutionMessage(r.body)))) return 'logged_out';
    if (!ok(r)) throw this.fail(r, instancia);
    const b = obj(r.body);
    if (b.error === true) {
      const m = describeBody(b.message ?? b, 200);
      if (gone(m)) return 'logged_out';
      throw new GatewayFailure(`Evolution could not restart ${instancia}: ${this.scrub(m)}`, 'transient');
    }
    return str(b.code) ? 'need_scan' : 'connecting';
  }

  /** `fetchInstances` names the phone (`profileName`) and its number (`ownerJid`) once linked. */
  async profile(instancia: string): Promise<SessionProfile | null> {
    const r = await this.http.call('GET', '/instance/fetchInstances', { query: { instanceName: instancia } });
    if (r.status === 404) return null;
    if (!ok(r)) throw this.fail(r, instancia);
    const rows: unknown[] = Array.isArray(r.body) ? r.body : [];
    const row = rows.map(obj).find((x) => x.name === instancia || obj(x.instance).instanceName === instancia);
    if (!row) return null;
    // v2 rows are flat; v1 nested them under `instance` (owner, profileName).
    const flat = row.name === instancia ? row : obj(row.instance);
    return profileOf(flat.profileName, flat.ownerJid ?? flat.owner);
  }

  async deleteInstance(instancia: string): Promise<void> {
    const r = await this.http.call('DELETE', `/instance/delete/${seg(instancia)}`);
    if (ok(r) || r.status === 404) return;
    throw this.fail(r, instancia);
  }

  async send(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    return this.opts.media ? this.opts.media.withBytes(msg, (m) => this.sendNow(instancia, m)) : this.sendNow(instancia, msg);
  }

  private async sendNow(instancia: string, msg: OutboundMessage): Promise<{ gatewayMsgId: string }> {
    const { route, body } = await evolutionSend(msg);
    const r = await this.http.call('POST', `/message/${route}/${seg(instancia)}`, { json: body, timeoutMs: this.opts.sendTimeoutMs });
    if (!ok(r)) throw this.fail(r, instancia);
    const id = str(obj(obj(r.body).key).id);
    // Sent or not, we cannot tell: retried like any unknown answer.
    if (!id) throw new GatewayFailure(`Evolution answered ${r.status} without a message id: ${describeBody(r.body, 120)}`, 'transient', undefined, true);
    return { gatewayMsgId: id };
  }

  async handleInbound(call: InboundCall): Promise<{ eventos: number }> {
    const { instancia } = call;
    if (!sameSecret(header(call.headers, 'x-pasarela-secret'), instanceSecret(this.opts.secret, 'evolution', instancia))) {
      throw new InboundRefused(401, 'missing or wrong x-pasarela-secret for this instance');
    }
    const body = obj(inboundJson(call));
    // With "webhook by events" the event is also the path suffix (`/messages-upsert`).
    const raw = str(body.event) ?? (call.subpath ? call.subpath : undefined);
    if (!raw) throw new InboundRefused(400, 'the body has no event');
    if (body.instance != null && body.instance !== instancia)
      throw new InboundRefused(400, `the body is for instance ${describeBody(body.instance, 80)}, not ${instancia}`);
    return { eventos: await this.events.emitAll(evolutionEvents(instancia, eventName(raw), body.data, this.opts.clock.now())) };
  }
}
