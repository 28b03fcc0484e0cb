import type { ChartCount, ChartSampleSum, ChartsStore } from '../../core/ports/charts.js';
import { countsParams, countsSql, LAT, SAMPLE_COLS, sampleAdded, sampleColumns, SAMPLES_SQL, sampleSum, type SampleSumRow } from '../chart-sql.js';
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

/**
 * A pass's samples in one statement (D-197: an idle node's round trips), as JSON rows; rows of one bucket and node
 * are added together first, as the upsert adds a sample to its row (attempts summed, the largest queue reading kept).
 */
const UPSERT = `INSERT INTO muestras (${SAMPLE_COLS})
  SELECT grano, t, nodo, MAX(cola), MAX(antiguo_s), SUM(ok), SUM(fallidas), ${LAT.map((c) => `SUM(${c})`).join(', ')}
  FROM jsonb_to_recordset($1::jsonb) AS s(grano integer, t bigint, nodo text, cola bigint, antiguo_s bigint, ok bigint, fallidas bigint,
    ${LAT.map((c) => `${c} bigint`).join(', ')})
  GROUP BY grano, t, nodo ${sampleAdded('GREATEST')}`;
const SAMPLES = numbered(SAMPLES_SQL);

export function charts(db: Db): ChartsStore {
  return {
    async chartCounts(scope, grano, desde, hasta): Promise<ChartCount[]> {
      return db.q<ChartCount>(numbered(countsSql(scope, grano)), countsParams(scope, grano, desde, hasta));
    },
    async writeSamples(samples): Promise<void> {
      if (samples.length === 0) return;
      await db.query(UPSERT, [JSON.stringify(samples.map(sampleColumns))]);
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
