import { expect } from 'vitest';
import { api, seedClient, startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { ESC } from './helpers.js';

/**
 * What both `controls` test files show: a client with 10 credits whose
 * linked line is named NOMBRE (terminal controls of every kind), and a
 * simulator rule that fails every send to FAILING with a reason full of
 * controls too.
 */

export const NOMBRE = 'evil \u001b]0;pwned\u0007 and \u001b[31mred\u001b[0m \u202eabc \u009b2J end';
/** NOMBRE as every human format shows it: each control as a visible JSON-style escape. */
export const NOMBRE_SHOWN = 'evil \\u001b]0;pwned\\u0007 and \\u001b[31mred\\u001b[0m \\u202eabc \\u009b2J end';
export const FAILING = '5215500000077';
const MOTIVO = 'blocked \u001b]0;pwned\u0007 \u001b[8mhidden\u001b[0m';

/** Fails unless `text` is free of every raw control the fixture plants (ESC, BEL, C1 CSI, bidi override). */
export const noRawControls = (text: string, what: string) => {
  for (const c of [ESC, '\u0007', '\u009b', '\u202e']) expect(text.includes(c), `${what}: a raw ${JSON.stringify(c)}`).toBe(false);
};

export async function startControlsWorld(): Promise<{ s: TestServer; a: Seeded }> {
  const s = await startTestServer();
  const a = await seedClient(s, { saldo: 10 });
  const edit = await api(s.url, 'POST', `/api/celular_editar.php?id=${a.celularId}`, { key: a.clientKey, json: { nombre_interno: NOMBRE } });
  expect(edit.status, edit.text).toBe(200);
  // Linked, with a rule that makes sends to FAILING fail with MOTIVO as the reason.
  await api(s.url, 'POST', `/api/celular_qr.php?id=${a.celularId}`, { key: a.clientKey });
  expect((await api(s.url, 'POST', '/admin/sim/scan', { key: s.adminToken, json: { celular_id: a.celularId } })).status).toBe(200);
  const fail = await api(s.url, 'POST', '/admin/sim/fail', { key: s.adminToken, json: { numero: FAILING, activo: true, motivo: MOTIVO } });
  expect(fail.status, fail.text).toBe(200);
  return { s, a };
}
