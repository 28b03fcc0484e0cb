import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/clock.js';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectCleanExit, rows } from './helpers.js';

/**
 * Tables and field views on a terminal fit its width: every line at most
 * `columns` wide (emoji and CJK count 2, combining marks 0), free text cut
 * with `…` between characters, never inside an emoji. Off a terminal the
 * tab-separated output keeps every character.
 */
let s: TestServer;
let cli: Cli;
let a: Seeded;

const FAMILY = '👨\u200d👩\u200d👧';
const FLAG = '🇲🇽';
const TEXTS = [
  `x${'😀'.repeat(30)}`,
  `${FAMILY}${FLAG} ${FAMILY.repeat(12)}`,
  '漢字テスト漢字テスト漢字テスト漢字テスト漢字テスト漢字テスト',
  `${'e\u0301'.repeat(25)} combinados ñ y más texto para que sea largo`,
  'a'.repeat(30) + '😀'.repeat(10), // the cut at 40 columns falls right before an emoji
];
const ERROR = `rechazado: 番号は無効です ${'😀'.repeat(12)} y una razón bastante larga`;
const NOMBRE = `Ventas 😀 ${FAMILY} 漢字テスト cafe\u0301 con un nombre muy largo para la tabla`;

beforeAll(async () => {
  s = await startTestServer();
  cli = new Cli(s.url, injectTransport(s.app));
  a = await seedClient(s);
  const edit = await api(s.url, 'POST', `/api/celular_editar.php?id=${a.celularId}`, { key: a.clientKey, json: { nombre_interno: NOMBRE } });
  expect(edit.status).toBe(200);
  const clock = s.clock as ManualClock;
  const store = s.core.store;
  for (const [i, texto] of TEXTS.entries()) {
    const msg_id = `width-${i}`;
    const r = await store.acceptMensaje(
      {
        msg_id,
        cliente_id: a.clienteId,
        celular_id: a.celularId,
        destinatario: '525512345678',
        tipo: 'texto',
        modo: 'directo',
        texto,
        media: null,
        payload: { texto },
        expira_at: null,
      },
      { charge: false, maxPending: null },
      clock.now() + i,
    );
    expect(r.ok).toBe(true);
    if (i === 0) await store.failMensaje(msg_id, ERROR, 'rechazado', clock.now() + 100);
  }
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('off a terminal nothing is cut', () => {
  it('historial and celular list keep every character in their tab-separated lines', async () => {
    const env = { env: { PASARELA_KEY: a.clientKey, COLUMNS: '40' } };
    const [historial, list] = await Promise.all([cli.run(['historial'], env), cli.run(['celular', 'list'], env)]);
    const h = rows(expectCleanExit(historial));
    expect(h.map((r) => r[7])).toEqual([...TEXTS].reverse());
    expect(h.find((r) => r[1] === 'width-0')?.[8]).toBe(ERROR);
    expect(rows(expectCleanExit(list))[0]?.[2]).toBe(NOMBRE);
  });
});
