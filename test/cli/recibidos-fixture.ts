import { expect } from 'vitest';
import type { ManualClock } from '../../src/core/time/clock.js';
import { api, type TestServer } from '../helpers/server.js';
import { link, linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';

/**
 * The inbox both `recibidos` test files read (the in-process one and the
 * terminal one): two linked lines of one client that received 120 messages
 * through the simulator, one every 17 hours back from 2026-03-10, from two
 * senders; then a spreadsheet formula, a hostile text and a tricky one.
 */

export const S1 = '525512345678';
export const S2 = '14155552671';
export const TRICKY = 'Hola, "amigo"\nsegunda línea, con coma';
/** What anyone may write to a line: a colour code, a window-title sequence, a C1 control, a right-to-left override. */
export const HOSTILE = `pago \u001b[31mrojo\u001b]0;titulo\u0007 \u009b2J \u202etxt.exe`;
export const FORMULA = '=HYPERLINK("http://evil","clic")';
const H = 3_600_000;

export interface Seed {
  gid: string;
  seq: number;
  celular_id: number;
  de: string;
  at: number;
}

export interface Inbox {
  A: Line;
  a2: Line;
  seeds: Seed[];
  /** The seeded gateway ids that pass `f`, newest first, like the server. */
  expected: (f?: (x: Seed) => boolean) => string[];
}

export async function seedInbox(s: TestServer): Promise<Inbox> {
  const seeds: Seed[] = [];
  const receive = async (line: Line, de: string, at: number, texto: string) => {
    (s.clock as ManualClock).set(at);
    const r = await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: line.celularId, de, texto } });
    expect(r.status, r.text).toBe(200);
    seeds.push({ gid: r.body.gateway_msg_id, seq: seeds.length, celular_id: line.celularId, de: r.body.de, at });
  };
  const A = await linkedLine(s);
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
  expect(r.status, r.text).toBe(201);
  const a2: Line = { ...A, celularId: r.body.celular_id, celularKey: r.body.api_key };
  await link(s, a2);
  const end = Date.UTC(2026, 2, 10);
  for (let i = 0; i < 120; i += 1) await receive(i % 3 === 0 ? a2 : A, i % 4 === 0 ? S2 : S1, end - (120 - i) * 17 * H, `mensaje ${i}`);
  await receive(A, S1, end + H, FORMULA);
  await receive(A, S2, end + 2 * H, HOSTILE);
  await receive(A, S1, end + 3 * H, TRICKY);
  const expected = (f: (x: Seed) => boolean = () => true) =>
    seeds
      .filter(f)
      .sort((x, y) => y.at - x.at || y.seq - x.seq)
      .map((x) => x.gid);
  return { A, a2, seeds, expected };
}
