import { acceptVerdict } from '../billing/ledger.js';
import type { AcceptOptions, AcceptResult, NewMensaje } from '../ports/messages.js';
import * as recipe from '../billing/recipes.js';
import type { SlotCount } from './caps.js';

/**
 * Several sends accepted in one transaction (one turn of a store's group
 * commit; a send alone is a turn of one): each is decided as `acceptVerdict`
 * decides one, in arrival order, against the balances, queue lengths and caps
 * slots the ones before it left. The adapter locks and reads the rows once for
 * the turn, asks here, and writes every answer in one statement; refusals
 * write nothing.
 */

/** What the turn reads under its locks. */
export interface TurnRead {
  clientes: Map<number, { saldo_global: number }>;
  celulares: Map<number, { cliente_id: number; saldo_actual: number; pendientes: number }>;
  /** `cliente_id:clave` of the Idempotency-Keys bound already (read with their locks held). */
  bound: Set<string>;
  /** Each direct send's slots per window of its claim (by the send's index in the turn), counted at its own time. */
  cupos?: Map<number, SlotCount[]>;
}

export interface TurnItem {
  m: NewMensaje;
  opts: AcceptOptions;
}

/** A send as a store's acceptance takes it: with the time it arrived at. */
export interface AcceptItem extends TurnItem {
  now: number;
}

export type TurnVerdict =
  | { ok: true; cargo: 'celular' | 'global' | null; paid: recipe.ChargeRecipe }
  | Extract<AcceptResult, { ok: false; reason: 'saldo' | 'cola_llena' | 'celular' | 'idempotencia' | 'cap' }>;

export const keyOf = (clienteId: number, clave: string) => `${clienteId}:${clave}`;

/** The turn's verdicts, in the items' order. `read` is consumed: its balances and counters move as each send is charged. */
export function acceptTurn(items: TurnItem[], read: TurnRead): TurnVerdict[] {
  const keys = new Set(read.bound);
  // Slots taken by the turn's earlier sends, by line: in flight, each counts in every window.
  const taken = new Map<number, number>();
  return items.map(({ m, opts }, i): TurnVerdict => {
    const key = opts.idem ? keyOf(m.cliente_id, opts.idem.clave) : null;
    // A key bound before the turn, or by a send earlier in it, answers as a repeat whatever else would refuse.
    if (key !== null && keys.has(key)) return { ok: false, reason: 'idempotencia' };
    const cli = read.clientes.get(m.cliente_id);
    const cel = read.celulares.get(m.celular_id);
    if (!cli || !cel || cel.cliente_id !== m.cliente_id) return { ok: false, reason: 'celular' };
    const earlier = taken.get(m.celular_id) ?? 0;
    const counts = read.cupos?.get(i) ?? [];
    const capHit = opts.slot && counts.length > 0 ? opts.slot.decide(counts.map((k) => ({ ...k, n: k.n + earlier }))) : null;
    const verdict = acceptVerdict(
      { saldoCelular: cel.saldo_actual, saldoGlobal: cli.saldo_global, pendientes: cel.pendientes, capHit },
      { charge: opts.charge, queued: m.modo === 'cola', maxPending: opts.maxPending },
    );
    if (!verdict.ok) return verdict;
    const paid = recipe.charge(m, verdict.cargo, { saldoCelular: cel.saldo_actual, saldoGlobal: cli.saldo_global });
    cel.saldo_actual = paid.saldoCelular;
    cli.saldo_global = paid.saldoGlobal;
    cel.pendientes += recipe.queueDelta(m);
    if (key !== null) keys.add(key);
    if (opts.slot) taken.set(m.celular_id, earlier + 1);
    return { ok: true, cargo: verdict.cargo, paid };
  });
}
