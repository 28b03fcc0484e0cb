import { describe, expect, it } from 'vitest';
import { parkedOrder, receiptPath, receiptSources, receiptStep } from '../../src/core/billing/ledger.js';
import type { MensajeRow, ReceiptEstado } from '../../src/core/ports/model.js';

/**
 * Receipt ranking (core/billing/ledger.ts) over every order receipts can arrive in:
 * a message applied the rules as a store does, one receipt at a time, and the
 * states it passed through.
 */
type Estado = MensajeRow['estado'];
const RANK: Record<Estado, number> = { pendiente: 0, enviado: 1, entregado: 2, leido: 3, error: -1 };
const RECEIPTS: ReceiptEstado[] = ['entregado', 'leido', 'error'];

/** Applies the receipts in order; returns the final state and every state recorded on the way. */
function apply(start: Estado, receipts: ReceiptEstado[]): { estado: Estado; recorded: Estado[] } {
  let estado = start;
  const recorded: Estado[] = [];
  for (const r of receipts) {
    const step = receiptStep(estado, r);
    if (step === 'advance') for (const e of receiptPath(estado, r)) recorded.push((estado = e));
    else if (step === 'fail') recorded.push((estado = 'error'));
    else expect(receiptPath(estado, r)).toEqual([]);
  }
  return { estado, recorded };
}

/** Every sequence of up to `n` receipts, repeats included (3 + 9 + 27 + 81). */
function sequences(n: number): ReceiptEstado[][] {
  const out: ReceiptEstado[][] = [];
  let level: ReceiptEstado[][] = [[]];
  for (let i = 0; i < n; i++) {
    level = level.flatMap((s) => RECEIPTS.map((r) => [...s, r]));
    out.push(...level);
  }
  return out;
}

describe('receipts in any order', () => {
  const all = sequences(4);

  it('a later, lower-ranked receipt never overwrites a higher state: the states recorded only go up', () => {
    for (const seq of all) {
      const { recorded } = apply('enviado', seq);
      const forward = recorded.filter((e) => e !== 'error');
      for (let i = 1; i < forward.length; i++) expect(RANK[forward[i]!], seq.join(',')).toBeGreaterThan(RANK[forward[i - 1]!]);
    }
  });

  it('without a failure, a sent message ends at the highest receipt it got, whatever the order', () => {
    for (const seq of all.filter((s) => !s.includes('error'))) {
      const highest = seq.reduce<Estado>((a, r) => (RANK[r] > RANK[a] ? r : a), 'enviado');
      expect(apply('enviado', seq).estado, seq.join(',')).toBe(highest);
    }
  });

  it('a read message always has its delivery recorded first, even when the read receipt came alone', () => {
    for (const seq of all) {
      const { recorded } = apply('enviado', seq);
      const read = recorded.indexOf('leido');
      if (read >= 0) expect(recorded.slice(0, read), seq.join(',')).toContain('entregado');
    }
  });

  it('a failure ends a message only while it is sent and not yet delivered; after it nothing moves', () => {
    for (const seq of all) {
      const { estado, recorded } = apply('enviado', seq);
      // An error receipt counts only as the first receipt a sent message gets.
      expect(estado === 'error', seq.join(',')).toBe(seq[0] === 'error');
      if (estado === 'error') expect(recorded).toEqual(['error']);
    }
  });

  it('a message not yet sent, or already failed, is moved by no receipt (receipts for it are parked instead)', () => {
    for (const start of ['pendiente', 'error'] as const) {
      for (const seq of all) expect(apply(start, seq), seq.join(',')).toEqual({ estado: start, recorded: [] });
    }
  });

  it('parked receipts, applied in their order, give the failure precedence, then the furthest state', () => {
    for (const seq of all) {
      const parked = parkedOrder(seq.map((estado, i) => ({ estado, i })));
      expect(parked.map((p) => p.estado).sort()).toEqual([...seq].sort());
      const { estado } = apply(
        'enviado',
        parked.map((p) => p.estado),
      );
      expect(estado, seq.join(',')).toBe(seq.includes('error') ? 'error' : seq.includes('leido') ? 'leido' : 'entregado');
    }
  });

  it("a receipt's sources (what a one-statement store renders) are exactly the states it advances, each with its path", () => {
    const states: Array<MensajeRow['estado']> = ['pendiente', 'enviado', 'entregado', 'leido', 'error'];
    for (const r of ['entregado', 'leido', 'error'] as ReceiptEstado[]) {
      expect(receiptSources(r)).toEqual(states.filter((s) => receiptStep(s, r) === 'advance').map((from) => ({ from, path: receiptPath(from, r) })));
    }
    expect(receiptSources('leido')).toEqual([
      { from: 'enviado', path: ['entregado', 'leido'] },
      { from: 'entregado', path: ['leido'] },
    ]);
    expect(receiptSources('error')).toEqual([]);
  });
});
