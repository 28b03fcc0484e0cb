import type { HealthWindow, LineBrakeWrite, LineHealthCounts, LineHealthStore } from '../../core/ports/line-health.js';
import type { CelularRow } from '../../core/ports/model.js';
import { mergeHealth, type Fallos, type Salidos } from '../health-rows.js';
import { type Db, row } from './db.js';
import { insertAudit } from './accounts.js';
import { journal } from './messages.js';

/** Per line: the window's messages from the quarter-hour counts (their primary key, or the (grano, t) index for every line). */
const salidosSql = (one: boolean) => `SELECT k.celular_id,
    SUM(CASE WHEN k.t >= $1 AND k.estado <> 'pendiente' THEN k.n ELSE 0 END)::bigint AS salidos,
    SUM(CASE WHEN k.t < $3 AND k.estado IN ('enviado', 'entregado', 'leido') THEN k.n ELSE 0 END)::bigint AS enviados,
    SUM(CASE WHEN k.t < $3 AND k.estado = 'enviado' THEN k.n ELSE 0 END)::bigint AS sin_entregar
  FROM conteos_lineas k JOIN celulares c ON c.id = k.celular_id
  WHERE ${one ? 'k.celular_id = $5 AND ' : ''}k.grano = 15 AND k.t >= $2 AND k.t >= COALESCE(c.salud_desde, 0) / $4::bigint
  GROUP BY k.celular_id`;
const fallosSql = (one: boolean) => `SELECT celular_id, SUM(n)::bigint AS fallos, SUM(CASE WHEN clase = 'rechazado' THEN n ELSE 0 END)::bigint AS rechazados
  FROM salud_fallos WHERE ${one ? 'celular_id = $2 AND ' : ''}t >= $1 GROUP BY celular_id`;
const SALIDOS = [salidosSql(false), salidosSql(true)] as const;
const FALLOS = [fallosSql(false), fallosSql(true)] as const;

/** The LineHealthStore port over one pool. */
export function lineHealth(db: Db): LineHealthStore {
  const read = async (id: number | null, w: HealthWindow) => {
    const one = id === null ? 0 : 1;
    const more = id === null ? [] : [id];
    const [s, f] = await Promise.all([
      db.q<Salidos>(SALIDOS[one], [w.salidosDesde, w.esperaDesde, w.esperaHasta, w.cuartoMs, ...more]),
      db.q<Fallos>(FALLOS[one], [w.fallosDesde, ...more]),
    ]);
    return mergeHealth(s, f);
  };
  return {
    async countLineFailure(celularId: number, t: number, clase: string): Promise<void> {
      await db.query(
        'INSERT INTO salud_fallos (celular_id, t, clase, n) VALUES ($1, $2, $3, 1) ON CONFLICT (celular_id, t, clase) DO UPDATE SET n = salud_fallos.n + 1',
        [celularId, t, clase],
      );
    },

    async lineHealth(ids: number[] | null, w: HealthWindow): Promise<LineHealthCounts[]> {
      if (ids === null) return read(null, w);
      return (await Promise.all(ids.map((id) => read(id, w)))).flat();
    },

    /** The compare-and-set decides once whichever node asks: the one whose update changed the row journals the event. */
    async writeLineBrake(id: number, w: LineBrakeWrite, now: number): Promise<CelularRow | null> {
      return db.tx(async (c) => {
        const r = await row<CelularRow>(
          c,
          `UPDATE celulares SET frenado = $2, frenado_motivo = $3, salud_alerta_at = $4::bigint, salud_desde = COALESCE($5::bigint, salud_desde), updated_at = $6
           WHERE id = $1 AND frenado = $7 AND salud_alerta_at IS NOT DISTINCT FROM $8::bigint RETURNING *`,
          [id, w.set.frenado, w.set.frenado_motivo, w.set.salud_alerta_at, w.set.salud_desde ?? null, now, w.expect.frenado, w.expect.salud_alerta_at],
        );
        if (!r) return null;
        if (w.forget) await c.query('DELETE FROM salud_fallos WHERE celular_id = $1', [id]);
        if (w.event) await journal(c, w.event);
        if (w.audit) await insertAudit(c, w.audit, now);
        return r;
      });
    },

    async brakedLines(): Promise<number> {
      return (await db.one<{ n: number }>('SELECT COUNT(*) AS n FROM celulares WHERE frenado = 1'))?.n ?? 0;
    },

    async pruneLineFailures(t: number, limit: number): Promise<number> {
      const r = await db.query(
        'DELETE FROM salud_fallos WHERE (celular_id, t, clase) IN (SELECT celular_id, t, clase FROM salud_fallos WHERE t < $1 LIMIT $2)',
        [t, limit],
      );
      return r.rowCount ?? 0;
    },
  };
}
