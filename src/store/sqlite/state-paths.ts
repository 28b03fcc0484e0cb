import type Database from 'better-sqlite3';
import { slotsForgottenBefore } from '../../core/sending/caps.js';
import { stmt } from './statements.js';

/**
 * The side tables every changing part of a message is found through (D-74,
 * migration 20): the queue, the direct sends in flight, the caps slots, the
 * gateway ids. `mensajes` is written once with its history indexes only; each
 * statement that changes a message's state writes the matching row here in
 * the same transaction.
 */
type DB = Database.Database;

/** The tables only SQLite keeps (PostgreSQL reads the same paths from its own indexes): a move leaves them behind. */
export const SQLITE_ACCESS_PATHS = ['cola', 'cola_lineas', 'directos', 'cupos', 'gateway_ids'] as const;

/**
 * A message accepted `pendiente`: queued ones join their line's queue, with their recipient, when scheduled their due
 * time as their next attempt (D-162), and their validity end, the expiry sweep's index (migration 30); direct ones are
 * in flight until their slot's end.
 */
export function enterPending(
  db: DB,
  m: {
    msg_id: string;
    celular_id: number;
    modo: string;
    cupo_at: number | null;
    destinatario: string;
    enviar_en?: number | null;
    vigencia_hasta?: number | null;
  },
): void {
  if (m.modo === 'cola')
    stmt(db, 'INSERT INTO cola (msg_id, celular_id, destinatario, proximo_intento_at, vence_at, enviar_en) VALUES (?, ?, ?, ?, ?, ?)').run(
      m.msg_id,
      m.celular_id,
      m.destinatario,
      m.enviar_en ?? null,
      m.vigencia_hasta ?? null,
      m.enviar_en ?? null,
    );
  else if (m.cupo_at !== null) stmt(db, 'INSERT INTO directos (msg_id, cupo_at) VALUES (?, ?)').run(m.msg_id, m.cupo_at);
}

/** A message leaves `pendiente`. */
export function leavePending(db: DB, m: { msg_id: string; modo: string }): void {
  stmt(db, m.modo === 'cola' ? 'DELETE FROM cola WHERE msg_id = ?' : 'DELETE FROM directos WHERE msg_id = ?').run(m.msg_id);
}

/** Mirrors a message's `cupo_at` after a change: a slot held, moved, or given back. */
export function keepSlot(db: DB, m: { msg_id: string; celular_id: number; cupo_at: number | null }): void {
  if (m.cupo_at === null) stmt(db, 'DELETE FROM cupos WHERE msg_id = ?').run(m.msg_id);
  else
    stmt(db, 'INSERT INTO cupos (msg_id, celular_id, cupo_at) VALUES (?, ?, ?) ON CONFLICT (msg_id) DO UPDATE SET cupo_at = excluded.cupo_at').run(
      m.msg_id,
      m.celular_id,
      m.cupo_at,
    );
}

/**
 * A line takes a slot: the ones that count in no window any more go, a range
 * at the head of its slots index (about one a send; after a day idle, a day's
 * worth once, bounded by the line's caps).
 */
export function pruneSlots(db: DB, celularId: number, now: number): void {
  stmt(db, 'DELETE FROM cupos WHERE celular_id = ? AND cupo_at <= ?').run(celularId, slotsForgottenBefore(now));
}

/** A sent message's gateway id, for its receipts. */
export function mapGatewayId(db: DB, m: { msg_id: string; celular_id: number; gateway_msg_id: string | null }): void {
  if (m.gateway_msg_id !== null)
    stmt(db, 'INSERT OR IGNORE INTO gateway_ids (gateway_msg_id, celular_id, msg_id) VALUES (?, ?, ?)').run(m.gateway_msg_id, m.celular_id, m.msg_id);
}
