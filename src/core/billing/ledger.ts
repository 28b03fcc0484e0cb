import type { CapHit } from '../sending/caps.js';
import type { MensajeRow, ReceiptEstado } from '../ports/model.js';

/**
 * The money and state rules every store adapter applies inside its own
 * transaction (both stores): the adapter reads the rows it
 * locks, asks here what to do, and writes the answer. Nothing here touches a
 * store, so the rules are the same on every adapter and testable alone.
 */

export type Cargo = 'celular' | 'global';

/** What an acceptance reads under its lock. */
export interface AcceptState {
  saldoCelular: number;
  saldoGlobal: number;
  /** Queued messages the line already holds. */
  pendientes: number;
  /** The send slot's verdict (core/sending/caps.ts); null when it may be taken or none is asked. */
  capHit: CapHit | null;
}

export type AcceptVerdict = { ok: true; cargo: Cargo | null } | { ok: false; reason: 'saldo' | 'cola_llena' } | ({ ok: false; reason: 'cap' } & CapHit);

/**
 * Whether a send is accepted, and which balance pays. Refusals in this order:
 * the line's cap, a full queue, no balance; every refusal is decided before
 * the first write, so a refused send changes nothing. The line's own balance
 * pays first, then the client's global one.
 */
export function acceptVerdict(s: AcceptState, opts: { charge: boolean; queued: boolean; maxPending: number | null }): AcceptVerdict {
  if (s.capHit) return { ok: false, reason: 'cap', ...s.capHit };
  if (opts.queued && opts.maxPending !== null && s.pendientes >= opts.maxPending) return { ok: false, reason: 'cola_llena' };
  if (!opts.charge) return { ok: true, cargo: null };
  if (s.saldoCelular > 0) return { ok: true, cargo: 'celular' };
  if (s.saldoGlobal > 0) return { ok: true, cargo: 'global' };
  return { ok: false, reason: 'saldo' };
}

/**
 * Where a failed message's charge goes back: to the balance that paid it,
 * once (`cobrado` is cleared with it); a deleted line's credit goes to the
 * client's global balance, which still exists. Null: nothing to refund.
 */
export function refundTarget(m: Pick<MensajeRow, 'cobrado' | 'cargo'>, lineExists: boolean): Cargo | null {
  if (!m.cobrado) return null;
  if (m.cargo === 'celular') return lineExists ? 'celular' : 'global';
  if (m.cargo === 'global') return 'global';
  return null;
}

/** A balance after adding `monto`: refused below zero or past what the store can hold exactly. */
export function balanceAfter(current: number, monto: number): { ok: true; resultante: number } | { ok: false; reason: 'negativo' | 'desborde' } {
  const resultante = current + monto;
  if (resultante < 0) return { ok: false, reason: 'negativo' };
  if (!Number.isSafeInteger(resultante)) return { ok: false, reason: 'desborde' };
  return { ok: true, resultante };
}

const RANK = { pendiente: 0, enviado: 1, entregado: 2, leido: 3, error: -1 } as const;

/**
 * What a receipt does to a message: `advance` to entregado or leido (forward
 * only, and only once sent), `fail` a sent message the network reports as
 * failed (refunded like any error), or nothing.
 */
export function receiptStep(current: MensajeRow['estado'], receipt: ReceiptEstado): 'advance' | 'fail' | 'ignore' {
  if (receipt === 'error') return current === 'enviado' ? 'fail' : 'ignore';
  return RANK[current] >= 1 && RANK[current] < RANK[receipt] ? 'advance' : 'ignore';
}

/**
 * The states an `advance` passes through, in order: a read receipt for a
 * message not yet marked delivered (acks can arrive out of order, and a read
 * message was delivered) passes through `entregado` first, so every message
 * read has its delivery recorded and its `message.status` for each step.
 */
export function receiptPath(current: MensajeRow['estado'], receipt: ReceiptEstado): Array<'entregado' | 'leido'> {
  if (receiptStep(current, receipt) !== 'advance') return [];
  return receipt === 'leido' && current === 'enviado' ? ['entregado', 'leido'] : [receipt as 'entregado' | 'leido'];
}

/**
 * Every state a receipt advances from, with the steps it makes from there
 * (receiptPath): what a store renders into the one statement that applies
 * the receipt to whatever state it finds the message in.
 */
export function receiptSources(receipt: ReceiptEstado): Array<{ from: MensajeRow['estado']; path: Array<'entregado' | 'leido'> }> {
  return (Object.keys(RANK) as Array<MensajeRow['estado']>).map((from) => ({ from, path: receiptPath(from, receipt) })).filter((s) => s.path.length > 0);
}

/** Receipts parked before their send was recorded are applied in this order: a failure first, then forward. */
export function parkedOrder<T extends { estado: ReceiptEstado }>(parked: T[]): T[] {
  const order: ReceiptEstado[] = ['error', 'entregado', 'leido'];
  return [...parked].sort((a, b) => order.indexOf(a.estado) - order.indexOf(b.estado));
}

/** Parked receipts nobody claimed within a day were for messages that are not ours (typed on the phone). */
export const PARKED_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * Parked receipts one line may hold: a genuine one waits only while its send's
 * answer is on the way, so a line with this many is being flooded under its
 * own instance's secret. Beyond it new ones are refused, not the oldest
 * dropped: a flood then cannot push out receipts parked before it.
 */
export const PARKED_PER_LINE = 1000;
/** How long an inbound message's gateway key is remembered against the gateway's retries. */
export const INBOUND_SEEN_TTL_MS = 7 * 24 * 60 * 60 * 1000;
