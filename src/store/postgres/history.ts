import type { HistoryFilter, MessagesStore } from '../../core/ports/messages.js';
import type { MensajeRow } from '../../core/ports/model.js';
import type { Db } from './db.js';
import { QUARTER_MS, onQuarter } from '../quarters.js';
import { conditions, listPage, type Query, type Where } from './listing.js';
import { COLS } from './messages.js';

/**
 * One page of history, newest first, with the total, as on SQLite: the
 * client (and the line, or the recipient) lead an index that ends with the
 * page's order (created_at, seq), and the total comes from the counts the
 * triggers keep whenever they answer exactly. estado is in no index (D-73:
 * a message's changing state touches none): the page filters it while
 * reading the date order, and stops at the count of matches when the kept
 * counts know it.
 */

/** Whether the counts by line and estado answer the filter's total exactly: no recipient, no dates. */
const keptCount = (f: HistoryFilter) => f.destinatario === undefined && f.desde === undefined && f.hasta === undefined;

/** The total's query: from the kept counts where they answer exactly (see sqlite/history.ts), otherwise a count over the filter's index range. */
function totalQuery(f: HistoryFilter, rowsWhere: Where): Query {
  if (keptCount(f)) {
    const k = conditions([
      ['cliente_id = ?', f.cliente_id],
      ['celular_id = ?', f.celular_id],
      ['estado = ?', f.estado],
    ]);
    return { sql: `SELECT COALESCE(SUM(n), 0)::bigint AS total FROM conteos_mensajes WHERE ${k.where}`, params: k.params };
  }
  if (f.destinatario === undefined && f.celular_id === undefined && onQuarter(f.desde) && onQuarter(f.hasta)) {
    const k = conditions([
      ['cliente_id = ?', f.cliente_id],
      ['cuarto >= ?', f.desde === undefined ? undefined : f.desde / QUARTER_MS],
      ['cuarto < ?', f.hasta === undefined ? undefined : f.hasta / QUARTER_MS],
      ['estado = ?', f.estado],
    ]);
    return { sql: `SELECT COALESCE(SUM(n), 0)::bigint AS total FROM conteos_cuartos WHERE ${k.where}`, params: k.params };
  }
  return { sql: `SELECT COUNT(*) AS total FROM mensajes WHERE ${rowsWhere.where}`, params: rowsWhere.params };
}

/** MessagesStore's history page over one pool. */
export function history(db: Db): Pick<MessagesStore, 'listMensajes'> {
  return {
    async listMensajes(f: HistoryFilter): Promise<{ total: number; rows: MensajeRow[] }> {
      const w = conditions([
        ['cliente_id = ?', f.cliente_id],
        ['celular_id = ?', f.celular_id],
        ['estado = ?', f.estado],
        ['destinatario = ?', f.destinatario],
        ['created_at >= ?', f.desde],
        ['created_at < ?', f.hasta],
        // Keyset: the rows after a given one, by the page's own index order (its msg_id found by its key).
        ['(created_at, seq) < (SELECT created_at, seq FROM mensajes WHERE msg_id = ?)', f.despues],
      ]);
      const total = f.sinTotal ? null : totalQuery(f, w);
      // estado is in no index (D-73): with a kept count, the page stops at the last message in that state. The count's
      // parameters are the page's own first ones (client, line, estado: no recipient, no dates), read in the page's statement.
      const bound = total && f.estado !== undefined && keptCount(f) ? `SELECT total FROM (${total.sql}) k` : undefined;
      return listPage<MensajeRow>(db, `SELECT ${COLS} FROM mensajes`, w, 'created_at DESC, seq DESC', total, f, bound);
    },
  };
}
