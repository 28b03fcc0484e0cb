import { readFile } from 'node:fs/promises';
import { GatewayFailure, type OutboundMessage } from '../core/ports.js';

/**
 * One outbound message as an Evolution API send request (contract 3.2-3.5).
 * No `delay`: pasarela paces sends itself, and Evolution would hold the HTTP
 * call open for it.
 */
export interface EvolutionSend {
  route: 'sendText' | 'sendMedia' | 'sendWhatsAppAudio' | 'sendSticker';
  body: Record<string, unknown>;
}

/** Extensions of the common MIME types; Evolution derives the mimetype back from the file name. */
const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.ms-powerpoint': 'ppt',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/vnd.oasis.opendocument.text': 'odt',
  'application/vnd.oasis.opendocument.spreadsheet': 'ods',
  'application/rtf': 'rtf',
  'text/rtf': 'rtf',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
  'application/json': 'json',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'video/mp4': 'mp4',
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

const HAS_EXTENSION = /\.[A-Za-z0-9]{1,8}$/;

/** The extension for a file of `mime` fetched from `url`: by MIME type, else the URL path's, else `bin`. */
export function extensionFor(mime: string | undefined, url: string | undefined): string {
  const byMime = mime ? EXTENSIONS[mime.split(';')[0]!.trim().toLowerCase()] : undefined;
  if (byMime) return byMime;
  if (url) {
    let path = url;
    try {
      path = new URL(url).pathname;
    } catch {
      // Not a URL: read it as a path.
    }
    const m = /\.([A-Za-z0-9]{1,8})$/.exec(path.split('/').pop() ?? '');
    if (m) return m[1]!.toLowerCase();
  }
  return 'bin';
}

/** A file name that always carries an extension (Evolution maps a name without one to no mimetype). */
export function fileNameFor(msg: Pick<OutboundMessage, 'filename' | 'mime' | 'url'>, fallback: string): string {
  const name = msg.filename?.trim();
  if (name && HAS_EXTENSION.test(name)) return name;
  return `${name || fallback}.${extensionFor(msg.mime, msg.url)}`;
}

/** The URL, or the temp file's bytes as raw base64 (a `data:` prefix makes Evolution refuse it). */
async function mediaOf(msg: OutboundMessage): Promise<string> {
  if (msg.url) return msg.url;
  if (!msg.filePath) throw new GatewayFailure(`a ${msg.tipo} message needs a url or a file`, 'permanent');
  const bytes = await readFile(msg.filePath).catch(() => null);
  if (!bytes || bytes.length === 0) throw new GatewayFailure('media file missing or empty', 'permanent');
  return bytes.toString('base64');
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
