import type { GatewayEvent } from '../core/ports/gateway.js';
import type { ReceiptEstado, SessionStatus } from '../core/ports/model.js';
import { obj, str, type Json } from './http-json.js';

/**
 * Evolution API webhook envelopes (contract 4.3, 4.4) as gateway events. Pure:
 * the caller authenticates the call and supplies the time. Only the fields
 * named here are read, so the envelope's `apikey` and any `base64` media
 * never travel further.
 */
/** Event name as Evolution spells it in bodies (`messages.upsert`), from any of its spellings (`MESSAGES_UPSERT`, `/messages-upsert`). */
export function eventName(raw: string): string {
  return raw.replace(/^\/+/, '').split('/')[0]!.toLowerCase().replace(/[_-]/g, '.');
}

/** Protobuf longs arrive as numbers, strings or `{low, high}`. */
function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  const o = obj(v);
  if (typeof o.low === 'number') return (o.low >>> 0) + (typeof o.high === 'number' ? o.high : 0) * 2 ** 32;
  return undefined;
}

/** The sender as pasarela names it: digits for a phone JID; a hidden-number `@lid` JID kept whole unless its phone JID came along. */
function sender(key: Json): string | null {
  const jid = str(key.remoteJid) ?? '';
  const phone = (j: string | undefined) => (j && /@(s\.whatsapp\.net|c\.us)$/.test(j) ? j.split('@')[0]!.split(':')[0]!.replace(/\D/g, '') : undefined);
  if (phone(jid)) return phone(jid)!;
  if (jid.endsWith('@lid')) return phone(str(key.remoteJidAlt)) ?? phone(str(key.senderPn)) ?? jid;
  // Groups (@g.us), status@broadcast, broadcast lists and channels are not a person writing to the line.
  return null;
}

const MEDIA_KINDS: Record<string, string> = {
  imageMessage: 'imagen',
  videoMessage: 'video',
  documentMessage: 'documento',
  audioMessage: 'audio',
  stickerMessage: 'sticker',
};

function content(message: Json, messageType: string): { tipo: string; texto: string | null; media: Record<string, unknown> | null } {
  if (messageType === 'conversation' || messageType === 'extendedTextMessage') {
    const text = str(message.conversation) ?? str(obj(message.extendedTextMessage).text) ?? '';
    return { tipo: 'texto', texto: text, media: null };
  }
  let type = messageType;
  let m = obj(message[messageType]);
  if (messageType === 'documentWithCaptionMessage') {
    type = 'documentMessage';
    m = obj(obj(m.message).documentMessage);
  }
  const tipo = MEDIA_KINDS[type];
  if (!tipo) return { tipo: 'otro', texto: null, media: null };
  const media: Record<string, unknown> = { mime: str(m.mimetype) ?? null };
  const filename = str(m.fileName);
  const bytes = num(m.fileLength);
  const url = str(message.mediaUrl);
  if (filename) media.filename = filename;
  if (bytes !== undefined) media.bytes = bytes;
  if (url && /^https?:\/\//i.test(url)) media.url = url;
  if (tipo === 'audio') media.ptt = m.ptt === true;
  return { tipo, texto: str(m.caption) ?? null, media };
}

const RECEIPTS: Record<string, ReceiptEstado> = { DELIVERY_ACK: 'entregado', READ: 'leido', PLAYED: 'leido', ERROR: 'error' };
/** Baileys' numeric statuses, for builds that forward them unnamed. */
const NUMERIC_STATUS = ['ERROR', 'PENDING', 'SERVER_ACK', 'DELIVERY_ACK', 'READ', 'PLAYED'];

function receipt(instancia: string, d: Json, now: number): GatewayEvent | null {
  if (d.fromMe === false) return null; // Our reads of their messages.
  const raw = typeof d.status === 'number' ? NUMERIC_STATUS[d.status] : str(d.status);
  const estado = raw ? RECEIPTS[raw] : undefined;
  const id = str(d.keyId) ?? str(obj(d.key).id);
  if (!estado || !id) return null;
  const error = estado === 'error' ? { error: 'the network reported the message as failed' } : {};
  return { type: 'receipt', instancia, gatewayMsgId: id, estado, at: now, ...error };
}

function inbound(instancia: string, d: Json, now: number): GatewayEvent | null {
  const key = obj(d.key);
  const id = str(key.id);
  if (key.fromMe === true || !id) return null;
  const de = sender(key);
  if (!de) return null;
  const { tipo, texto, media } = content(obj(d.message), str(d.messageType) ?? '');
  const ts = num(d.messageTimestamp);
  return { type: 'inbound', instancia, de, tipo, texto, media, gatewayMsgId: id, at: ts ? ts * 1000 : now, dedupeKey: `evolution:${instancia}:${id}` };
}

function connection(d: Json): SessionStatus | null {
  switch (d.state) {
    case 'open':
      return 'connected';
    case 'connecting':
      return 'connecting';
    // Evolution reconnects by itself from every close but the terminal ones; 401 is the phone removing the device.
    case 'close':
      return num(d.statusReason) === 401 ? 'logged_out' : 'disconnected';
    case 'refused':
      return 'disconnected';
    default:
      return null;
  }
}

/** The events one webhook body carries (none for events pasarela does not follow). */
export function evolutionEvents(instancia: string, event: string, data: unknown, now: number): GatewayEvent[] {
  const items = (Array.isArray(data) ? data : [data]).map(obj);
  const session = (status: SessionStatus | null): GatewayEvent[] => (status ? [{ type: 'session', instancia, status, at: now }] : []);
  switch (event) {
    case 'messages.upsert':
      return items.map((d) => inbound(instancia, d, now)).filter((e): e is GatewayEvent => e !== null);
    case 'messages.update':
      return items.map((d) => receipt(instancia, d, now)).filter((e): e is GatewayEvent => e !== null);
    case 'connection.update':
      return session(connection(items[0] ?? {}));
    case 'qrcode.updated': {
      // After QRCODE_LIMIT codes Evolution gives up on the attempt and says so in place of a QR.
      const d = items[0] ?? {};
      const limit = !d.qrcode && (str(d.message)?.match(/limit/i) || num(d.statusCode) === 500);
      return session(limit ? 'disconnected' : 'need_scan');
    }
    case 'logout.instance':
    case 'remove.instance':
      return session('logged_out');
    default:
      return [];
  }
}
