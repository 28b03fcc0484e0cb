import { expect } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import type { MensajeEstado } from '../../src/core/ports/model.js';
import { api, seedClient, type Seeded, type TestServer } from '../helpers/server.js';
import { storeMensaje } from './stored-mensaje.js';

/**
 * The history both `historial` test files read (the in-process one and the
 * terminal one): a client with two lines and 121 messages written straight
 * into the store, one every 17 hours back from 2026-03-10, in every estado;
 * the newest has a text with a quote, a comma and a line break.
 */

export const H = 3_600_000;
export const D1 = '525512345678';
export const D2 = '14155552671';
export const TRICKY = 'Hola, "amigo"\nsegunda línea, con coma';
const ESTADOS: MensajeEstado[] = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];

export interface Seed {
  msg_id: string;
  seq: number;
  celular_id: number;
  destinatario: string;
  estado: MensajeEstado;
  created_at: number;
}

export interface History {
  A: Seeded;
  /** The client's second line. */
  a2: number;
  seeds: Seed[];
  /** The seeded msg_ids that pass `f`, newest first, like the server. */
  expected: (f?: (x: Seed) => boolean) => string[];
}

export async function seedHistory(s: TestServer): Promise<History> {
  const A = await seedClient(s);
  const seeds: Seed[] = [];
  const seedMensaje = async (o: {
    celular_id: number;
    destinatario: string;
    estado: MensajeEstado;
    at: number;
    texto?: string;
    media?: Record<string, unknown>;
  }) => {
    const clock = s.clock as ManualClock;
    const store = s.core.store;
    const seq = seeds.length + 1;
    const msg_id = `cli-${String(seq).padStart(4, '0')}`;
    clock.set(o.at);
    await storeMensaje(s, {
      msg_id,
      cliente_id: A.clienteId,
      celular_id: o.celular_id,
      destinatario: o.destinatario,
      texto: o.texto ?? `mensaje ${seq}`,
      at: clock.now(),
      media: o.media,
    });
    const gid = `gw-${msg_id}`;
    if (o.estado === 'error') await store.failMensaje(msg_id, 'rechazado, "sin" WhatsApp', 'rechazado', o.at + 1000);
    else if (o.estado !== 'pendiente') {
      await store.markSent(msg_id, gid, o.at + 1000);
      if (o.estado !== 'enviado') await store.receipt(o.celular_id, gid, 'entregado', o.at + 2000);
      if (o.estado === 'leido') await store.receipt(o.celular_id, gid, 'leido', o.at + 3000);
    }
    seeds.push({ msg_id, seq, celular_id: o.celular_id, destinatario: o.destinatario, estado: o.estado, created_at: o.at });
  };

  const r = await api(s.url, 'POST', '/api/celular_crear.php', {
    key: A.clientKey,
    json: { numero: `5255${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}` },
  });
  expect(r.status, r.text).toBe(201);
  const a2 = r.body.celular_id as number;
  const end = Date.UTC(2026, 2, 10);
  for (let i = 0; i < 120; i += 1) {
    await seedMensaje({
      celular_id: i % 3 === 0 ? a2 : A.celularId,
      destinatario: i % 4 === 0 ? D2 : D1,
      estado: ESTADOS[i % 5]!,
      at: end - (120 - i) * 17 * H,
      ...(i === 7 ? { media: { url: 'https://example.com/x.png', mime: 'image/png' } } : {}),
    });
  }
  await seedMensaje({ celular_id: A.celularId, destinatario: D1, estado: 'enviado', at: end + H, texto: TRICKY });
  const expected = (f: (x: Seed) => boolean = () => true) =>
    seeds
      .filter(f)
      .sort((x, y) => y.created_at - x.created_at || y.seq - x.seq)
      .map((x) => x.msg_id);
  return { A, a2, seeds, expected };
}
