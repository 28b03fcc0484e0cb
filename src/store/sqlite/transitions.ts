import type Database from 'better-sqlite3';
import { grouped, immediate, ph, stmt } from './statements.js';
import { balanceAdd, pendingDown, receiptStepUpdate, slotSet, slotTime } from '../recipe-sql.js';
import * as recipe from '../../core/billing/recipes.js';
import { parkedOrder, receiptPath, receiptStep } from '../../core/billing/ledger.js';
import type { MessagesOwn, ReceiptOutcome } from '../../core/ports/messages.js';
import type { ErrorClase, MensajeEstadoRow, MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import { journalStatus, writeMovement } from './messages.js';
import { keepSlot, leavePending, mapGatewayId } from './state-paths.js';
import { ESTADO_COLUMNS } from '../message-columns.js';

/**
 * A message's changes after acceptance, in SQLite (D-138): the send's record,
 * a failure, receipts (parked when they beat their send). Each function
 * takes an array, one element per message, and runs the same prepared
 * statements for each inside one IMMEDIATE transaction (the caller's when it
 * has one: the store's group commit): SQLite has no round trip to save.
 */
type DB = Database.Database;

const ESTADO = ESTADO_COLUMNS.join(', ');
const M_ESTADO = ESTADO_COLUMNS.map((c) => `m.${c}`).join(', ');
/** A receipt's step, per state reached, built once (its text is the statement cache's key). */
const STEP_UPDATE = {
  entregado: `${receiptStepUpdate('entregado', ph)} RETURNING ${ESTADO}`,
  leido: `${receiptStepUpdate('leido', ph)} RETURNING ${ESTADO}`,
};

const get = (db: DB, msgId: string) => (stmt(db, 'SELECT * FROM mensajes WHERE msg_id = ?').get(msgId) as MensajeRow | undefined) ?? null;

/** A message leaves `pendiente`: out of the queue (its line's backlog count goes down with it) or of the direct sends in flight. */
function leftPending(db: DB, m: { msg_id: string; modo: string; celular_id: number }): void {
  leavePending(db, m);
  if (recipe.queueDelta(m)) stmt(db, pendingDown(ph)).run(m.celular_id);
}

/** A send to record. */
export interface SentItem {
  msgId: string;
  gid: string;
  now: number;
}

/** Sends recorded, then the receipts parked for each applied in order: each one's row, or null when it was not pending. */
export function markSent(db: DB, items: SentItem[]): Array<MensajeEstadoRow | null> {
  return immediate(db, () =>
    items.map(({ msgId, gid, now }): MensajeEstadoRow | null => {
      const slot = recipe.slotOn('sent', now);
      const row = stmt(
        db,
        `UPDATE mensajes SET estado = 'enviado', gateway_msg_id = @gid, enviado_at = @now, ${slotSet(slot, '@slot')},
           error = NULL, intentos = intentos + 1
         WHERE msg_id = @msgId AND estado = 'pendiente' RETURNING ${ESTADO}`,
      ).get({ gid, now, msgId, slot: slotTime(slot) }) as MensajeEstadoRow | undefined;
      if (!row) return null;
      leftPending(db, row);
      keepSlot(db, row);
      mapGatewayId(db, row);
      journalStatus(db, row, 'pendiente', now);
      return applyParked(db, row, now);
    }),
  );
}

/** Receipts parked for this send before it was recorded, applied in order now. */
function applyParked(db: DB, row: MensajeEstadoRow, now: number): MensajeEstadoRow {
  // Those its own line reported (or parked before receipts named their line).
  const parked = stmt(db, 'DELETE FROM acuses_pendientes WHERE gateway_msg_id = ? AND (celular_id = ? OR celular_id IS NULL) RETURNING estado, error').all(
    row.gateway_msg_id,
    row.celular_id,
  ) as Array<{ estado: ReceiptEstado; error: string | null }>;
  if (parked.length === 0) return row;
  const r = parkedOrder(parked).map((p) => ({ celularId: row.celular_id, gid: row.gateway_msg_id!, estado: p.estado, now, error: p.error ?? undefined }));
  for (const p of r) receipts(db, [p]);
  return get(db, row.msg_id)!;
}

/**
 * A failure to write. `from`: only a pending message (failMensaje, a cancel)
 * or any not yet in error (a failure the network reports). With `cancel`,
 * only a queued message no claim holds at `unclaimedAt`, tested in the same
 * IMMEDIATE transaction a claim takes, so one of the two wins; `why` then
 * says what stopped it.
 */
export interface FailItem {
  msgId: string;
  error: string;
  clase: ErrorClase;
  now: number;
  from?: 'pendiente' | 'any';
  cancel?: { unclaimedAt: number; why?: 'no_pendiente' | 'enviando' | 'directo'; reembolso?: number };
}

/** Messages ended in error with their refunds: each one's row, or null when its guard failed. */
export function failMensajes(db: DB, items: FailItem[]): Array<MensajeRow | null> {
  return immediate(db, () =>
    items.map(({ msgId, error, clase, now, from = 'pendiente', cancel }): MensajeRow | null => {
      const m = get(db, msgId);
      if (!m || m.estado === 'error' || (from === 'pendiente' && m.estado !== 'pendiente')) {
        if (cancel) cancel.why = 'no_pendiente';
        return null;
      }
      if (cancel && m.modo !== 'cola') {
        cancel.why = 'directo';
        return null;
      }
      if (cancel && m.lease_until !== null && m.lease_until > cancel.unclaimedAt) {
        cancel.why = 'enviando';
        return null;
      }
      // A send that never went out gives its slot back; one the network took keeps it.
      stmt(
        db,
        `UPDATE mensajes SET estado = 'error', error = ?, error_clase = ?, ${slotSet(recipe.slotOn('fail'), '?')}, cobrado = 0, error_at = ? WHERE msg_id = ?`,
      ).run(error, clase, now, msgId);
      if (m.estado === 'pendiente') leftPending(db, m);
      const lineExists = m.cargo === 'celular' && stmt(db, 'SELECT 1 FROM celulares WHERE id = ?').get(m.celular_id) !== undefined;
      const back = recipe.refund(m, lineExists);
      if (cancel) cancel.reembolso = back?.monto ?? 0;
      if (back) {
        // A deleted client has no balance left to refund to.
        const r = stmt(db, balanceAdd(back.balance, ph)).get(back.monto, back.balance.id) as { saldo: number } | undefined;
        if (r) writeMovement(db, back.movement(r.saldo), now);
      }
      const after = get(db, msgId)!;
      if (after.cupo_at !== m.cupo_at) keepSlot(db, after);
      journalStatus(db, after, m.estado, now);
      return after;
    }),
  );
}

/** A receipt a line's instance reported. */
export interface ReceiptItem {
  celularId: number;
  gid: string;
  estado: ReceiptEstado;
  now: number;
  error?: string;
}

/**
 * Receipts: each moves its line's sent message forward (`entregado`,
 * `leido`; never backwards) or ends it in `error` (refunded) when the network
 * reports a failure after accepting it. A receipt for a gateway id not
 * recorded yet is parked for markSent.
 */
export function receipts(db: DB, items: ReceiptItem[]): ReceiptOutcome[] {
  return immediate(db, () =>
    items.map(({ celularId, gid, estado, now, error }): ReceiptOutcome => {
      // Only the reporting line's message: another line's (a secret leaked from one instance) is not this receipt's to change.
      const before = stmt(
        db,
        `SELECT ${M_ESTADO} FROM gateway_ids g JOIN mensajes m ON m.msg_id = g.msg_id WHERE g.gateway_msg_id = ? AND g.celular_id = ? LIMIT 1`,
      ).get(gid, celularId) as MensajeEstadoRow | undefined;
      if (!before) {
        stmt(db, 'DELETE FROM acuses_pendientes WHERE at < ?').run(recipe.parkedExpiredBefore(now));
        const held = stmt(db, 'SELECT COUNT(*) AS n FROM acuses_pendientes WHERE celular_id = ?').get(celularId) as { n: number };
        if (!recipe.parkingAllows(held.n)) return null;
        stmt(db, 'INSERT OR REPLACE INTO acuses_pendientes (gateway_msg_id, estado, error, at, celular_id) VALUES (?, ?, ?, ?, ?)').run(
          gid,
          estado,
          error ?? null,
          now,
          celularId,
        );
        return 'parked';
      }
      const step = receiptStep(before.estado, estado);
      if (step === 'ignore') return null;
      if (step === 'fail') {
        const [after] = failMensajes(db, [
          { msgId: before.msg_id, error: error ?? 'the network reported the message as failed', clase: 'fallido', now, from: 'any' },
        ]);
        return after ? { before, after } : null;
      }
      let after = before;
      for (const next of receiptPath(before.estado, estado)) {
        const prev = after.estado;
        after = stmt(db, STEP_UPDATE[next]).get(next, now, before.msg_id) as MensajeEstadoRow;
        journalStatus(db, after, prev, now);
      }
      return { before, after };
    }),
  );
}

/** markSent, failMensaje and receipt over one connection, each call in the store's group commit. */
export function transitions(db: DB): Pick<MessagesOwn, 'markSent' | 'failMensaje' | 'receipt'> {
  return {
    markSent: (msgId, gid, now) => grouped(db, () => markSent(db, [{ msgId, gid, now }])[0]!),
    failMensaje: (msgId, error, clase, now) => grouped(db, () => failMensajes(db, [{ msgId, error, clase, now }])[0]!),
    receipt: (celularId, gid, estado, now, error) => grouped(db, () => receipts(db, [{ celularId, gid, estado, now, error }])[0]!),
  };
}
