import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { AnyMessageContent } from 'baileys';
import { GatewayFailure, type OutboundMessage } from '../../core/ports/gateway.js';
import { fileNameFor } from '../media-files.js';

/** A person's chat on the network. */
export function jidOf(digits: string): string {
  return `${digits.replace(/\D/g, '')}@s.whatsapp.net`;
}

/**
 * The network's id for our msg_id: the same on a retry after a crash, so the
 * recipient's phone drops the second copy as it would any repeated id. The
 * `3EB0` prefix and length are those of the ids Baileys makes itself.
 */
export function networkIdOf(msgId: string): string {
  return `3EB0${createHash('sha256').update(msgId).digest('hex').slice(0, 36).toUpperCase()}`;
}

const DEFAULT_MIME = {
  imagen: 'image/jpeg',
  video: 'video/mp4',
  audio: 'audio/ogg; codecs=opus',
  documento: 'application/octet-stream',
  sticker: 'image/webp',
} as const;

/**
 * The message as Baileys' content. Media always comes as a local file (the
 * adapter has a URL fetched first, media-fetch.ts): Baileys gets its path and
 * streams it while it encrypts and uploads, so memory stays bounded.
 */
export async function contentOf(msg: OutboundMessage): Promise<AnyMessageContent> {
  if (msg.tipo === 'texto') return { text: msg.texto ?? '' };
  if (!msg.filePath) throw new GatewayFailure(`a ${msg.tipo} message needs a file`, 'permanent');
  const st = await stat(msg.filePath).catch(() => null);
  if (!st?.isFile() || st.size === 0) throw new GatewayFailure('media file missing or empty', 'permanent');
  const media = { url: msg.filePath };
  const mimetype = msg.mime ?? DEFAULT_MIME[msg.tipo];
  const caption = msg.caption ?? msg.texto ?? undefined;
  switch (msg.tipo) {
    case 'imagen':
      return { image: media, mimetype, caption };
    case 'video':
      return { video: media, mimetype, caption };
    case 'audio':
      return { audio: media, mimetype, ptt: msg.ptt === true };
    case 'sticker':
      return { sticker: media, mimetype };
    case 'documento':
      return { document: media, mimetype, fileName: fileNameFor(msg, 'documento'), caption };
  }
}
