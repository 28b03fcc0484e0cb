import { type Balance, MOVEMENT_COLUMNS, receiptColumn, type SlotValue } from '../core/billing/recipes.js';
import type { EntregaRow, EscuchaRow } from '../core/ports/model.js';
import type { IntentoRow } from '../core/ports/webhooks.js';

/**
 * The SQL of core/billing/recipes.ts's answers, the same text for every dialect but
 * its placeholders: `ph(i)` names the i-th parameter (1-based), `?` in SQLite,
 * `$i` in PostgreSQL. The values come from the recipe, never from here.
 */
export type Placeholder = (i: number) => string;

/** INSERT of one ledger row; its parameters are `movementValues(...)` from `first` on. */
export function movementInsert(ph: Placeholder, first = 1): string {
  return `INSERT INTO movimientos_saldo (${MOVEMENT_COLUMNS.join(', ')}) VALUES (${MOVEMENT_COLUMNS.map((_, i) => ph(first + i)).join(', ')})`;
}

/** Sets a balance to a value read under the caller's lock: parameters (saldo, id), in text order (SQLite's `?`). */
export function balanceSet(b: Balance, ph: Placeholder): string {
  return `UPDATE ${b.table} SET ${b.column} = ${ph(1)} WHERE id = ${ph(2)}`;
}

/** Adds to a balance atomically and reads it back as `saldo`: parameters (monto, id). */
export function balanceAdd(b: Balance, ph: Placeholder): string {
  return `UPDATE ${b.table} SET ${b.column} = ${b.column} + ${ph(1)} WHERE id = ${ph(2)} RETURNING ${b.column} AS saldo`;
}

/** `lease_until = …, cupo_at = …` for a slot transition; a timed value is written as `place` (the caller binds `slotTime`). */
export function slotSet(s: { lease_until: SlotValue; cupo_at: SlotValue }, place: string): string {
  const v = (x: SlotValue) => (x.kind === 'null' ? 'NULL' : x.kind === 'sent_at' ? 'enviado_at' : place);
  return `lease_until = ${v(s.lease_until)}, cupo_at = ${v(s.cupo_at)}`;
}

/** The time a slot transition binds at its placeholder (null: it binds none). */
export function slotTime(s: { lease_until: SlotValue; cupo_at: SlotValue }): number | null {
  for (const x of [s.lease_until, s.cupo_at]) if (x.kind === 'at') return x.at;
  return null;
}

/** A queued message left `pendiente`: its line's counter down by one, never below zero; parameter (line id). */
export function pendingDown(ph: Placeholder): string {
  return `UPDATE celulares SET pendientes = pendientes - 1 WHERE id = ${ph(1)} AND pendientes > 0`;
}

/** A receipt's step: parameters (estado, its time, msg_id); the caller adds its RETURNING. */
export function receiptStepUpdate(next: 'entregado' | 'leido', ph: Placeholder): string {
  return `UPDATE mensajes SET estado = ${ph(1)}, ${receiptColumn(next)} = ${ph(2)} WHERE msg_id = ${ph(3)}`;
}

const ESCUCHA_COLUMNS = ['id', 'cliente_id', 'url', 'secret', 'eventos', 'created_at', 'expira_at'] as const;

/** INSERT of one listener; its parameters are `escuchaValues(e)`. */
export function escuchaInsert(ph: Placeholder): string {
  return `INSERT INTO webhook_escuchas (${ESCUCHA_COLUMNS.join(', ')}) VALUES (${ESCUCHA_COLUMNS.map((_, i) => ph(i + 1)).join(', ')})`;
}

export function escuchaValues(e: EscuchaRow): unknown[] {
  return [e.id, e.cliente_id, e.url, e.secret, JSON.stringify(e.eventos), e.created_at, e.expira_at];
}

/** The last attempt as its event row keeps it. */
export interface LastAttempt {
  ultimo_status: number | null;
  ultima_duracion_ms: number | null;
}

/** A delivery's attempts as the API lists them: the failed ones' rows, then the one that delivered it, from its event row. */
export function withDelivered(e: EntregaRow, last: LastAttempt, failed: IntentoRow[]): IntentoRow[] {
  // A delivery recorded before the log (migrated) kept every attempt in a row, the delivering one too.
  if (e.estado !== 'entregado' || e.entregado_at === null || failed.some((f) => f.n === e.intentos)) return failed;
  return [...failed, { n: e.intentos, fecha: e.entregado_at, status: last.ultimo_status, duracion_ms: last.ultima_duracion_ms ?? 0, error: null }];
}

/**
 * The overview's failing webhooks: per client, the pending deliveries with a
 * failed attempt (the pending deliveries' partial index), and the newest one's
 * error by its key; parameter (limit).
 */
export function failingWebhooksSelect(ph: Placeholder): string {
  return `SELECT f.cliente_id, f.pendientes, f.intentos, f.desde, (SELECT e.ultimo_error FROM eventos e WHERE e.seq = f.ultimo) AS ultimo_error
    FROM (SELECT cliente_id, COUNT(*) AS pendientes, MAX(intentos) AS intentos, MIN(fecha) AS desde, MAX(seq) AS ultimo
          FROM eventos WHERE entrega = 'pendiente' AND intentos > 0
          GROUP BY cliente_id ORDER BY COUNT(*) DESC, cliente_id LIMIT ${ph(1)}) f
    ORDER BY f.pendientes DESC, f.cliente_id`;
}

/**
 * A message's story beyond its record (store mensajeHechos, D-98): its own
 * row's claim and failure by its key, parameters (msg_id, cliente_id); its
 * ledger rows by their motive, parameters (charge motive, refund motive).
 * Both bounded: one row, and a few. The ledger's statement names no other
 * column in its filter nor an order, so that the motive's index is the only
 * one a planner can take (the client's, ordered by id, would read the
 * client's whole ledger); the caller keeps its client's rows and orders them.
 */
export function hechosSelect(ph: Placeholder): string {
  return `SELECT nodo, reclamado_at, error_at FROM mensajes WHERE msg_id = ${ph(1)} AND cliente_id = ${ph(2)}`;
}
export function movimientosDeMensajeSelect(ph: Placeholder): string {
  return `SELECT id, cliente_id, fecha, monto, saldo_resultante, motivo, celular_id FROM movimientos_saldo WHERE motivo IN (${ph(1)}, ${ph(2)}) LIMIT 4`;
}

/** A message's deliveries' columns (store entregasDeMensaje), the event's sequence first. */
export const ENTREGA_DE_MENSAJE_COLS = 'seq, cliente_id, evento, data, fecha, entrega, intentos, entregado_at, ultimo_status, ultima_duracion_ms, ultimo_nodo';
/** A delivery's failed attempts, first ones first, bounded; parameters (the event's id, the bound). */
export function fallidosSelect(ph: Placeholder): string {
  return `SELECT n, fecha, status, duracion_ms, error, nodo FROM webhook_intentos WHERE entrega_id = ${ph(1)} ORDER BY n LIMIT ${ph(2)}`;
}

/** The client's ledger rows of a message in ledger order (movimientosDeMensajeSelect leaves both to its caller). */
export function ownMovimientos<T extends { id: number; cliente_id: number }>(rows: T[], clienteId: number): Array<Omit<T, 'id' | 'cliente_id'>> {
  return rows
    .filter((r) => Number(r.cliente_id) === clienteId)
    .sort((a, b) => Number(a.id) - Number(b.id))
    .map(({ id: _id, cliente_id: _c, ...r }) => r);
}
