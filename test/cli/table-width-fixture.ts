import { expect } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { storeMensaje } from './stored-mensaje.js';

/**
 * What both `table-width` test files show (the in-process one and the
 * terminal one): a client whose line has a wide name, five messages of wide
 * or combining text (`width-0` … `width-4`), the first failed with a wide
 * reason.
 */

export const FAMILY = '👨\u200d👩\u200d👧';
export const FLAG = '🇲🇽';
export const TEXTS = [
  `x${'😀'.repeat(30)}`,
  `${FAMILY}${FLAG} ${FAMILY.repeat(12)}`,
  '漢字テスト漢字テスト漢字テスト漢字テスト漢字テスト漢字テスト',
  `${'e\u0301'.repeat(25)} combinados ñ y más texto para que sea largo`,
  'a'.repeat(30) + '😀'.repeat(10), // the cut at 40 columns falls right before an emoji
];
export const ERROR = `rechazado: 番号は無効です ${'😀'.repeat(12)} y una razón bastante larga`;
export const NOMBRE = `Ventas 😀 ${FAMILY} 漢字テスト cafe\u0301 con un nombre muy largo para la tabla`;

export async function startWideWorld(): Promise<{ s: TestServer; a: Seeded }> {
  const s = await startTestServer();
  const a = await seedClient(s);
  const edit = await api(s.url, 'POST', `/api/celular_editar.php?id=${a.celularId}`, { key: a.clientKey, json: { nombre_interno: NOMBRE } });
  expect(edit.status).toBe(200);
  const clock = s.clock as ManualClock;
  for (const [i, texto] of TEXTS.entries()) {
    const msg_id = `width-${i}`;
    await storeMensaje(s, { msg_id, cliente_id: a.clienteId, celular_id: a.celularId, destinatario: '525512345678', texto, at: clock.now() + i });
    if (i === 0) await s.core.store.failMensaje(msg_id, ERROR, 'rechazado', clock.now() + 100);
  }
  return { s, a };
}
