import { describe, expect, it } from 'vitest';
import { acceptVerdict, balanceAfter, refundTarget, type Cargo } from '../../src/core/billing/ledger.js';

/**
 * Billing (core/billing/ledger.ts) over a client's balances kept in memory the way a
 * store keeps them: each write goes through the rules, and each movement is
 * written to the ledger. Long random runs check what must always hold: the
 * ledger adds up to the balances, nothing goes below zero, nothing is refunded
 * twice, and the line pays before the client.
 */
interface Msg {
  cobrado: 0 | 1;
  cargo: Cargo | null;
}

class Wallet {
  saldo = { celular: 0, global: 0 };
  lineExists = true;
  readonly ledger: Array<{ cuenta: Cargo; monto: number; resultante: number }> = [];
  readonly msgs: Msg[] = [];

  private move(cuenta: Cargo, monto: number): boolean {
    const r = balanceAfter(this.saldo[cuenta], monto);
    if (!r.ok) return false;
    this.saldo[cuenta] = r.resultante;
    this.ledger.push({ cuenta, monto, resultante: r.resultante });
    return true;
  }

  /** What operators credited (debits counted negative), for the conservation check. */
  credited = 0;

  credit(cuenta: Cargo, monto: number): boolean {
    if (cuenta === 'celular' && !this.lineExists) return false;
    const ok = this.move(cuenta, monto);
    if (ok) this.credited += monto;
    return ok;
  }

  /** An acceptance: the verdict from what is read under the lock, then the charge it names. */
  accept(charge: boolean): Msg | null {
    const v = acceptVerdict(
      { saldoCelular: this.lineExists ? this.saldo.celular : 0, saldoGlobal: this.saldo.global, pendientes: 0, capHit: null },
      { charge, queued: true, maxPending: null },
    );
    if (!v.ok) return null;
    if (v.cargo) expect(this.move(v.cargo, -1)).toBe(true);
    const m: Msg = { cobrado: v.cargo ? 1 : 0, cargo: v.cargo };
    this.msgs.push(m);
    return m;
  }

  /** A message ending in error: its charge goes back once, where the rule says. */
  fail(m: Msg): void {
    const to = refundTarget(m, this.lineExists);
    if (to) expect(this.move(to, +1)).toBe(true);
    m.cobrado = 0;
  }

  /** The line's row goes (its own balance with it, as the stores delete it); the client's balance stays. */
  deleteLine(): void {
    this.lineExists = false;
  }

  sumOf(cuenta: Cargo): number {
    return this.ledger.filter((l) => l.cuenta === cuenta).reduce((a, l) => a + l.monto, 0);
  }
}

/** A small deterministic generator (mulberry32), so a failing run can be replayed from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('billing', () => {
  it('the line pays first, then the client; each refund goes back to the balance that paid', () => {
    const w = new Wallet();
    w.credit('celular', 1);
    w.credit('global', 1);
    const a = w.accept(true)!;
    const b = w.accept(true)!;
    expect([a.cargo, b.cargo]).toEqual(['celular', 'global']);
    expect(w.accept(true)).toBeNull();
    w.fail(b);
    expect(w.saldo).toEqual({ celular: 0, global: 1 });
    w.fail(a);
    expect(w.saldo).toEqual({ celular: 1, global: 1 });
  });

  it('a refund happens once: failing a message again moves nothing', () => {
    const w = new Wallet();
    w.credit('global', 1);
    const m = w.accept(true)!;
    w.fail(m);
    w.fail(m);
    expect(w.saldo.global).toBe(1);
    expect(w.ledger.map((l) => l.monto)).toEqual([1, -1, 1]);
  });

  it("a charge of a line deleted since goes back to the client's balance", () => {
    const w = new Wallet();
    w.credit('celular', 2);
    const m = w.accept(true)!;
    expect(m.cargo).toBe('celular');
    w.deleteLine();
    w.fail(m);
    // The refund went to the client; the line's other unit went with its row.
    expect(w.saldo.global).toBe(1);
    expect(w.ledger.at(-1)).toEqual({ cuenta: 'global', monto: 1, resultante: 1 });
  });

  it('an unlimited plan is never charged nor refunded', () => {
    const w = new Wallet();
    const m = w.accept(false)!;
    expect(m).toEqual({ cobrado: 0, cargo: null });
    w.fail(m);
    expect(w.ledger).toEqual([]);
  });

  it('a debit below zero is refused and leaves no trace', () => {
    const w = new Wallet();
    w.credit('global', 2);
    expect(w.credit('global', -3)).toBe(false);
    expect(w.saldo.global).toBe(2);
    expect(w.ledger).toHaveLength(1);
  });

  it.each([1, 2, 3, 4, 5])('random run %i: the ledger adds up to the balances; none below zero; every message charged at most once', (seed) => {
    const r = rng(seed);
    const w = new Wallet();
    const start = { ...w.saldo };
    let accepted = 0;
    let refused = 0;
    for (let i = 0; i < 1000; i++) {
      const x = r();
      if (x < 0.15) w.credit(r() < 0.5 ? 'celular' : 'global', Math.floor(r() * 5) - 1);
      else if (x < 0.7) {
        const had = { ...w.saldo };
        const m = w.accept(r() < 0.9);
        if (m) accepted++;
        else {
          refused++;
          // Refused only when neither balance could pay.
          expect(had.global).toBe(0);
          expect(w.lineExists ? had.celular : 0).toBe(0);
        }
        // The line paid whenever it could.
        if (m?.cargo === 'global') expect(w.lineExists ? had.celular : 0).toBe(0);
      } else if (x < 0.995 && w.msgs.length) w.fail(w.msgs[Math.floor(r() * w.msgs.length)]!);
      else if (w.lineExists) w.deleteLine();
      // Checked plainly each step (an expect per step is most of the run's time); the step is named when one fails.
      const holds =
        w.saldo.celular >= 0 &&
        w.saldo.global >= 0 &&
        start.celular + w.sumOf('celular') === w.saldo.celular &&
        start.global + w.sumOf('global') === w.saldo.global;
      if (!holds) expect.fail(`seed ${seed}, step ${i}: balances ${JSON.stringify(w.saldo)} against the ledger ${w.sumOf('celular')}/${w.sumOf('global')}`);
    }
    // Money is neither made nor lost: what operators credited is in the balances or in the charges still standing.
    const standing = w.msgs.filter((m) => m.cobrado).length;
    expect(w.saldo.celular + w.saldo.global + standing).toBe(w.credited);
    expect(accepted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(0);
    // Each running balance in the ledger is the one before plus the movement.
    for (const cuenta of ['celular', 'global'] as const) {
      let run = 0;
      for (const l of w.ledger.filter((x) => x.cuenta === cuenta)) expect(l.resultante).toBe((run += l.monto));
    }
  });
});
