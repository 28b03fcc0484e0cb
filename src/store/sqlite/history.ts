import type { HistoryFilter, MessagesStore } from '../../core/ports/messages.js';
import type Database from 'better-sqlite3';
import { QUARTER_MS, onQuarter } from '../quarters.js';
import { stmt } from './statements.js';
import type { MensajeRow } from '../../core/ports/model.js';

/**
 * One page of history, newest first, with the total. Three indexes serve it
 * (D-74, migration 20): the client's, the line's and the recipient's dates,
 * each in created_at then rowid order, so a page is read in its order. A
 * state is a filter over those (no index on a column that changes after the
 * insert); the total is read from the kept counts when no recipient filter
 * applies and the dates, if any, fall on quarter hours (and no line is asked
 * with them), and otherwise counted over the filter's index range.
 */

/** Whether the counts by line and state answer the filter's total exactly: no recipient, no dates. */
const keptCount = (f: HistoryFilter) => f.destinatario === undefined && f.desde === undefined && f.hasta === undefined;

/**
 * The total's query. From the counts kept by triggers (migrations 9 and 21)
 * where they answer exactly: no recipient filter, and either no dates (per
 * line and state) or whole-quarter dates without a line (per client, quarter
 * hour, which every zone's midnight is, and state). Otherwise a count over
 * the filter's index range.
 */
function totalSql(f: HistoryFilter, where: string): string {
  if (keptCount(f)) return `SELECT COALESCE(SUM(n), 0) AS total FROM conteos_mensajes WHERE ${where}`;
  if (f.destinatario === undefined && f.celular_id === undefined && onQuarter(f.desde) && onQuarter(f.hasta)) {
    const range = [
      'cliente_id = @cliente_id',
      f.desde !== undefined ? `cuarto >= @desde / ${QUARTER_MS}` : '',
      f.hasta !== undefined ? `cuarto < @hasta / ${QUARTER_MS}` : '',
      f.estado !== undefined ? 'estado = @estado' : '',
    ].filter(Boolean);
    return `SELECT COALESCE(SUM(n), 0) AS total FROM conteos_cuartos WHERE ${range.join(' AND ')}`;
  }
  return `SELECT COUNT(*) AS total FROM mensajes WHERE ${where}`;
}

/** MessagesStore's history page over one connection. */
export function history(db: Database.Database): Pick<MessagesStore, 'listMensajes'> {
  return {
    async listMensajes(f: HistoryFilter): Promise<{ total: number; rows: MensajeRow[] }> {
      const where: string[] = ['cliente_id = @cliente_id'];
      // A line with a recipient reads the recipient's dates (fewer rows than the line's): `+` keeps the line's index out of the choice.
      if (f.celular_id !== undefined) where.push(f.destinatario !== undefined ? '+celular_id = @celular_id' : 'celular_id = @celular_id');
      if (f.estado !== undefined) where.push('estado = @estado');
      if (f.destinatario !== undefined) where.push('destinatario = @destinatario');
      if (f.desde !== undefined) where.push('created_at >= @desde');
      if (f.hasta !== undefined) where.push('created_at < @hasta');
      // Keyset: the rows after a given one, by the page's own index order (its msg_id found by its unique index).
      if (f.despues !== undefined) where.push('(created_at, rowid) < (SELECT created_at, rowid FROM mensajes WHERE msg_id = @despues)');
      const sql = where.join(' AND ');
      const offset = (f.page - 1) * f.por_pagina;
      // The total and the page in one snapshot, so a kept count can bound the page (the background thread writes too).
      return db.transaction(() => {
        const { total } = f.sinTotal ? { total: -1 } : (stmt(db, totalSql(f, sql)).get(f) as { total: number });
        // A state is in no index: with its kept count, the page stops at the last message in that state instead of
        // reading the rest of the dates for matches that are not there (none at all, past the last page).
        const limit = f.estado !== undefined && keptCount(f) && !f.sinTotal ? Math.min(f.por_pagina, Math.max(0, total - offset)) : f.por_pagina;
        const rows =
          limit === 0
            ? []
            : (stmt(
                db,
                `SELECT * FROM mensajes WHERE ${sql} ORDER BY created_at DESC, rowid DESC LIMIT CAST(@limit AS INTEGER) OFFSET CAST(@offset AS INTEGER)`,
              ).all({
                ...f,
                offset,
                limit,
              }) as MensajeRow[]);
        return { total, rows };
      })();
    },
  };
}
