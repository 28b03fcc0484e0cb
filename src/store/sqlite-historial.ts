import type Database from 'better-sqlite3';
import { stmt } from './statements.js';
import type { HistoryFilter, MensajeRow } from '../core/ports.js';

/**
 * One page of history, newest first, with the total. Every filter is a
 * column of an index that leads with the client or the line and ends with
 * created_at (migrations 2 and 3), so a page stays fast at millions of rows;
 * the total is read from the kept counts when no date or recipient filter
 * applies, and otherwise counted over the filter's index range.
 */
export function listMensajes(db: Database.Database, f: HistoryFilter): { total: number; rows: MensajeRow[] } {
  const where: string[] = ['cliente_id = @cliente_id'];
  if (f.celular_id !== undefined) where.push('celular_id = @celular_id');
  if (f.estado !== undefined) where.push('estado = @estado');
  if (f.destinatario !== undefined) where.push('destinatario = @destinatario');
  if (f.desde !== undefined) where.push('created_at >= @desde');
  if (f.hasta !== undefined) where.push('created_at < @hasta');
  const sql = where.join(' AND ');
  const params = { ...f, offset: (f.page - 1) * f.por_pagina, limit: f.por_pagina };
  // Without a date or recipient filter the total is a sum of kept counts (migration 9), whatever the history size.
  const counted = f.destinatario === undefined && f.desde === undefined && f.hasta === undefined;
  const { total } = stmt(db, counted ? `SELECT COALESCE(SUM(n), 0) AS total FROM conteos_mensajes WHERE ${sql}` : `SELECT COUNT(*) AS total FROM mensajes WHERE ${sql}`).get(
    params,
  ) as { total: number };
  const rows = stmt(db, `SELECT * FROM mensajes WHERE ${sql} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`)
    .all(params) as MensajeRow[];
  return { total, rows };
}
