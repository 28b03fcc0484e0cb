import type { SlotValue } from '../../core/billing/recipes.js';

/**
 * The side tables of a message's changing state (migration 14, D-73): the
 * pending messages (the queue, the direct sends in flight), the caps slots,
 * the gateway ids. mensajes has no index on a column that changes after
 * acceptance, so its updates are HOT; each statement that changes that
 * state keeps these rows in the same statement, as CTEs over the rows its
 * UPDATE (or INSERT) returned. `from` names such a CTE; it returns
 * `STATE_COLS` at least.
 */

/** What the CTEs below read from the changed rows. */
export const STATE_COLS = 'seq, msg_id, celular_id, modo, cupo_at, enviado_at, gateway_msg_id';
export const stateColsOf = (alias: string) =>
  STATE_COLS.split(', ')
    .map((c) => `${alias}.${c}`)
    .join(', ');

/** The accepted messages in `from` join the pending ones. */
export const enterPending = (from: string) =>
  `INSERT INTO mensajes_pendientes (seq, msg_id, celular_id, modo, cupo_at) SELECT seq, msg_id, celular_id, modo, cupo_at FROM ${from}`;

/** The messages in `from` left pendiente (a no-op for one that was not pending). */
export const leavePending = (from: string) => `DELETE FROM mensajes_pendientes p USING ${from} u WHERE p.seq = u.seq`;

/**
 * The slot rows after a slot transition (core/billing/recipes.ts slotOn) the rows in
 * `from` went through: a time is written, none is removed, and a failure's
 * `sent_at` removes a slot never used and leaves one the network took as it is
 * (its send wrote it at enviado_at; it may have been forgotten since).
 */
export function slotSync(from: string, cupo: SlotValue): string {
  switch (cupo.kind) {
    case 'at':
      return `INSERT INTO cupos (seq, celular_id, cupo_at) SELECT seq, celular_id, cupo_at FROM ${from}
      ON CONFLICT (seq) DO UPDATE SET cupo_at = excluded.cupo_at`;
    case 'null':
      return `DELETE FROM cupos k USING ${from} u WHERE k.seq = u.seq`;
    case 'sent_at':
      return `DELETE FROM cupos k USING ${from} u WHERE k.seq = u.seq AND u.enviado_at IS NULL`;
  }
}

/** A few of the line's slots no window counts any more (core/sending/caps.ts slotsForgottenBefore), never waiting for one, never one in `from`. */
export const forgetSlots = (from: string, before: string) =>
  `DELETE FROM cupos WHERE seq IN (
      SELECT k.seq FROM cupos k WHERE k.celular_id = (SELECT celular_id FROM ${from} LIMIT 1) AND k.cupo_at < ${before}
        AND k.seq NOT IN (SELECT seq FROM ${from}) LIMIT 16 FOR UPDATE SKIP LOCKED)`;

/** forgetSlots for each line of the rows in `from`: a few of each line's old slots. */
export const forgetSlotsOfLines = (from: string, before: string) =>
  `DELETE FROM cupos WHERE seq IN (
      SELECT f.seq FROM (SELECT DISTINCT celular_id FROM ${from}) l CROSS JOIN LATERAL (
        SELECT k.seq FROM cupos k WHERE k.celular_id = l.celular_id AND k.cupo_at < ${before}
          AND k.seq NOT IN (SELECT seq FROM ${from}) LIMIT 16 FOR UPDATE SKIP LOCKED) f)`;

/** The gateway ids the rows in `from` were sent under. */
export const mapGateway = (from: string) =>
  `INSERT INTO ids_gateway (gateway_msg_id, celular_id, msg_id) SELECT gateway_msg_id, celular_id, msg_id FROM ${from}
      WHERE gateway_msg_id IS NOT NULL ON CONFLICT DO NOTHING`;

/** `msg_id = ` the message of a line with a gateway id (parameters: gateway id, line). */
export const byGateway = (gid: string, line: string) =>
  `msg_id = (SELECT msg_id FROM ids_gateway WHERE gateway_msg_id = ${gid} AND celular_id = ${line} LIMIT 1)`;

/**
 * The side tables filled from mensajes, for a store whose rows were written
 * without them (the SQLite import): slots since `$1` (slotsForgottenBefore).
 */
export const FILL_STATE_PATHS = [
  `INSERT INTO mensajes_pendientes (seq, msg_id, celular_id, modo, cupo_at, proximo_intento_at)
     SELECT seq, msg_id, celular_id, modo, cupo_at, proximo_intento_at FROM mensajes WHERE estado = 'pendiente'`,
  `INSERT INTO cupos (seq, celular_id, cupo_at) SELECT seq, celular_id, cupo_at FROM mensajes WHERE cupo_at >= $1`,
  `INSERT INTO ids_gateway (gateway_msg_id, celular_id, msg_id)
     SELECT gateway_msg_id, celular_id, msg_id FROM mensajes WHERE gateway_msg_id IS NOT NULL ON CONFLICT DO NOTHING`,
];
