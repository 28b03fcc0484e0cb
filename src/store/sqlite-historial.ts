import type Database from 'better-sqlite3';
import { stmt } from './statements.js';
import type { HistoryFilter, MensajeRow } from '../core/ports.js';

/**
 * One page of history, newest first, with the total. Every filter is a
 * column of an index that leads with the client or the line and ends with
 * created_at (migration 2), so a page and its count stay fast at millions of rows.
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
  const { total } = stmt(db, `SELECT COUNT(*) AS total FROM mensajes WHERE ${sql}`).get(params) as { total: number };
  const rows = stmt(db, `SELECT * FROM mensajes WHERE ${sql} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`)
    .all(params) as MensajeRow[];
  return { total, rows };
}
