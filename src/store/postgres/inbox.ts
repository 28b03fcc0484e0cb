import type { InboxFilter, MessagesStore, NewRecibido } from '../../core/ports/messages.js';
import type { RecibidoRow } from '../../core/ports/model.js';
import type { Client, Db } from './db.js';
import { QUARTER_MS, onQuarter } from '../quarters.js';
import { conditions, listPage, type Query, type Where } from './listing.js';

/**
 * The inbox in PostgreSQL, as on SQLite (docs/design.md §10): each page's
 * filters are an equality prefix of an index ending with (created_at, id),
 * which gives the page's order (migration 7); its total comes from the
 * counts triggers keep (migration 8) unless a sender is named, and then is
 * counted over that sender's index range.
 */

/** The total's query: from the kept counts without a sender (see sqlite/inbox.ts), otherwise a count over the page's index range. */
function totalQuery(f: InboxFilter, rowsWhere: Where): Query {
  if (f.de === undefined) {
    if (f.desde === undefined && f.hasta === undefined) {
      const k = conditions([
        ['cliente_id = ?', f.cliente_id],
        ['celular_id = ?', f.celular_id],
      ]);
      return { sql: `SELECT COALESCE(SUM(n), 0)::bigint AS total FROM conteos_recibidos WHERE ${k.where}`, params: k.params };
    }
    if (onQuarter(f.desde) && onQuarter(f.hasta)) {
      const k = conditions([
        ['cliente_id = ?', f.cliente_id],
        ['celular_id = ?', f.celular_id],
        ['cuarto >= ?', f.desde === undefined ? undefined : f.desde / QUARTER_MS],
        ['cuarto < ?', f.hasta === undefined ? undefined : f.hasta / QUARTER_MS],
      ]);
      return { sql: `SELECT COALESCE(SUM(n), 0)::bigint AS total FROM conteos_recibidos_cuartos WHERE ${k.where}`, params: k.params };
    }
  }
  return { sql: `SELECT COUNT(*) AS total FROM recibidos WHERE ${rowsWhere.where}`, params: rowsWhere.params };
}

const COLS = 'id, cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at';

/** Keeps one incoming message; called inside journalInbound's transaction. */
export async function insertRecibido(c: Client, r: NewRecibido, now: number): Promise<void> {
  await c.query(
    `INSERT INTO recibidos (cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [r.cliente_id, r.celular_id, r.de, r.tipo, r.texto, r.media ? JSON.stringify(r.media) : null, r.gateway_msg_id, r.fecha, now],
  );
}

/** MessagesStore's inbox methods over one pool (the insert is made inside journalInbound). */
export function inbox(db: Db): Pick<MessagesStore, 'listRecibidos' | 'purgeRecibidos'> {
  return {
    async listRecibidos(f: InboxFilter): Promise<{ total: number; rows: RecibidoRow[] }> {
      const w = conditions([
        ['cliente_id = ?', f.cliente_id],
        ['celular_id = ?', f.celular_id],
        ['de = ?', f.de],
        ['created_at >= ?', f.desde],
        ['created_at < ?', f.hasta],
      ]);
      return listPage<RecibidoRow>(db, `SELECT ${COLS} FROM recibidos`, w, 'created_at DESC, id DESC', totalQuery(f, w), f);
    },
    /**
     * The oldest rows created before `before`, at most `limit`; rows another node
     * is removing are skipped, never waited on. The delete's statement trigger
     * takes the batch off the counts in the same transaction.
     */
    async purgeRecibidos(before: number, limit: number): Promise<number> {
      const r = await db.query(
        `DELETE FROM recibidos WHERE id IN (
       SELECT id FROM recibidos WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      return r.rowCount ?? 0;
    },
  };
}
