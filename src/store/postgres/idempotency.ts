import type { IdemAnswer, IdemRow, MessagesStore } from '../../core/ports/messages.js';
import type { Db } from './db.js';

/**
 * Idempotency-Keys in PostgreSQL (migration 5; the rules are
 * core/sending/idempotency.ts). An acceptance that binds a key (postgres/accept.ts)
 * takes the key's transaction-scoped advisory lock before any row lock and
 * binds it only where no live binding is: two nodes accepting with one key
 * take turns, and the second finds the first's binding once it has committed.
 */

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
