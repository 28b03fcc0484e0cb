import { describe, expect, it } from 'vitest';
import { acceptVerdict, balanceAfter, parkedOrder, receiptPath, receiptStep, refundTarget } from '../../src/core/billing/ledger.js';

/** The money and state rules every store adapter applies (core/billing/ledger.ts), without a store. */
describe('ledger rules', () => {
  const base = { saldoCelular: 0, saldoGlobal: 0, pendientes: 0, capHit: null };
  const queued = { charge: true, queued: true, maxPending: 10 };

  it('the line pays first, then the client; neither: refused; an unlimited plan pays nothing', () => {
    expect(acceptVerdict({ ...base, saldoCelular: 1, saldoGlobal: 5 }, queued)).toEqual({ ok: true, cargo: 'celular' });
    expect(acceptVerdict({ ...base, saldoGlobal: 5 }, queued)).toEqual({ ok: true, cargo: 'global' });
    expect(acceptVerdict(base, queued)).toEqual({ ok: false, reason: 'saldo' });
    expect(acceptVerdict(base, { ...queued, charge: false })).toEqual({ ok: true, cargo: null });
  });

  it('refuses a cap before a full queue, and a full queue before the balance; a direct send ignores the queue', () => {
    const capHit = { retryAfterMs: 1000, which: 'per minute', cap: 5 };
    expect(acceptVerdict({ ...base, pendientes: 10, capHit }, queued)).toEqual({ ok: false, reason: 'cap', ...capHit });
    expect(acceptVerdict({ ...base, pendientes: 10 }, queued)).toEqual({ ok: false, reason: 'cola_llena' });
    expect(acceptVerdict({ ...base, pendientes: 10, saldoGlobal: 1 }, { ...queued, queued: false })).toEqual({ ok: true, cargo: 'global' });
    expect(acceptVerdict({ ...base, pendientes: 10, saldoGlobal: 1 }, { ...queued, maxPending: null })).toEqual({ ok: true, cargo: 'global' });
  });

  it('a refund goes back where the charge came from, once; a deleted line credits the client', () => {
    expect(refundTarget({ cobrado: 1, cargo: 'celular' }, true)).toBe('celular');
    expect(refundTarget({ cobrado: 1, cargo: 'celular' }, false)).toBe('global');
    expect(refundTarget({ cobrado: 1, cargo: 'global' }, true)).toBe('global');
    expect(refundTarget({ cobrado: 0, cargo: 'celular' }, true)).toBeNull();
    expect(refundTarget({ cobrado: 1, cargo: null }, true)).toBeNull();
  });

  it('a balance never goes below zero nor past an exact integer', () => {
    expect(balanceAfter(5, -5)).toEqual({ ok: true, resultante: 0 });
    expect(balanceAfter(5, -6)).toEqual({ ok: false, reason: 'negativo' });
    expect(balanceAfter(Number.MAX_SAFE_INTEGER, 1)).toEqual({ ok: false, reason: 'desborde' });
  });

  it('receipts move a sent message forward only; a failure ends only a sent one', () => {
    expect(receiptStep('enviado', 'entregado')).toBe('advance');
    expect(receiptStep('enviado', 'leido')).toBe('advance');
    expect(receiptStep('entregado', 'leido')).toBe('advance');
    expect(receiptStep('leido', 'entregado')).toBe('ignore');
    expect(receiptStep('entregado', 'entregado')).toBe('ignore');
    expect(receiptStep('pendiente', 'entregado')).toBe('ignore');
    expect(receiptStep('error', 'leido')).toBe('ignore');
    expect(receiptStep('enviado', 'error')).toBe('fail');
    expect(receiptStep('entregado', 'error')).toBe('ignore');
  });

  it('parked receipts apply failure first, then delivery, then read', () => {
    const p = parkedOrder([{ estado: 'leido' as const }, { estado: 'error' as const }, { estado: 'entregado' as const }]);
    expect(p.map((x) => x.estado)).toEqual(['error', 'entregado', 'leido']);
  });
});

describe('receipt paths', () => {
  it('a read receipt on a message not yet delivered passes through delivered first; others are one step or none', () => {
    expect(receiptPath('enviado', 'leido')).toEqual(['entregado', 'leido']);
    expect(receiptPath('enviado', 'entregado')).toEqual(['entregado']);
    expect(receiptPath('entregado', 'leido')).toEqual(['leido']);
    expect(receiptPath('leido', 'entregado')).toEqual([]);
    expect(receiptPath('pendiente', 'leido')).toEqual([]);
    expect(receiptPath('enviado', 'error')).toEqual([]);
  });
});
