import type Database from 'better-sqlite3';
import type { LedgerStore, ConsumoLinea, MovimientoFilter, MovimientoRow } from '../../core/ports/accounts.js';
import { MOVEMENT_READ, MOVEMENT_TIPO_SQL } from '../movement-sql.js';
import { stmt } from './statements.js';

/**
 * The ledger's listing and a month's consumption per line (D-104, D-105).
 * A page is read in its order (fecha, id) from the one index that holds its
 * filter, named (INDEXED BY) so that no guess of the planner's reads a
 * client's whole ledger for a line's or a refund's page: a refund or a
 * manual change by its partial index (few rows, a line's among them
 * filtered), a line's by its own, anything else by the client's.
 */

function indexOf(f: MovimientoFilter): string {
  if (f.tipo === 'reembolso') return 'movimientos_reembolsos';
  if (f.tipo === 'manual') return 'movimientos_manuales';
  return f.celular_id !== undefined ? 'movimientos_celular_fecha' : 'movimientos_cliente_fecha';
}

export function ledger(db: Database.Database): LedgerStore {
  return {
    async listMovimientos(f: MovimientoFilter): Promise<{ total: number | null; rows: MovimientoRow[] }> {
      const where = [
        'cliente_id = @cliente_id',
        f.celular_id !== undefined ? 'celular_id = @celular_id' : '',
        f.tipo !== undefined ? MOVEMENT_TIPO_SQL[f.tipo] : '',
        f.desde !== undefined ? 'fecha >= @desde' : '',
        f.hasta !== undefined ? 'fecha < @hasta' : '',
        f.despues !== undefined ? '(fecha, id) < (@despuesFecha, @despuesId)' : '',
      ]
        .filter(Boolean)
        .join(' AND ');
      const from = `movimientos_saldo INDEXED BY ${indexOf(f)}`;
      const params = {
        cliente_id: f.cliente_id,
        celular_id: f.celular_id,
        desde: f.desde,
        hasta: f.hasta,
        despuesFecha: f.despues?.fecha,
        despuesId: f.despues?.id,
      };
      const named = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
      // The total and the page in one snapshot (the background thread writes too).
      return db.transaction(() => {
        let total: number | null = -1;
        if (f.totalHasta !== undefined) {
          // Counted over the page's index, at most one row past the bound: a big ledger costs the bound, not its size.
          const { n } = stmt(db, `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${from} WHERE ${where} LIMIT CAST(@cap AS INTEGER))`).get({
            ...named,
            cap: f.totalHasta + 1,
          }) as {
            n: number;
          };
          total = n > f.totalHasta ? null : n;
        }
        const rows = stmt(
          db,
          `SELECT ${MOVEMENT_READ} FROM ${from} WHERE ${where} ORDER BY fecha DESC, id DESC LIMIT CAST(@limit AS INTEGER) OFFSET CAST(@offset AS INTEGER)`,
        ).all({
          ...named,
          limit: f.por_pagina,
          offset: (f.page - 1) * f.por_pagina,
        }) as MovimientoRow[];
        return { total, rows };
      })();
    },
    async consumoLineas(clienteId: number, desde: number, hasta: number): Promise<ConsumoLinea[]> {
      // The client's lines (its index), each with one range of its messages' dates (client, line, date): a line's month, never its history.
      return stmt(
        db,
        `SELECT c.id AS celular_id, c.numero AS numero,
           COALESCE(SUM(m.estado <> 'error'), 0) AS mensajes, COALESCE(SUM(m.cobrado), 0) AS monto
         FROM celulares c LEFT JOIN mensajes m INDEXED BY mensajes_cliente_celular_fecha
           ON m.cliente_id = c.cliente_id AND m.celular_id = c.id AND m.created_at >= @desde AND m.created_at < @hasta
         WHERE c.cliente_id = @clienteId GROUP BY c.id ORDER BY c.id`,
      ).all({ clienteId, desde, hasta }) as ConsumoLinea[];
    },
  };
}
