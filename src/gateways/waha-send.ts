import { readFile } from 'node:fs/promises';
import { GatewayFailure, type OutboundMessage } from '../core/ports.js';

/** One outbound message as a WAHA send request (contract 5.4); the session travels in the body. */
export interface WahaSend {
  route: 'sendText' | 'sendImage' | 'sendFile' | 'sendVoice' | 'sendVideo';
  body: Record<string, unknown>;
}

export const STICKER_UNSUPPORTED = 'WAHA has no sticker route; send the image as "imagen" instead';
/** The format WhatsApp plays as a voice note; `convert: true` asks WAHA to transcode anything else to it. */
export const VOICE_MIME = 'audio/ogg; codecs=opus';

const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.ms-powerpoint': 'ppt',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/zip': 'zip',
  'application/json': 'json',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/mp4': 'm4a',
  'audio/aac': 'aac',
  'video/mp4': 'mp4',
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/** A file name for a file sent without one: the recipient sees it, and its extension tells the phone how to open it. */
function fallbackName(msg: OutboundMessage): string {
  const ext = msg.mime ? EXTENSIONS[msg.mime.split(';')[0]!.trim().toLowerCase()] : undefined;
  return `${msg.tipo}.${ext ?? 'bin'}`;
}

/** `{mimetype, filename?, url}` or, for a temp file, `{mimetype, filename?, data}` with raw base64 (no `data:` prefix). */
async function fileOf(msg: OutboundMessage, mimetype: string, filename: string | undefined): Promise<Record<string, unknown>> {
  const file: Record<string, unknown> = { mimetype };
  if (filename) file.filename = filename;
  if (msg.url) return { ...file, url: msg.url };
  if (!msg.filePath) throw new GatewayFailure(`a ${msg.tipo} message needs a url or a file`, 'permanent');
  const bytes = await readFile(msg.filePath).catch(() => null);
  if (!bytes || bytes.length === 0) throw new GatewayFailure('media file missing or empty', 'permanent');
  return { ...file, data: bytes.toString('base64') };
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
  // Documents and plain audio go as files, which always need a name.
  return { route: 'sendFile', body: withCaption({ ...base, file: await fileOf(msg, mime, msg.filename || fallbackName(msg)) }) };
}
