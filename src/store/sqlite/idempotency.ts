import type { AcceptedMensaje, IdemAnswer, IdemBinding, IdemRow, MessagesStore } from '../../core/ports/messages.js';
import type Database from 'better-sqlite3';
import { IDEM_PURGE_BATCH } from '../../core/sending/idempotency.js';
import { grouped, stmt } from './statements.js';

/**
 * Idempotency-Keys in SQLite (migration 12; the rules are core/sending/idempotency.ts).
 * A key is bound inside the acceptance's transaction (sqlite/messages.ts),
 * which also removes a few expired keys through the expiry index.
 */
type DB = Database.Database;

/** Whether the client's key is bound and unexpired (read inside the acceptance's transaction). */
export function keyTaken(db: DB, clienteId: number, clave: string, now: number): boolean {
  return stmt(db, 'SELECT 1 FROM idempotencia WHERE cliente_id = ? AND clave = ? AND expira_at > ?').get(clienteId, clave, now) !== undefined;
}

/** Binds the key to the accepted message with its answer; an expired binding of the key is replaced. */
export function bindKey(db: DB, idem: IdemBinding, accepted: AcceptedMensaje, now: number): void {
  const a = idem.answer(accepted);
  const m = accepted.mensaje;
  const info = stmt(
    db,
    `INSERT INTO idempotencia (cliente_id, clave, huella, msg_id, status, body, created_at, expira_at)
     VALUES (@cliente_id, @clave, @huella, @msg_id, @status, @body, @now, @expira_at)
     ON CONFLICT (cliente_id, clave) DO UPDATE SET huella = excluded.huella, msg_id = excluded.msg_id, status = excluded.status,
       body = excluded.body, created_at = excluded.created_at, expira_at = excluded.expira_at
     WHERE idempotencia.expira_at <= excluded.created_at`,
  ).run({ cliente_id: m.cliente_id, clave: idem.clave, huella: idem.huella, msg_id: m.msg_id, status: a.status, body: a.body, now, expira_at: idem.expira_at });
  // The caller checked the key under the same write lock: a live binding here is a bug, and rolls the acceptance back.
  if (info.changes === 0) throw new Error(`Idempotency-Key of client ${m.cliente_id} bound twice`);
  stmt(db, 'DELETE FROM idempotencia WHERE rowid IN (SELECT rowid FROM idempotencia WHERE expira_at <= ? LIMIT CAST(? AS INTEGER))').run(now, IDEM_PURGE_BATCH);
}

/** MessagesStore's Idempotency-Key methods over one connection (the binding itself is made inside acceptMensaje). */
export function idempotency(db: DB): Pick<MessagesStore, 'idemGet' | 'idemFinish' | 'idemRelease'> {
  return {
    async idemGet(clienteId: number, clave: string, now: number): Promise<IdemRow | null> {
      return (
        (stmt(db, 'SELECT * FROM idempotencia WHERE cliente_id = ? AND clave = ? AND expira_at > ?').get(clienteId, clave, now) as IdemRow | undefined) ?? null
      );
    },
    idemFinish(clienteId: number, clave: string, msgId: string, answer: IdemAnswer): Promise<void> {
      return grouped(db, () => {
        stmt(db, 'UPDATE idempotencia SET status = ?, body = ? WHERE cliente_id = ? AND clave = ? AND msg_id = ?').run(
          answer.status,
          answer.body,
          clienteId,
          clave,
          msgId,
        );
      });
    },
    idemRelease(clienteId: number, clave: string, msgId: string): Promise<void> {
      return grouped(db, () => {
        stmt(db, 'DELETE FROM idempotencia WHERE cliente_id = ? AND clave = ? AND msg_id = ?').run(clienteId, clave, msgId);
      });
    },
  };
}
