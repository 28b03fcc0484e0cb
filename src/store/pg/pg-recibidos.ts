import type { InboxFilter, NewRecibido, RecibidoRow } from '../../core/ports.js';
import type { Client, Db } from './pg-db.js';

/**
 * The inbox in PostgreSQL, as on SQLite (docs/design.md §10): each page's
 * filters are an equality prefix of an index ending with (created_at, id),
 * which gives the page's order and its total's range (migration 7).
 */

const COLS = 'id, cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at';

/** Keeps one incoming message; called inside journalInbound's transaction. */
export async function insertRecibido(c: Client, r: NewRecibido, now: number): Promise<void> {
  await c.query(
    `INSERT INTO recibidos (cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [r.cliente_id, r.celular_id, r.de, r.tipo, r.texto, r.media ? JSON.stringify(r.media) : null, r.gateway_msg_id, r.fecha, now],
  );
}

export async function listRecibidos(db: Db, f: InboxFilter): Promise<{ total: number; rows: RecibidoRow[] }> {
  const pairs: Array<[string, unknown]> = [
    ['cliente_id = ?', f.cliente_id],
    ['celular_id = ?', f.celular_id],
    ['de = ?', f.de],
    ['created_at >= ?', f.desde],
    ['created_at < ?', f.hasta],
  ];
  const present = pairs.filter(([, v]) => v !== undefined);
  const where = present.map(([sql], i) => sql.replace('?', `$${i + 1}`)).join(' AND ');
  const params = present.map(([, v]) => v);
  const n = params.length;
  const [[total], rows] = await Promise.all([
    db.q<{ total: number }>(`SELECT COUNT(*) AS total FROM recibidos WHERE ${where}`, params),
    db.q<RecibidoRow>(`SELECT ${COLS} FROM recibidos WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [
      ...params,
      f.por_pagina,
      (f.page - 1) * f.por_pagina,
    ]),
  ]);
  return { total: total!.total, rows };
}

/** The oldest rows created before `before`, at most `limit`; rows another node is removing are skipped, never waited on. */
export async function purgeRecibidos(db: Db, before: number, limit: number): Promise<number> {
  const r = await db.query(
    `DELETE FROM recibidos WHERE id IN (
       SELECT id FROM recibidos WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [before, limit],
  );
  return r.rowCount ?? 0;
}
