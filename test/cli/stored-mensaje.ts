import { expect } from 'vitest';
import type { TestServer } from '../helpers/server.js';

/**
 * One message written straight into the store (no API, no charge, no gateway),
 * accepted at `at`: how the CLI fixtures build a history to list. A `media`
 * makes it an image.
 */
export async function storeMensaje(
  s: TestServer,
  o: {
    msg_id: string;
    cliente_id: number;
    celular_id: number;
    destinatario: string;
    texto: string;
    at: number;
    media?: Record<string, unknown> | undefined;
  },
): Promise<void> {
  const r = await s.core.store.acceptMensaje(
    {
      msg_id: o.msg_id,
      cliente_id: o.cliente_id,
      celular_id: o.celular_id,
      destinatario: o.destinatario,
      tipo: o.media ? 'imagen' : 'texto',
      modo: 'directo',
      texto: o.texto,
      media: o.media ?? null,
      payload: { texto: o.texto },
      expira_at: null,
    },
    { charge: false, maxPending: null },
    o.at,
  );
  expect(r.ok).toBe(true);
}
