import type { ChartCount, ChartSampleSum, ChartsStore } from '../../core/ports/charts.js';
import { countsParams, countsSql, sampleParams, SAMPLES_SQL, sampleSum, sampleUpsert, type SampleSumRow } from '../chart-sql.js';
import type { Db } from './db.js';

/**
 * The charts' rows (migrations 19 and 23, D-100, D-101, D-106): the statements of
 * store/chart-sql.ts in PostgreSQL's placeholders.
 */

/** `?` placeholders as `$1`, `$2`... in text order. */
const numbered = (sql: string): string => {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
};

const UPSERT = numbered(sampleUpsert('GREATEST'));
const SAMPLES = numbered(SAMPLES_SQL);

export function charts(db: Db): ChartsStore {
  return {
    async chartCounts(scope, grano, desde, hasta): Promise<ChartCount[]> {
      return db.q<ChartCount>(numbered(countsSql(scope, grano)), countsParams(scope, grano, desde, hasta));
    },
    async writeSamples(samples): Promise<void> {
      await db.tx(async (c) => {
        for (const s of samples) await c.query(UPSERT, sampleParams(s));
      });
    },
    async chartSamples(grano, desde, hasta): Promise<ChartSampleSum[]> {
      return (await db.q<SampleSumRow>(SAMPLES, [grano, desde, hasta])).map(sampleSum);
    },
    async pruneCharts(minutesBefore, before): Promise<number> {
      const minute = Math.floor(minutesBefore / 60_000);
      const r = await db.query(
        `WITH a AS (DELETE FROM conteos_lineas WHERE grano = 1 AND t < $1 RETURNING 1),
              b AS (DELETE FROM conteos_lineas WHERE grano = 15 AND t < $2 RETURNING 1),
              h AS (DELETE FROM conteos_horas WHERE hora < $3 RETURNING 1),
              c AS (DELETE FROM muestras WHERE (grano = 1 AND t < $1) OR (grano = 15 AND t < $2) OR (grano = 60 AND t < $3) RETURNING 1)
         SELECT (SELECT COUNT(*) FROM a) + (SELECT COUNT(*) FROM b) + (SELECT COUNT(*) FROM h) + (SELECT COUNT(*) FROM c) AS n`,
        [minute, Math.floor(before / 900_000), Math.floor(before / 3_600_000)],
      );
      return Number(r.rows[0]?.n ?? 0);
    },
  };
}
