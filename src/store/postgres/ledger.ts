import type { LedgerStore, ConsumoLinea, MovimientoFilter, MovimientoRow } from '../../core/ports/accounts.js';
import { MOVEMENT_READ, MOVEMENT_TIPO_SQL } from '../movement-sql.js';
import type { Db } from './db.js';

/**
 * The ledger's listing and a month's consumption per line, as on SQLite
 * (sqlite/ledger.ts): a page in its order (fecha, id) from the index that
 * holds its filter, the line's own or the partial one of refunds or manual
 * changes (their predicate written as the index's, store/movement-sql.ts),
 * the total counted up to a bound over the same index.
 */
export function ledger(db: Db): LedgerStore {
  return {
    async listMovimientos(f: MovimientoFilter): Promise<{ total: number | null; rows: MovimientoRow[] }> {
      const params: unknown[] = [];
      const ph = (v: unknown) => `$${params.push(v)}`;
      const where = [
        `cliente_id = ${ph(f.cliente_id)}`,
        f.celular_id !== undefined ? `celular_id = ${ph(f.celular_id)}` : '',
        f.tipo !== undefined ? MOVEMENT_TIPO_SQL[f.tipo] : '',
        f.desde !== undefined ? `fecha >= ${ph(f.desde)}` : '',
        f.hasta !== undefined ? `fecha < ${ph(f.hasta)}` : '',
        f.despues !== undefined ? `(fecha, id) < (${ph(f.despues.fecha)}::bigint, ${ph(f.despues.id)}::bigint)` : '',
      ]
        .filter(Boolean)
        .join(' AND ');
      const w = { params };
      const n = w.params.length;
      // The count stops at the bound whichever path the planner takes (a client's index, or the table while the client holds most of it).
      const [counted, rows] = await Promise.all([
        f.totalHasta === undefined
          ? Promise.resolve(null)
          : db.one<{ n: number }>(`SELECT COUNT(*)::bigint AS n FROM (SELECT 1 FROM movimientos_saldo WHERE ${where} LIMIT $${n + 1}) k`, [
              ...w.params,
              f.totalHasta + 1,
            ]),
        db.q<MovimientoRow>(`SELECT ${MOVEMENT_READ} FROM movimientos_saldo WHERE ${where} ORDER BY fecha DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [
          ...w.params,
          f.por_pagina,
          (f.page - 1) * f.por_pagina,
        ]),
      ]);
      const total = f.totalHasta === undefined ? -1 : counted!.n > f.totalHasta ? null : counted!.n;
      return { total, rows };
    },
    async consumoLineas(clienteId: number, desde: number, hasta: number): Promise<ConsumoLinea[]> {
      // The client's lines, each with one range of its messages' dates (mensajes_cliente_celular_fecha): a line's month, never its history.
      return db.q<ConsumoLinea>(
        `SELECT c.id AS celular_id, c.numero, k.mensajes, k.monto FROM celulares c
         CROSS JOIN LATERAL (
           SELECT COUNT(*) FILTER (WHERE m.estado <> 'error')::bigint AS mensajes, COALESCE(SUM(m.cobrado), 0)::bigint AS monto
           FROM mensajes m WHERE m.cliente_id = c.cliente_id AND m.celular_id = c.id AND m.created_at >= $2 AND m.created_at < $3
         ) k
         WHERE c.cliente_id = $1 ORDER BY c.id`,
        [clienteId, desde, hasta],
      );
    },
  };
}
