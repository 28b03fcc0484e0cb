import { describe, expect, it } from 'vitest';
import type { GatewayEvent } from '../../src/core/ports/gateway.js';
import type { CelularRow } from '../../src/core/ports/model.js';
import { inboxSender, newRecibido, recibidoView } from '../../src/core/history/recibidos.js';

/** The inbox row of an incoming message (docs/design.md §10), without a store. */
const celular = { id: 7, cliente_id: 3, numero: '525512345678' } as CelularRow;
const inbound = (de: string): Extract<GatewayEvent, { type: 'inbound' }> => ({
  type: 'inbound',
  instancia: 'i',
  de,
  tipo: 'texto',
  texto: 'hola',
  media: null,
  gatewayMsgId: 'G1',
  at: 1000,
  dedupeKey: 'k',
});

describe('the inbox sender', () => {
  it.each([
    // The old Mexican mobile 1 a WhatsApp id carries: kept as every other number of pasarela (and the history) has it.
    ['5215599990000', '525599990000'],
    ['525599990000', '525599990000'],
    ['14155552671', '14155552671'],
    ['5491155554444', '5491155554444'],
    ['34612345678', '34612345678'],
  ])('a number %s is kept as %s', (de, want) => {
    expect(inboxSender(de)).toBe(want);
    expect(newRecibido(celular, inbound(de), 2000).de).toBe(want);
  });

  it.each([
    ['123456789012345@lid'],
    // Digits that are no phone number: as given (they cannot be a remitente number either).
    ['99912345678'],
    ['123'],
  ])('%s, which is no phone number, is kept as the gateway gave it', (de) => {
    expect(newRecibido(celular, inbound(de), 2000).de).toBe(de);
  });
});

describe('the inbox record', () => {
  const row = { id: 1, cliente_id: 3, celular_id: 7, de: '14155552671', tipo: 'audio', texto: null, gateway_msg_id: 'G', fecha: 0, created_at: 0 };
  it('media: the documented fields and ptt, read from one parse; anything else, or unparsable JSON, stays on the server', () => {
    const media = JSON.stringify({ mime: 'audio/ogg', bytes: 10, url: 'https://x/a', filename: 'a.ogg', ptt: true, base64: 'AAAA', otro: 1 });
    expect(recibidoView({ ...row, media }).media).toEqual({ mime: 'audio/ogg', bytes: 10, url: 'https://x/a', filename: 'a.ogg', ptt: true });
    expect(recibidoView({ ...row, media: JSON.stringify({ mime: 'image/png', ptt: 'si' }) }).media).toEqual({ mime: 'image/png' });
    expect(recibidoView({ ...row, media: '{no' }).media).toBeNull();
    expect(recibidoView({ ...row, media: '[1]' }).media).toBeNull();
    expect(recibidoView({ ...row, media: null }).media).toBeNull();
  });
});
