import type Database from 'better-sqlite3';
import type { ChartCount, ChartSampleSum, ChartsStore } from '../../core/ports/charts.js';
import { countsParams, countsSql, sampleParams, SAMPLES_SQL, sampleSum, sampleUpsert, type SampleSumRow } from '../chart-sql.js';
import { grouped, immediate, stmt } from './statements.js';

const UPSERT = sampleUpsert('MAX');

/** The charts' rows (migrations 23 and 27, D-100, D-101, D-106): the statements of store/chart-sql.ts. */

export function charts(db: Database.Database): ChartsStore {
  return {
    async chartCounts(scope, grano, desde, hasta): Promise<ChartCount[]> {
      return stmt(db, countsSql(scope, grano)).all(...countsParams(scope, grano, desde, hasta)) as ChartCount[];
    },
    writeSamples(samples): Promise<void> {
      return grouped(db, () =>
        immediate(db, () => {
          const up = stmt(db, UPSERT);
          for (const s of samples) up.run(...sampleParams(s));
        }),
      );
    },
    async chartSamples(grano, desde, hasta): Promise<ChartSampleSum[]> {
      return (stmt(db, SAMPLES_SQL).all(grano, desde, hasta) as SampleSumRow[]).map(sampleSum);
    },
    pruneCharts(minutesBefore, before): Promise<number> {
      return grouped(db, () =>
        immediate(db, () => {
          const minute = Math.floor(minutesBefore / 60_000);
          let n = stmt(db, 'DELETE FROM conteos_lineas WHERE grano = 1 AND t < ?').run(minute).changes;
          n += stmt(db, 'DELETE FROM conteos_lineas WHERE grano = 15 AND t < ?').run(Math.floor(before / 900_000)).changes;
          n += stmt(db, 'DELETE FROM conteos_horas WHERE hora < ?').run(Math.floor(before / 3_600_000)).changes;
          n += stmt(db, 'DELETE FROM muestras WHERE grano = 1 AND t < ?').run(minute).changes;
          for (const g of [15, 60]) n += stmt(db, 'DELETE FROM muestras WHERE grano = ? AND t < ?').run(g, Math.floor(before / (g * 60_000))).changes;
          return n;
        }),
      );
    },
  };
}
