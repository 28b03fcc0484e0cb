import type { WAMessage, WAMessageUpdate, MessageUserReceiptUpdate } from 'baileys';
import type { GatewayEvent } from '../../core/ports/gateway.js';
import type { ReceiptEstado } from '../../core/ports/model.js';

/**
 * What Baileys reports, as the gateway events every adapter gives the core
 * (the same shapes as Evolution's, which runs Baileys: evolution-inbound.ts),
 * so a client cannot tell the gateway apart.
 */

const phone = (jid: string | null | undefined): string | null => {
  const m = /^(\d+)(?::\d+)?@s\.whatsapp\.net$/.exec(jid ?? '');
  return m ? m[1]! : null;
};

/** A person writing to the line: their number, or their `@lid` when the network hides it; null for groups, status and broadcasts. */
function sender(key: WAMessage['key']): string | null {
  const jid = key.remoteJid ?? '';
  const pn = phone(jid);
  if (pn) return pn;
  if (jid.endsWith('@lid')) return phone(key.remoteJidAlt) ?? phone((key as { senderPn?: string }).senderPn) ?? jid.replace(/:\d+@/, '@');
  return null;
}

const MEDIA_KINDS = { imageMessage: 'imagen', videoMessage: 'video', documentMessage: 'documento', audioMessage: 'audio', stickerMessage: 'sticker' } as const;

function content(message: WAMessage['message']): { tipo: string; texto: string | null; media: Record<string, unknown> | null } {
  if (!message) return { tipo: 'otro', texto: null, media: null };
  const text = message.conversation ?? message.extendedTextMessage?.text;
  if (typeof text === 'string') return { tipo: 'texto', texto: text, media: null };
  const inner = message.documentWithCaptionMessage?.message ?? message;
  for (const [field, tipo] of Object.entries(MEDIA_KINDS)) {
    const m = inner[field as keyof typeof MEDIA_KINDS] as
      { mimetype?: string | null; caption?: string | null; fileName?: string | null; fileLength?: unknown; ptt?: boolean | null } | null | undefined;
    if (!m) continue;
    const media: Record<string, unknown> = { mime: m.mimetype ?? null };
    if (m.fileName) media.filename = m.fileName;
    const bytes = Number(m.fileLength ?? NaN);
    if (Number.isFinite(bytes)) media.bytes = bytes;
    if (tipo === 'audio') media.ptt = m.ptt === true;
    return { tipo, texto: m.caption ?? null, media };
  }
  return { tipo: 'otro', texto: null, media: null };
}

/** A message someone sent the line (`messages.upsert` of type `notify`); null for our own and for what is not a person's chat. */
export function inboundOf(instancia: string, m: WAMessage, now: number): GatewayEvent | null {
  const id = m.key.id;
  if (m.key.fromMe || !id) return null;
  const de = sender(m.key);
  if (!de) return null;
  // Protocol messages (key distribution, history notices, edits of nothing) carry no content for a person.
  if (m.message?.protocolMessage || (m.message?.senderKeyDistributionMessage && Object.keys(m.message).length === 1)) return null;
  const { tipo, texto, media } = content(m.message);
  const ts = Number(m.messageTimestamp ?? 0);
  return { type: 'inbound', instancia, de, tipo, texto, media, gatewayMsgId: id, at: ts > 0 ? ts * 1000 : now, dedupeKey: `baileys:${instancia}:${id}` };
}

/** Baileys' `proto.WebMessageInfo.Status`: 0 ERROR, 1 PENDING, 2 SERVER_ACK, 3 DELIVERY_ACK, 4 READ, 5 PLAYED. */
const STATUS: Record<number, ReceiptEstado> = { 0: 'error', 3: 'entregado', 4: 'leido', 5: 'leido' };

/** A receipt of one of our messages (`messages.update` with a status). */
export function receiptOf(instancia: string, u: WAMessageUpdate, now: number): GatewayEvent | null {
  if (!u.key.fromMe || !u.key.id || typeof u.update.status !== 'number') return null;
  const estado = STATUS[u.update.status];
  if (!estado) return null;
  const error = estado === 'error' ? { error: 'the network reported the message as failed' } : {};
  return { type: 'receipt', instancia, gatewayMsgId: u.key.id, estado, at: now, ...error };
}

/** A per-recipient receipt (`message-receipt.update`: groups, and some 1:1 reads). */
export function userReceiptOf(instancia: string, r: MessageUserReceiptUpdate, now: number): GatewayEvent | null {
  if (!r.key.fromMe || !r.key.id) return null;
  const estado: ReceiptEstado | null = r.receipt.readTimestamp || r.receipt.playedTimestamp ? 'leido' : r.receipt.receiptTimestamp ? 'entregado' : null;
  return estado ? { type: 'receipt', instancia, gatewayMsgId: r.key.id, estado, at: now } : null;
}

/** Our own message as Baileys records it, carrying a receipt's status when the receipt came first (its event buffer folds them). */
export function ownStatusOf(instancia: string, m: WAMessage, now: number): GatewayEvent | null {
  if (!m.key.fromMe || !m.key.id || typeof m.status !== 'number') return null;
  return receiptOf(instancia, { key: m.key, update: { status: m.status } }, now);
}
