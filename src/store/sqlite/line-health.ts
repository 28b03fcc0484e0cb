import type Database from 'better-sqlite3';
import type { HealthWindow, LineBrakeWrite, LineHealthCounts, LineHealthStore } from '../../core/ports/line-health.js';
import type { CelularRow } from '../../core/ports/model.js';
import { mergeHealth, type Fallos, type Salidos } from '../health-rows.js';
import { insertAudit } from './accounts.js';
import { journal } from './messages.js';
import { grouped, stmt } from './statements.js';

/**
 * Per line: the window's messages from the quarter-hour counts (their primary key, or the (grano, t) index for every line),
 * from the quarter of its last resume on (a bound number is a REAL here: the quarter is cast, not a fraction past it).
 */
const salidosSql = (one: boolean) => `SELECT k.celular_id,
    SUM(CASE WHEN k.t >= @sd AND k.estado <> 'pendiente' THEN k.n ELSE 0 END) AS salidos,
    SUM(CASE WHEN k.t < @eh AND k.estado IN ('enviado', 'entregado', 'leido') THEN k.n ELSE 0 END) AS enviados,
    SUM(CASE WHEN k.t < @eh AND k.estado = 'enviado' THEN k.n ELSE 0 END) AS sin_entregar
  FROM conteos_lineas k JOIN celulares c ON c.id = k.celular_id
  WHERE ${one ? 'k.celular_id = @id AND ' : ''}k.grano = 15 AND k.t >= @ed AND k.t >= CAST(COALESCE(c.salud_desde, 0) / @q AS INTEGER)
  GROUP BY k.celular_id`;
const fallosSql = (one: boolean) => `SELECT celular_id, SUM(n) AS fallos, SUM(CASE WHEN clase = 'rechazado' THEN n ELSE 0 END) AS rechazados
  FROM salud_fallos ${one ? 'WHERE celular_id = @id AND' : 'INDEXED BY salud_fallos_t WHERE'} t >= @fd GROUP BY celular_id`;
const SALIDOS = [salidosSql(false), salidosSql(true)] as const;
const FALLOS = [fallosSql(false), fallosSql(true)] as const;

/** The LineHealthStore port over one SQLite connection. */
export function lineHealth(db: Database.Database): LineHealthStore {
  const read = (id: number | null, w: HealthWindow) => {
    const one = id === null ? 0 : 1;
    const p = { sd: w.salidosDesde, ed: w.esperaDesde, eh: w.esperaHasta, q: w.cuartoMs, fd: w.fallosDesde, ...(id === null ? {} : { id }) };
    const { fd: _fd, ...ps } = p;
    const { sd: _sd, ed: _ed, eh: _eh, q: _q, ...pf } = p;
    return mergeHealth(stmt(db, SALIDOS[one]).all(ps) as Salidos[], stmt(db, FALLOS[one]).all(pf) as Fallos[]);
  };
  return {
    async countLineFailure(celularId: number, t: number, clase: string): Promise<void> {
      await grouped(db, () =>
        stmt(db, 'INSERT INTO salud_fallos (celular_id, t, clase, n) VALUES (?, ?, ?, 1) ON CONFLICT (celular_id, t, clase) DO UPDATE SET n = n + 1').run(
          celularId,
          t,
          clase,
        ),
      );
    },

    async lineHealth(ids: number[] | null, w: HealthWindow): Promise<LineHealthCounts[]> {
      return ids === null ? read(null, w) : ids.flatMap((id) => read(id, w));
    },

    async writeLineBrake(id: number, w: LineBrakeWrite, now: number): Promise<CelularRow | null> {
      return grouped(db, () => {
        const info = stmt(
          db,
          `UPDATE celulares SET frenado = @frenado, frenado_motivo = @motivo, salud_alerta_at = @alerta, salud_desde = COALESCE(@desde, salud_desde), updated_at = @now
           WHERE id = @id AND frenado = @x_frenado AND salud_alerta_at IS @x_alerta`,
        ).run({
          id,
          now,
          frenado: w.set.frenado,
          motivo: w.set.frenado_motivo,
          alerta: w.set.salud_alerta_at,
          desde: w.set.salud_desde ?? null,
          x_frenado: w.expect.frenado,
          x_alerta: w.expect.salud_alerta_at,
        });
        if (info.changes === 0) return null;
        if (w.forget) stmt(db, 'DELETE FROM salud_fallos WHERE celular_id = ?').run(id);
        if (w.event) journal(db, w.event);
        if (w.audit) insertAudit(db, w.audit, now);
        return (stmt(db, 'SELECT * FROM celulares WHERE id = ?').get(id) as CelularRow | undefined) ?? null;
      });
    },

    async brakedLines(): Promise<number> {
      return (stmt(db, 'SELECT COUNT(*) AS n FROM celulares WHERE frenado = 1').get() as { n: number }).n;
    },

    async pruneLineFailures(t: number, limit: number): Promise<number> {
      return grouped(
        db,
        () =>
          stmt(
            db,
            'DELETE FROM salud_fallos WHERE (celular_id, t, clase) IN (SELECT celular_id, t, clase FROM salud_fallos WHERE t < ? LIMIT CAST(? AS INTEGER))',
          ).run(t, limit).changes,
      );
    },
  };
}
