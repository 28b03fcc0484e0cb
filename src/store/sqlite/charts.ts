import type Database from 'better-sqlite3';
import type { ChartCount, ChartSampleSum, ChartsStore } from '../../core/ports/charts.js';
import { countsParams, countsSql, SAMPLE_UPSERT, sampleParams, SAMPLES_SQL, sampleSum, type SampleSumRow } from '../chart-sql.js';
import { grouped, immediate, stmt } from './statements.js';

/** The charts' rows (migrations 23 and 27, D-100, D-101, D-106): the statements of store/chart-sql.ts. */

/** No bound: every row past its keeping at once (the contract's default). */
const PRUNE_ALL = -1;

export function charts(db: Database.Database): ChartsStore {
  return {
    async chartCounts(scope, grano, desde, hasta): Promise<ChartCount[]> {
      return stmt(db, countsSql(scope, grano)).all(...countsParams(scope, grano, desde, hasta)) as ChartCount[];
    },
    writeSamples(samples): Promise<void> {
      return grouped(db, () =>
        immediate(db, () => {
          const up = stmt(db, SAMPLE_UPSERT);
          for (const s of samples) up.run(...sampleParams(s));
        }),
      );
    },
    async chartSamples(grano, desde, hasta): Promise<ChartSampleSum[]> {
      return (stmt(db, SAMPLES_SQL).all(grano, desde, hasta) as SampleSumRow[]).map(sampleSum);
    },
    pruneCharts(minutesBefore, before, limit = PRUNE_ALL): Promise<number> {
      return grouped(db, () =>
        immediate(db, () => {
          const minute = Math.floor(minutesBefore / 60_000);
          const quarter = Math.floor(before / 900_000);
          const hour = Math.floor(before / 3_600_000);
          // Each kind at most `limit` rows, found by its time index: a long backlog goes over several short transactions.
          const lineas = (grano: number, t: number) =>
            stmt(
              db,
              `DELETE FROM conteos_lineas WHERE (celular_id, grano, t, estado) IN
                 (SELECT celular_id, grano, t, estado FROM conteos_lineas WHERE grano = ? AND t < ? LIMIT CAST(? AS INTEGER))`,
            ).run(grano, t, limit).changes;
          let n = lineas(1, minute) + lineas(15, quarter);
          n += stmt(
            db,
            'DELETE FROM conteos_horas WHERE (hora, cliente_id, estado) IN (SELECT hora, cliente_id, estado FROM conteos_horas WHERE hora < ? LIMIT CAST(? AS INTEGER))',
          ).run(hour, limit).changes;
          for (const [g, t] of [
            [1, minute],
            [15, quarter],
            [60, hour],
          ] as const)
            n += stmt(
              db,
              'DELETE FROM muestras WHERE (grano, t, nodo) IN (SELECT grano, t, nodo FROM muestras WHERE grano = ? AND t < ? LIMIT CAST(? AS INTEGER))',
            ).run(g, t, limit).changes;
          return n;
        }),
      );
    },
  };
}
