import type { OutboundMessage } from '../ports/gateway.js';
import type { MensajePayload, Tipo } from '../ports/model.js';

/** The gateway's view of a stored message (one mapping for direct and queued sends). */
export function outbound(msgId: string, tipo: Tipo, destinatario: string, p: MensajePayload): OutboundMessage {
  return {
    msgId,
    tipo,
    destinatario,
    texto: p.texto,
    url: p.url,
    filePath: p.file,
    mime: p.mime,
    filename: p.filename,
    caption: p.caption,
    ptt: p.ptt,
    previewUrl: p.preview_url,
  };
}
