import { balanceAfter, type Cargo, INBOUND_SEEN_TTL_MS, PARKED_PER_LINE, PARKED_TTL_MS, refundTarget } from './ledger.js';
import type { MensajeRow } from '../ports/model.js';

/**
 * What to write, answered once for every store dialect (D-66): the ledger rows
 * and balance moves of a charge, a refund and a manual change, and the values
 * a message's send slot takes on each transition. Adapters lock and read,
 * ask here, and render the answer in their own SQL; none of them decides a
 * value or a column itself.
 */

/** A balance column and the row that holds it. */
export type Balance = { table: 'celulares'; column: 'saldo_actual'; id: number } | { table: 'clientes'; column: 'saldo_global'; id: number };

/** One `movimientos_saldo` row (its date is the transaction's `now`). */
export interface Movement {
  cliente_id: number;
  celular_id: number | null;
  monto: number;
  saldo_resultante: number;
  motivo: string;
  actor: string;
}

/** The columns of a ledger row, in the order `movementValues` gives them. */
export const MOVEMENT_COLUMNS = ['fecha', 'cliente_id', 'celular_id', 'monto', 'saldo_resultante', 'motivo', 'actor'] as const;

export function movementValues(mv: Movement, now: number): unknown[] {
  return [now, mv.cliente_id, mv.celular_id, mv.monto, mv.saldo_resultante, mv.motivo, mv.actor];
}

/** The balance a `cargo` names for a message's client and line. */
export function balanceOf(cargo: Cargo, m: { cliente_id: number; celular_id: number }): Balance {
  return cargo === 'celular'
    ? { table: 'celulares', column: 'saldo_actual', id: m.celular_id }
    : { table: 'clientes', column: 'saldo_global', id: m.cliente_id };
}

export interface ChargeRecipe {
  saldoCelular: number;
  saldoGlobal: number;
  /** The balance to set to `saldo`, with its ledger row; null when the send is not charged. */
  write: { balance: Balance; saldo: number; movement: Movement } | null;
}

/** A send's charge and refund name it in their motive: its story finds them by it (the ledger's motive index, D-98). */
export const chargeMotivo = (msgId: string): string => `envio ${msgId}`;
export const refundMotivo = (msgId: string): string => `reembolso ${msgId}`;

/** An accepted send's charge: one credit off the balance `acceptVerdict` chose, read under the caller's lock. */
export function charge(
  m: { msg_id: string; cliente_id: number; celular_id: number },
  cargo: Cargo | null,
  read: { saldoCelular: number; saldoGlobal: number },
): ChargeRecipe {
  if (cargo === null) return { ...read, write: null };
  const saldo = (cargo === 'celular' ? read.saldoCelular : read.saldoGlobal) - 1;
  const movement: Movement = {
    cliente_id: m.cliente_id,
    celular_id: cargo === 'celular' ? m.celular_id : null,
    monto: -1,
    saldo_resultante: saldo,
    motivo: chargeMotivo(m.msg_id),
    actor: 'sistema',
  };
  return {
    saldoCelular: cargo === 'celular' ? saldo : read.saldoCelular,
    saldoGlobal: cargo === 'global' ? saldo : read.saldoGlobal,
    write: { balance: balanceOf(cargo, m), saldo, movement },
  };
}

export interface RefundRecipe {
  /** The balance to add `monto` to atomically (its new value read back). */
  balance: Balance;
  monto: 1;
  /** The ledger row once the balance's new value is known. */
  movement(saldoResultante: number): Movement;
}

/** A failed message's refund (see `refundTarget`), or null when nothing goes back. */
export function refund(m: Pick<MensajeRow, 'msg_id' | 'cliente_id' | 'celular_id' | 'cobrado' | 'cargo'>, lineExists: boolean): RefundRecipe | null {
  const to = refundTarget(m, lineExists);
  if (to === null) return null;
  return {
    balance: balanceOf(to, m),
    monto: 1,
    movement: (saldo_resultante) => ({
      cliente_id: m.cliente_id,
      celular_id: to === 'celular' ? m.celular_id : null,
      monto: 1,
      saldo_resultante,
      motivo: refundMotivo(m.msg_id),
      actor: 'sistema',
    }),
  };
}

export interface ManualChange {
  cliente_id: number;
  celular_id: number | null;
  monto: number;
  motivo: string;
  actor: string;
}

/** A manual balance change on the line's balance (when named) or the client's, refused as `balanceAfter` refuses. */
export function balanceChange(
  change: ManualChange,
  current: number,
): { ok: true; balance: Balance; saldo: number; movement: Movement } | { ok: false; reason: 'negativo' | 'desborde' } {
  const after = balanceAfter(current, change.monto);
  if (!after.ok) return after;
  const balance: Balance =
    change.celular_id !== null
      ? { table: 'celulares', column: 'saldo_actual', id: change.celular_id }
      : { table: 'clientes', column: 'saldo_global', id: change.cliente_id };
  return { ok: true, balance, saldo: after.resultante, movement: { ...change, saldo_resultante: after.resultante } };
}

/** A new client's opening balance: the stored value, and the ledger row of the credit given with it (if any). */
export function openingBalance(
  inicial: number,
  credit: { monto: number; motivo: string; actor: string } | undefined,
): { saldo: number; movement: ((clienteId: number) => Movement) | null } {
  const saldo = inicial + (credit?.monto ?? 0);
  if (!credit) return { saldo, movement: null };
  return {
    saldo,
    movement: (cliente_id) => ({ cliente_id, celular_id: null, monto: credit.monto, saldo_resultante: saldo, motivo: credit.motivo, actor: credit.actor }),
  };
}

/** Whether a client with `max` lines (null: no cap) may add one more to the `count` it holds. */
export function lineCapAllows(max: number | null, count: number): boolean {
  return max === null || count < max;
}

/** A slot column's new value: none, a time, or the message's send time (a send the network took keeps its slot). */
export type SlotValue = { kind: 'null' } | { kind: 'at'; at: number } | { kind: 'sent_at' };
export type SlotTransition = 'claim' | 'retry' | 'release' | 'sent' | 'fail';

/**
 * What a send slot's columns become (core/sending/caps.ts): a claim holds the lease
 * and the slot until `at` (the claim's holdUntil); a retry or a release at
 * start gives both back; a send made counts from `at` (now); a failure gives
 * back a slot never used and keeps one the network took.
 */
export function slotOn(t: SlotTransition, at?: number): { lease_until: SlotValue; cupo_at: SlotValue } {
  const none: SlotValue = { kind: 'null' };
  const timed = (): SlotValue => {
    if (at === undefined) throw new Error(`slotOn('${t}') needs a time`);
    return { kind: 'at', at };
  };
  switch (t) {
    case 'claim': {
      const v = timed();
      return { lease_until: v, cupo_at: v };
    }
    case 'retry':
    case 'release':
      return { lease_until: none, cupo_at: none };
    case 'sent':
      return { lease_until: none, cupo_at: timed() };
    case 'fail':
      return { lease_until: none, cupo_at: { kind: 'sent_at' } };
  }
}

/** What a message's acceptance adds to its line's queued counter (`pendientes`), and what its leaving takes off. */
export function queueDelta(m: { modo: string }): 0 | 1 {
  return m.modo === 'cola' ? 1 : 0;
}

/** The column a receipt's step stamps with its time. */
export function receiptColumn(next: 'entregado' | 'leido'): 'entregado_at' | 'leido_at' {
  return next === 'entregado' ? 'entregado_at' : 'leido_at';
}

/** Whether a line holding `held` parked receipts may park one more (PARKED_PER_LINE). */
export function parkingAllows(held: number): boolean {
  return held < PARKED_PER_LINE;
}

/** Parked receipts stamped before this are expired (PARKED_TTL_MS). */
export function parkedExpiredBefore(now: number): number {
  return now - PARKED_TTL_MS;
}

/** Inbound gateway keys seen before this are forgotten (INBOUND_SEEN_TTL_MS). */
export function inboundForgottenBefore(now: number): number {
  return now - INBOUND_SEEN_TTL_MS;
}

/** What a queued message's move to another line of its pool writes (D-175): its charge's new place, and the balance moves. */
export interface MoveRecipe {
  cargo: Cargo | null;
  writes: Array<{ balance: Balance; saldo: number; movement: Movement }>;
}

/**
 * A pending message moved from its line to line `to` (pool failover, D-175).
 * A charge on the old line's own balance goes back to it (a refund row) and
 * the new line pays: from its own balance, else the client's global one; null
 * when neither can (the message stays). A charge on the global balance, or
 * none, stays as it is. Each balance equals its ledger after the move.
 */
export function moveCharge(
  m: Pick<MensajeRow, 'msg_id' | 'cliente_id' | 'celular_id' | 'cobrado' | 'cargo'>,
  to: number,
  read: { saldoVieja: number; saldoNueva: number; saldoGlobal: number },
): MoveRecipe | null {
  if (!m.cobrado || m.cargo !== 'celular') return { cargo: m.cargo, writes: [] };
  const cargo: Cargo | null = read.saldoNueva >= 1 ? 'celular' : read.saldoGlobal >= 1 ? 'global' : null;
  if (cargo === null) return null;
  const back = read.saldoVieja + 1;
  const paid = (cargo === 'celular' ? read.saldoNueva : read.saldoGlobal) - 1;
  const moved = { cliente_id: m.cliente_id, celular_id: to };
  return {
    cargo,
    writes: [
      {
        balance: balanceOf('celular', m),
        saldo: back,
        movement: { cliente_id: m.cliente_id, celular_id: m.celular_id, monto: 1, saldo_resultante: back, motivo: refundMotivo(m.msg_id), actor: 'sistema' },
      },
      {
        balance: balanceOf(cargo, moved),
        saldo: paid,
        movement: {
          cliente_id: m.cliente_id,
          celular_id: cargo === 'celular' ? to : null,
          monto: -1,
          saldo_resultante: paid,
          motivo: chargeMotivo(m.msg_id),
          actor: 'sistema',
        },
      },
    ],
  };
}
