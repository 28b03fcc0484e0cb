import { createHmac } from 'node:crypto';
import type { GatewayEvent, InboundCall } from '../core/ports/gateway.js';
import type { ReceiptEstado, SessionStatus } from '../core/ports/model.js';
import { header, sameSecret } from './inbound-secret.js';
import { obj, str, type Json } from './http-json.js';
import { bareId } from './waha-ids.js';

/**
 * WAHA's webhooks (contract 5.5, 5.6), authenticated and mapped to gateway
 * events. Envelope: `{event, session, payload, id?, timestamp?, me, engine}`.
 */

/**
 * A call is authentic when `X-Webhook-Hmac` is the hex HMAC-SHA512 of the raw
 * body under the instance's secret, or when `X-Pasarela-Secret` is that secret:
 * HMAC was a paid feature in 2024 builds, where only custom headers reach us.
 */
export function authenticWahaCall(call: InboundCall, secret: string): boolean {
  const hmac = header(call.headers, 'x-webhook-hmac');
  if (hmac !== undefined) {
    const expected = createHmac('sha512', secret).update(call.rawBody).digest('hex');
    if (sameSecret(hmac.toLowerCase(), expected)) return true;
  }
  return sameSecret(header(call.headers, 'x-pasarela-secret'), secret);
}

const SESSION: Record<string, SessionStatus> = {
  SCAN_QR_CODE: 'need_scan',
  WORKING: 'connected',
  STARTING: 'connecting',
  STOPPED: 'disconnected',
  FAILED: 'disconnected',
};

/** Ack names and their numbers (contract 5.5); PENDING and SERVER say nothing the send's answer did not. */
const ACK_NAMES: Record<string, string> = { '-1': 'ERROR', '0': 'PENDING', '1': 'SERVER', '2': 'DEVICE', '3': 'READ', '4': 'PLAYED' };
const RECEIPT: Record<string, ReceiptEstado> = { DEVICE: 'entregado', READ: 'leido', PLAYED: 'leido', ERROR: 'error' };

/** Chats that are not a person writing to the line: groups, status updates, channels. */
const NOT_A_PERSON = /@g\.us$|^status@broadcast$|@newsletter$/;

/** Digits of a phone JID (`...@c.us`, `...@s.whatsapp.net`, device suffix dropped); any other JID (`@lid`) as is. */
function sender(jid: string): string {
  const m = /^(\d+)(?::\d+)?@(?:c\.us|s\.whatsapp\.net)$/.exec(jid);
  return m ? m[1]! : jid;
}

function tipoOf(mimetype: string | undefined): string {
  const m = (mimetype ?? '').toLowerCase();
  if (m.startsWith('image/webp')) return 'sticker';
  if (m.startsWith('image/')) return 'imagen';
  if (m.startsWith('video/')) return 'video';
  if (m.startsWith('audio/')) return 'audio';
  return 'documento';
}

function inbound(instancia: string, p: Json, now: number): GatewayEvent | null {
  const id = str(p.id);
  const from = str(p.from);
  if (!id || !from || p.fromMe === true || NOT_A_PERSON.test(from)) return null;
  const hasMedia = p.hasMedia === true;
  const m = obj(p.media);
  // Only what the gateway serves the file at: base64 never goes into events.
  const media = hasMedia
    ? { mime: str(m.mimetype) ?? null, ...(str(m.filename) ? { filename: m.filename } : {}), ...(str(m.url) ? { url: m.url } : {}) }
    : null;
  const body = typeof p.body === 'string' && (p.body !== '' || !hasMedia) ? p.body : null;
  return {
    type: 'inbound',
    instancia,
    de: sender(from),
    tipo: hasMedia ? tipoOf(str(m.mimetype)) : 'texto',
    texto: body,
    media,
    gatewayMsgId: bareId(id),
    at: typeof p.timestamp === 'number' && p.timestamp > 0 ? p.timestamp * 1000 : now,
    dedupeKey: `waha:${instancia}:${id}`,
  };
}

function receipt(instancia: string, p: Json, now: number): GatewayEvent | null {
  const id = str(p.id);
  const fromMe = typeof p.fromMe === 'boolean' ? p.fromMe : id?.startsWith('true_') === true;
  if (!id || !fromMe) return null;
  const name = str(p.ackName)?.toUpperCase() ?? (typeof p.ack === 'number' ? ACK_NAMES[String(p.ack)] : undefined);
  const estado = name ? RECEIPT[name] : undefined;
  if (!estado) return null;
  return {
    type: 'receipt',
    instancia,
    gatewayMsgId: bareId(id),
    estado,
    at: now,
    ...(estado === 'error' ? { error: 'WhatsApp reported the message as failed (ack ERROR)' } : {}),
  };
}

/** The events of one webhook call; unknown events and messages that are not for the line give none. */
export function wahaEvents(instancia: string, envelope: Json, now: number): GatewayEvent[] {
  const p = obj(envelope.payload);
  let e: GatewayEvent | null = null;
  if (envelope.event === 'message') e = inbound(instancia, p, now);
  else if (envelope.event === 'message.ack') e = receipt(instancia, p, now);
  else if (envelope.event === 'session.status') {
    const status = SESSION[str(p.status) ?? ''];
    if (status) e = { type: 'session', instancia, status, at: now };
  }
  return e ? [e] : [];
}
