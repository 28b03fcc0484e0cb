import type { MovimientoTipo } from '../core/ports/accounts.js';

/**
 * Each movement type as a condition on a ledger row, the same text in every
 * dialect: core/billing/movimientos.ts `movementTipo` in SQL. A refund and a manual
 * change each have a partial index of this very predicate (SQLite migration
 * 22, PostgreSQL 18), which a planner uses only when the query's text holds
 * it unchanged; a charge is nearly every row, read from the client's index.
 */
export const MOVEMENT_TIPO_SQL: Record<MovimientoTipo, string> = {
  cobro: "actor = 'sistema' AND substr(motivo, 1, 10) <> 'reembolso '",
  reembolso: "actor = 'sistema' AND substr(motivo, 1, 10) = 'reembolso '",
  manual: "actor <> 'sistema'",
};

/** The ledger's columns as a listing reads them. */
export const MOVEMENT_READ = 'id, fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor';
