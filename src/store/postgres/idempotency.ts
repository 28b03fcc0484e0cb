import type { AcceptedMensaje, IdemAnswer, IdemBinding, IdemRow, MessagesStore } from '../../core/ports/messages.js';
import { IDEM_PURGE_BATCH } from '../../core/idempotency.js';
import { type Client, type Db, LOCK, row } from './db.js';

/**
 * Idempotency-Keys in PostgreSQL (migration 5; the rules are
 * core/idempotency.ts). An acceptance that binds a key takes the key's
 * transaction-scoped advisory lock before any row lock, then reads the key:
 * two nodes accepting with one key take turns, and the second sees the
 * first's binding once it has committed.
 */

/** Takes the key's lock and says whether it is bound and unexpired. */
export async function lockKey(c: Client, clienteId: number, clave: string, now: number): Promise<boolean> {
  await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK.idempotencyKey, `${clienteId}:${clave}`]);
  return (await row(c, 'SELECT 1 FROM idempotencia WHERE cliente_id = $1 AND clave = $2 AND expira_at > $3', [clienteId, clave, now])) !== null;
}

/** Binds the key (its lock held, found free) to the accepted message with its answer; an expired binding is replaced. */
export async function bindKey(c: Client, idem: IdemBinding, accepted: AcceptedMensaje, now: number): Promise<void> {
  const a = idem.answer(accepted);
  const m = accepted.mensaje;
  const r = await c.query(
    `INSERT INTO idempotencia (cliente_id, clave, huella, msg_id, status, body, created_at, expira_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (cliente_id, clave) DO UPDATE SET huella = excluded.huella, msg_id = excluded.msg_id, status = excluded.status,
       body = excluded.body, created_at = excluded.created_at, expira_at = excluded.expira_at
     WHERE idempotencia.expira_at <= excluded.created_at`,
    [m.cliente_id, idem.clave, idem.huella, m.msg_id, a.status, a.body, now, idem.expira_at],
  );
  // Checked free under the key's lock: a live binding here is a bug, and rolls the acceptance back.
  if (!r.rowCount) throw new Error(`Idempotency-Key of client ${m.cliente_id} bound twice`);
  // Rows another transaction is removing are skipped, not waited for.
  await c.query(
    `DELETE FROM idempotencia WHERE (cliente_id, clave) IN (
       SELECT cliente_id, clave FROM idempotencia WHERE expira_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [now, IDEM_PURGE_BATCH],
  );
}

/** MessagesStore's Idempotency-Key methods over one pool (the binding itself is made inside acceptMensaje). */
export function idempotency(db: Db): Pick<MessagesStore, 'idemGet' | 'idemFinish' | 'idemRelease'> {
  return {
    async idemGet(clienteId: number, clave: string, now: number): Promise<IdemRow | null> {
      return db.one<IdemRow>('SELECT * FROM idempotencia WHERE cliente_id = $1 AND clave = $2 AND expira_at > $3', [clienteId, clave, now]);
    },
    async idemFinish(clienteId: number, clave: string, msgId: string, answer: IdemAnswer): Promise<void> {
      await db.query('UPDATE idempotencia SET status = $4, body = $5 WHERE cliente_id = $1 AND clave = $2 AND msg_id = $3', [
        clienteId,
        clave,
        msgId,
        answer.status,
        answer.body,
      ]);
    },
    async idemRelease(clienteId: number, clave: string, msgId: string): Promise<void> {
      await db.query('DELETE FROM idempotencia WHERE cliente_id = $1 AND clave = $2 AND msg_id = $3', [clienteId, clave, msgId]);
    },
  };
}
