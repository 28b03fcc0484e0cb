import type { InboxFilter, MessagesStore, NewRecibido } from '../../core/ports/messages.js';
import type Database from 'better-sqlite3';
import { QUARTER_MS, onQuarter } from '../quarters.js';
import { grouped, stmt } from './statements.js';
import type { RecibidoRow } from '../../core/ports/model.js';

/**
 * The inbox in SQLite (docs/design.md §10). Every filter of a page is an
 * equality prefix of an index that ends with created_at (migration 14), whose
 * entries end with the rowid: the page is read in order from the index. Its
 * total comes from the counts triggers keep (migration 15) unless a sender is
 * named; then it is counted over that sender's index range (covered), which
 * is bounded by one conversation, never by the client's inbox.
 */
type DB = Database.Database;

/** Keeps one incoming message; called inside journalInbound's transaction. */
export function insertRecibido(db: DB, r: NewRecibido, now: number): void {
  stmt(
    db,
    `INSERT INTO recibidos (cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at)
     VALUES (@cliente_id, @celular_id, @de, @tipo, @texto, @media, @gateway_msg_id, @fecha, @now)`,
  ).run({ ...r, media: r.media ? JSON.stringify(r.media) : null, now });
}

/**
 * The total's query. Without a sender, from the kept counts: per line when
 * no dates apply, per line and quarter hour for whole-quarter dates (every
 * zone's midnight is one). Otherwise a count over the page's own index range.
 */
function totalSql(f: InboxFilter, index: string, where: string): string {
  if (f.de === undefined) {
    const line = f.celular_id !== undefined ? ' AND celular_id = @celular_id' : '';
    if (f.desde === undefined && f.hasta === undefined)
      return `SELECT COALESCE(SUM(n), 0) AS total FROM conteos_recibidos WHERE cliente_id = @cliente_id${line}`;
    if (onQuarter(f.desde) && onQuarter(f.hasta)) {
      const range = [
        f.desde !== undefined ? ` AND cuarto >= @desde / ${QUARTER_MS}` : '',
        f.hasta !== undefined ? ` AND cuarto < @hasta / ${QUARTER_MS}` : '',
      ].join('');
      return `SELECT COALESCE(SUM(n), 0) AS total FROM conteos_recibidos_cuartos WHERE cliente_id = @cliente_id${line}${range}`;
    }
  }
  return `SELECT COUNT(*) AS total FROM recibidos INDEXED BY ${index} WHERE ${where}`;
}

/** MessagesStore's inbox methods over one connection (the insert is made inside journalInbound). */
export function inbox(db: DB): Pick<MessagesStore, 'listRecibidos' | 'purgeRecibidos'> {
  return {
    async listRecibidos(f: InboxFilter): Promise<{ total: number; rows: RecibidoRow[] }> {
      const where: string[] = ['cliente_id = @cliente_id'];
      if (f.celular_id !== undefined) where.push('celular_id = @celular_id');
      if (f.de !== undefined) where.push('de = @de');
      if (f.desde !== undefined) where.push('created_at >= @desde');
      if (f.hasta !== undefined) where.push('created_at < @hasta');
      const sql = where.join(' AND ');
      // Named, not left to the planner: without ANALYZE statistics it takes a date range on
      // (cliente_id, created_at) for narrower than the line's or the sender's equality, and would
      // then read every message of the client in those days.
      const index = `recibidos_cliente${f.celular_id !== undefined ? '_celular' : ''}${f.de !== undefined ? '_de' : ''}_fecha`;
      const params = { ...f, offset: (f.page - 1) * f.por_pagina, limit: f.por_pagina };
      const { total } = stmt(db, totalSql(f, index, sql)).get(params) as { total: number };
      const rows = stmt(
        db,
        `SELECT * FROM recibidos INDEXED BY ${index} WHERE ${sql} ORDER BY created_at DESC, id DESC LIMIT CAST(@limit AS INTEGER) OFFSET CAST(@offset AS INTEGER)`,
      ).all(params) as RecibidoRow[];
      return { total, rows };
    },
    /** The oldest rows created before `before`, at most `limit`, through the created_at index; the delete trigger takes them off the counts in the same statement. */
    purgeRecibidos(before: number, limit: number): Promise<number> {
      return grouped(db, () => {
        return stmt(db, 'DELETE FROM recibidos WHERE id IN (SELECT id FROM recibidos WHERE created_at < ? ORDER BY created_at LIMIT CAST(? AS INTEGER))').run(
          before,
          limit,
        ).changes;
      });
    },
  };
}
