import { describe, expect, it } from 'vitest';
import type { AttemptRecord } from '../../src/core/ports/webhooks.js';
import { AttemptBatch } from '../../src/webhooks/attempt-batch.js';

/**
 * The dispatcher's records (D-78): on PostgreSQL a finished attempt's record
 * waits for the next claim to carry it; one that schedules a retry, or any
 * after a stop's drain, is written at once. The wait here is a minute, so
 * what is carried or written does not depend on timing.
 */
describe('webhook attempt records', () => {
  const rec = (id: string, retryAt?: number): AttemptRecord => ({
    id,
    claimId: 'k',
    attempt: { status: retryAt === undefined ? 200 : 500, duracion_ms: 1, error: null },
    outcome: retryAt === undefined ? { estado: 'entregado' } : { estado: 'pendiente', proximo_intento_at: retryAt },
    now: 1,
  });

  function world(lingerMs: number) {
    const alone: string[][] = [];
    const batch = new AttemptBatch(async (list) => {
      alone.push(list.map((r) => r.id));
      return list.map((r) => r.id !== 'refused');
    }, lingerMs);
    return { batch, alone };
  }

  it('records wait for the next claim, which carries them all and answers each', async () => {
    const w = world(60_000);
    const a = w.batch.record(rec('a'));
    const refused = w.batch.record(rec('refused'));
    const carried: string[][] = [];
    const claimed = await w.batch.carry(async (list) => {
      carried.push(list.map((r) => r.id));
      return { recorded: list.map((r) => r.id === 'a'), claimed: ['next'] };
    });
    expect(claimed).toEqual(['next']);
    expect(await a).toBe(true);
    expect(await refused).toBe(false);
    expect(carried).toEqual([['a', 'refused']]);
    // Nothing was written alone, and the next claim carries nothing.
    expect(w.alone).toEqual([]);
    expect(await w.batch.carry(async (list) => ({ recorded: [], claimed: list.length }))).toBe(0);
  });

  it('a failed claim fails the records it carried', async () => {
    const w = world(60_000);
    const a = w.batch.record(rec('a')).catch((err: unknown) => err);
    const boom = new Error('connection lost');
    await expect(w.batch.carry(() => Promise.reject(boom))).rejects.toBe(boom);
    expect(await a).toBe(boom);
    expect(w.alone).toEqual([]);
  });

  it('a record that schedules a retry is written at once, with whatever waits beside it', async () => {
    const w = world(60_000);
    const a = w.batch.record(rec('a'));
    const retry = w.batch.record(rec('r', 5000));
    expect(await retry).toBe(true);
    expect(await a).toBe(true);
    expect(w.alone).toEqual([['a', 'r']]);
  });

  it('flush writes what waits (a stop, a test step); what ends after it waits again', async () => {
    const w = world(60_000);
    const a = w.batch.record(rec('a'));
    w.batch.flush();
    expect(await a).toBe(true);
    expect(w.alone).toEqual([['a']]);
    void w.batch.record(rec('b'));
    expect(await w.batch.carry(async (list) => ({ recorded: list.map(() => true), claimed: list.map((r) => r.id) }))).toEqual(['b']);
    expect(w.alone).toEqual([['a']]);
  });

  it('after drain nothing waits: what waited is written, and so is each record after', async () => {
    const w = world(60_000);
    const a = w.batch.record(rec('a'));
    w.batch.drain();
    expect(await a).toBe(true);
    expect(await w.batch.record(rec('b'))).toBe(true);
    expect(w.alone).toEqual([['a'], ['b']]);
  });

  it('without a wait (SQLite) each turn writes its records alone', async () => {
    const w = world(0);
    const [a, b] = [w.batch.record(rec('a')), w.batch.record(rec('b'))];
    expect([await a, await b]).toEqual([true, true]);
    expect(w.alone).toEqual([['a', 'b']]);
  });

  it('idle resolves once every record handed in is answered, carried, written or failed, and the callers heard first', async () => {
    const w = world(60_000);
    // Nothing handed in: idle now.
    await w.batch.idle();
    const heard: string[] = [];
    void w.batch.record(rec('a')).then(() => heard.push('a'));
    void w.batch.record(rec('b')).then(() => heard.push('b'));
    let idle = false;
    // What the callers had heard when idle() resolved.
    const waiting = w.batch.idle().then(() => ((idle = true), [...heard]));
    // Nothing answered yet: a claim carries one turn's records, so the batch is not idle until it does.
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(false);
    await w.batch.carry(async (list) => ({ recorded: list.map(() => true), claimed: null }));
    expect(await waiting).toEqual(['a', 'b']);
    // A failed write counts as answered too.
    const failing = new AttemptBatch(() => Promise.reject(new Error('down')), 0);
    const lost = failing.record(rec('c')).catch(() => 'failed');
    await failing.idle();
    expect(await lost).toBe('failed');
  });
});
