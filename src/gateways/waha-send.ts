import { GatewayFailure, type OutboundMessage } from '../core/ports/gateway.js';
import { fileBase64, fileNameFor } from './media-files.js';

/** One outbound message as a WAHA send request (contract 5.4); the session travels in the body. */
export interface WahaSend {
  route: 'sendText' | 'sendImage' | 'sendFile' | 'sendVoice' | 'sendVideo';
  body: Record<string, unknown>;
}

export const STICKER_UNSUPPORTED = 'WAHA has no sticker route; send the image as "imagen" instead';
/** The format WhatsApp plays as a voice note; `convert: true` asks WAHA to transcode anything else to it. */
export const VOICE_MIME = 'audio/ogg; codecs=opus';

/** `{mimetype, filename?, url}` or, for a temp file, `{mimetype, filename?, data}` with raw base64 (no `data:` prefix), streamed when sent. */
async function fileOf(msg: OutboundMessage, mimetype: string, filename: string | undefined): Promise<Record<string, unknown>> {
  const file: Record<string, unknown> = { mimetype };
  if (filename) file.filename = filename;
  if (msg.url) return { ...file, url: msg.url };
  return { ...file, data: await fileBase64(msg) };
}

export async function wahaSend(session: string, msg: OutboundMessage): Promise<WahaSend> {
  if (msg.tipo === 'sticker') throw new GatewayFailure(STICKER_UNSUPPORTED, 'permanent');
  const base = { session, chatId: `${msg.destinatario.replace(/\D/g, '')}@c.us` };
  if (msg.tipo === 'texto') return { route: 'sendText', body: { ...base, text: msg.texto ?? '', linkPreview: msg.previewUrl === true } };
  const mime = msg.mime ?? 'application/octet-stream';
  const caption = msg.caption ?? msg.texto;
  const withCaption = (b: Record<string, unknown>) => (caption ? { ...b, caption } : b);
  if (msg.tipo === 'audio' && msg.ptt) {
    return { route: 'sendVoice', body: { ...base, file: await fileOf(msg, VOICE_MIME, msg.filename), convert: true } };
  }
  if (msg.tipo === 'imagen') return { route: 'sendImage', body: withCaption({ ...base, file: await fileOf(msg, mime, msg.filename) }) };
  if (msg.tipo === 'video') return { route: 'sendVideo', body: withCaption({ ...base, file: await fileOf(msg, mime, msg.filename) }) };
  // Documents and plain audio go as files, which always need a name (the recipient sees it).
  return { route: 'sendFile', body: withCaption({ ...base, file: await fileOf(msg, mime, fileNameFor(msg, msg.tipo)) }) };
}
