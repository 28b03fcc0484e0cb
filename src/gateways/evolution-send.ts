import type { OutboundMessage } from '../core/ports/gateway.js';
import type { Base64File } from './json-body.js';
import { fileBase64, fileNameFor } from './media-files.js';

/**
 * One outbound message as an Evolution API send request (contract 3.2-3.5).
 * No `delay`: pasarela paces sends itself, and Evolution would hold the HTTP
 * call open for it.
 */
export interface EvolutionSend {
  route: 'sendText' | 'sendMedia' | 'sendWhatsAppAudio' | 'sendSticker';
  body: Record<string, unknown>;
}

/** The URL, or the temp file's bytes as raw base64 (streamed when the request is sent). */
async function mediaOf(msg: OutboundMessage): Promise<string | Base64File> {
  return msg.url ?? fileBase64(msg);
}

const MEDIATYPE = { imagen: 'image', video: 'video', documento: 'document', audio: 'audio' } as const;

export async function evolutionSend(msg: OutboundMessage): Promise<EvolutionSend> {
  const number = msg.destinatario.replace(/\D/g, '');
  if (msg.tipo === 'texto') {
    return { route: 'sendText', body: { number, text: msg.texto ?? '', linkPreview: msg.previewUrl === true } };
  }
  const media = await mediaOf(msg);
  if (msg.tipo === 'sticker') return { route: 'sendSticker', body: { number, sticker: media } };
  if (msg.tipo === 'audio' && msg.ptt) return { route: 'sendWhatsAppAudio', body: { number, audio: media } };
  const body: Record<string, unknown> = { number, mediatype: MEDIATYPE[msg.tipo], media };
  if (msg.mime) body.mimetype = msg.mime;
  const caption = msg.caption ?? msg.texto;
  if (caption) body.caption = caption;
  // Documents always need a name with an extension; other kinds only when we know one.
  if (msg.tipo === 'documento') body.fileName = fileNameFor(msg, 'documento');
  else if (msg.filename?.trim()) body.fileName = fileNameFor(msg, msg.tipo);
  return { route: 'sendMedia', body };
}
