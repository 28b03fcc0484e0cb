import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/time/clock.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { editCelular, linkedLine, send, type Line } from './send-helpers.js';
import { until } from '../helpers/poll.js';

/**
 * Caps are exact across modes: direct sends and the queue worker take slots of
 * the same windows in one transaction each, so racing them never sends more
 * than the cap within a window (before, 6 of a cap of 5 went out in 53 ms).
 */

const CAP = 5;
let s: TestServer;
let clock: ManualClock;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 3, 1, 12));
  s = await startTestServer({ clock, queue: { gapMinMs: 0, gapMaxMs: 0 } });
});
afterAll(async () => {
  await s.stop();
});

function sentOf(line: Line): Array<{ modo: string; enviado_at: number }> {
  return (s.core.store as SqliteStore).db
    .prepare('SELECT modo, enviado_at FROM mensajes WHERE celular_id = ? AND enviado_at IS NOT NULL ORDER BY enviado_at')
    .all(line.celularId) as Array<{ modo: string; enviado_at: number }>;
}

/** The most sends of the line inside any one-minute window. */
function busiestMinute(line: Line): number {
  const times = sentOf(line).map((r) => r.enviado_at);
  let most = 0;
  for (let i = 0; i < times.length; i++) most = Math.max(most, times.filter((t) => t >= times[i]! && t < times[i]! + 60_000).length);
  return most;
}

/** Waits until the line has `n` sends, then across two more looks of the worker checks that no more go out. */
async function settlesAt(line: Line, n: number): Promise<void> {
  await until(() => sentOf(line).length >= n, { what: `${n} sends`, timeoutMs: 15_000 });
  for (let i = 0; i < 2; i++) {
    await s.stepQueue();
    expect(sentOf(line).length).toBe(n);
  }
}

it('queued and direct sends racing on one line never pass its cap of 5 a minute (5 trials)', async () => {
  for (let trial = 0; trial < 5; trial++) {
    const line = await linkedLine(s, { saldo: 100 });
    await editCelular(s, line, { max_envios_por_minuto: CAP });
    const body = (i: number, directo: boolean) => ({
      destinatario: `52559876${String(5000 + trial * 100 + i)}`,
      mensaje: `t${trial} m${i}`,
      ...(directo ? { directo: 1 } : {}),
    });
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => send(s, line, '/api/mensaje_enviar_texto.php', body(i, i % 2 === 1))));
    const direct = answers.filter((_, i) => i % 2 === 1);
    const queued = answers.filter((_, i) => i % 2 === 0);
    for (const r of queued) expect(r.status, r.text).toBe(200);
    const directOk = direct.filter((r) => r.status === 200).length;
    for (const r of direct.filter((r) => r.status !== 200)) {
      expect(r.status, r.text).toBe(429);
      expect(r.body).toMatchObject({ ok: false, api_codigo: 304 });
      expect(r.body.retry_after).toBeGreaterThan(0);
    }
    expect(directOk).toBeLessThanOrEqual(CAP);

    // The queue fills whatever the direct sends left, and not one more.
    await settlesAt(line, CAP);
    expect(sentOf(line).filter((r) => r.modo === 'directo')).toHaveLength(directOk);
    expect(busiestMinute(line)).toBe(CAP);

    // A minute later the waiting messages take the freed slots, again exactly.
    clock.advance(61_000);
    await settlesAt(line, Math.min(2 * CAP, directOk + 8));
    expect(busiestMinute(line)).toBeLessThanOrEqual(CAP);
  }
});
