import type { SlotValue } from '../../core/billing/recipes.js';
import { qualified } from './db.js';

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
export const stateColsOf = (alias: string) => qualified(STATE_COLS, alias);

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

/**
 * The side tables filled from mensajes, for a store whose rows were written
 * without them (the SQLite import): slots since `$1` (slotsForgottenBefore).
 */
export const FILL_STATE_PATHS = [
  `INSERT INTO mensajes_pendientes (seq, msg_id, celular_id, modo, cupo_at, proximo_intento_at, vence_at, destinatario, enviar_en)
     SELECT seq, msg_id, celular_id, modo, cupo_at, CASE WHEN intentos > 0 OR enviar_en IS NOT NULL THEN proximo_intento_at END,
       CASE WHEN modo = 'cola' THEN vigencia_hasta END, destinatario, CASE WHEN modo = 'cola' THEN enviar_en END
     FROM mensajes WHERE estado = 'pendiente'`,
  `INSERT INTO cupos (seq, celular_id, cupo_at) SELECT seq, celular_id, cupo_at FROM mensajes WHERE cupo_at >= $1`,
  `INSERT INTO ids_gateway (gateway_msg_id, celular_id, msg_id)
     SELECT gateway_msg_id, celular_id, msg_id FROM mensajes WHERE gateway_msg_id IS NOT NULL ON CONFLICT DO NOTHING`,
];
