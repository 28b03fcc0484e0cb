import { stat } from 'node:fs/promises';
import { GatewayFailure, type OutboundMessage } from '../core/ports/gateway.js';
import { Base64File } from './json-body.js';

/**
 * What the HTTP adapters need of a media message: its bytes as raw base64
 * (streamed from the file, json-body.ts), and a file name with an extension (gateways and phones derive the type
 * from it: Evolution maps a name without one to no mimetype at all).
 */
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
  'audio/mp4': 'm4a',
  'audio/aac': 'aac',
  'audio/opus': 'opus',
  'audio/wav': 'wav',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/3gpp': '3gp',
  'video/webm': 'webm',
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

/** A file name that always carries an extension: the given name, or `fallback`, plus one from the type when it has none. */
export function fileNameFor(msg: Pick<OutboundMessage, 'filename' | 'mime' | 'url'>, fallback: string): string {
  const name = msg.filename?.trim();
  if (name && HAS_EXTENSION.test(name)) return name;
  return `${name || fallback}.${extensionFor(msg.mime, msg.url)}`;
}

/**
 * The temp file's bytes as raw base64 (no `data:` prefix: Evolution refuses one, WAHA wants none),
 * read from disk only as the request is sent (json-body.ts): a send never holds the file.
 */
export async function fileBase64(msg: OutboundMessage): Promise<Base64File> {
  if (!msg.filePath) throw new GatewayFailure(`a ${msg.tipo} message needs a url or a file`, 'permanent');
  const st = await stat(msg.filePath).catch(() => null);
  if (!st?.isFile() || st.size === 0) throw new GatewayFailure('media file missing or empty', 'permanent');
  return new Base64File(msg.filePath, st.size);
}
