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
    async pruneCharts(minutesBefore, before, limit): Promise<number> {
      const minute = Math.floor(minutesBefore / 60_000);
      // Each kind at most `limit` rows (NULL: no bound), read in its time index's order (grano and t are correlated, so the planner
      // would otherwise take a scan for cheaper) and deleted by row address: a long backlog goes over several short statements.
      const some = (table: string, where: string, order: string) =>
        `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${where} ORDER BY ${order} LIMIT $4)) RETURNING 1`;
      const r = await db.query(
        `WITH a AS (${some('conteos_lineas', 'grano = 1 AND t < $1', 'grano, t')}),
              b AS (${some('conteos_lineas', 'grano = 15 AND t < $2', 'grano, t')}),
              h AS (${some('conteos_horas', 'hora < $3', 'hora')}),
              c1 AS (${some('muestras', 'grano = 1 AND t < $1', 'grano, t')}),
              c15 AS (${some('muestras', 'grano = 15 AND t < $2', 'grano, t')}),
              c60 AS (${some('muestras', 'grano = 60 AND t < $3', 'grano, t')})
         SELECT (SELECT COUNT(*) FROM a) + (SELECT COUNT(*) FROM b) + (SELECT COUNT(*) FROM h)
              + (SELECT COUNT(*) FROM c1) + (SELECT COUNT(*) FROM c15) + (SELECT COUNT(*) FROM c60) AS n`,
        [minute, Math.floor(before / 900_000), Math.floor(before / 3_600_000), limit ?? null],
      );
      return Number(r.rows[0]?.n ?? 0);
    },
  };
}
