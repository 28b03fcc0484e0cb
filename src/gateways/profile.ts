import type { SessionProfile } from '../core/ports/gateway.js';

/**
 * The digits of a WhatsApp id (`5215512345678@s.whatsapp.net`, `...:12@...`
 * with a device, WAHA's `...@c.us`); null for ids that hide the number
 * (`...@lid`) or are not a phone's.
 */
export function numeroOfJid(jid: unknown): string | null {
  if (typeof jid !== 'string') return null;
  const m = /^(\d{6,15})(?::\d+)?@(s\.whatsapp\.net|c\.us)$/.exec(jid.trim());
  return m ? m[1]! : null;
}

/** A profile from what a gateway answered; null when it says neither the name nor the number. */
export function profileOf(name: unknown, jid: unknown): SessionProfile | null {
  const nombre = typeof name === 'string' && name.trim() !== '' ? name.trim() : null;
  const numero = numeroOfJid(jid);
  return nombre === null && numero === null ? null : { nombre, numero };
}
