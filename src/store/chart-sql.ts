import type { ChartSample, ChartSampleSum, ChartScope } from '../core/ports/charts.js';

/**
 * The charts' statements (D-100, D-101), in `?` placeholders (PostgreSQL
 * numbers them): each one key range of count or sample rows, so a chart
 * costs the same whatever the history holds. A line's counts by their key;
 * a client's minutes by `conteos_lineas_cliente`, everyone's by
 * `conteos_lineas_tiempo`; quarters of a client, or of everyone, from
 * `conteos_cuartos` (its key, or `conteos_cuartos_cuarto`); hours of a
 * client or of everyone from `conteos_horas` (its key, led by the hour: D-106).
 */

/** The statement for a scope and grain; placeholders: [scope id,] desde, hasta. */
export function countsSql(scope: ChartScope, grano: number): string {
  if (scope.celular_id !== undefined) {
    return 'SELECT t, estado, n FROM conteos_lineas WHERE celular_id = ? AND grano = ? AND t >= ? AND t < ? AND n > 0';
  }
  if (grano === 1) {
    const who = scope.cliente_id !== undefined ? 'cliente_id = ? AND ' : '';
    return `SELECT t, estado, SUM(n) AS n FROM conteos_lineas WHERE ${who}grano = ? AND t >= ? AND t < ? GROUP BY t, estado`;
  }
  // A client's hours and quarters are one row per bar and estado (their keys): read as they are, summed only for everyone.
  if (grano === 60) {
    return scope.cliente_id !== undefined
      ? 'SELECT hora AS t, estado, n FROM conteos_horas WHERE cliente_id = ? AND hora >= ? AND hora < ? AND n > 0'
      : 'SELECT hora AS t, estado, SUM(n) AS n FROM conteos_horas WHERE hora >= ? AND hora < ? GROUP BY hora, estado';
  }
  return scope.cliente_id !== undefined
    ? 'SELECT cuarto AS t, estado, n FROM conteos_cuartos WHERE cliente_id = ? AND cuarto >= ? AND cuarto < ? AND n > 0'
    : 'SELECT cuarto AS t, estado, SUM(n) AS n FROM conteos_cuartos WHERE cuarto >= ? AND cuarto < ? GROUP BY cuarto, estado';
}

/** The parameters of countsSql's statement, in its order. */
export function countsParams(scope: ChartScope, grano: number, desde: number, hasta: number): number[] {
  const who = scope.celular_id ?? scope.cliente_id;
  const usesGrano = scope.celular_id !== undefined || grano === 1;
  return [...(who !== undefined ? [who] : []), ...(usesGrano ? [grano] : []), desde, hasta];
}

/** The latency buckets' columns. */
export const LAT = Array.from({ length: 10 }, (_, i) => `lat${i}`);

/** A sample row's columns. */
export const SAMPLE_COLS = `grano, t, nodo, cola, antiguo_s, ok, fallidas, ${LAT.join(', ')}`;

/** A sample added to its node's row of the bucket: attempts summed, the queue's largest reading kept; `max` is the dialect's two-argument maximum. */
export const sampleAdded = (max: 'MAX' | 'GREATEST'): string => `ON CONFLICT (grano, t, nodo) DO UPDATE SET
    cola = ${max}(muestras.cola, excluded.cola), antiguo_s = ${max}(muestras.antiguo_s, excluded.antiguo_s),
    ${['ok', 'fallidas', ...LAT].map((c) => `${c} = muestras.${c} + excluded.${c}`).join(', ')}`;

/** One sample (SQLite writes a pass's rows one by one in its transaction; PostgreSQL all in one statement, store/postgres/charts.ts). */
export const SAMPLE_UPSERT = `INSERT INTO muestras (${SAMPLE_COLS}) VALUES (${new Array(7 + LAT.length).fill('?').join(', ')}) ${sampleAdded('MAX')}`;

export const SAMPLES_SQL = `SELECT t, MAX(cola) AS cola, MAX(antiguo_s) AS antiguo_s, SUM(ok) AS ok, SUM(fallidas) AS fallidas,
  ${LAT.map((c) => `SUM(${c}) AS ${c}`).join(', ')}
  FROM muestras WHERE grano = ? AND t >= ? AND t < ? GROUP BY t ORDER BY t`;

export type SampleSumRow = Omit<ChartSampleSum, 'lat'> & Record<string, number>;

export const sampleSum = (r: SampleSumRow): ChartSampleSum => ({
  t: r.t,
  cola: r.cola,
  antiguo_s: r.antiguo_s,
  ok: r.ok,
  fallidas: r.fallidas,
  lat: LAT.map((c) => r[c] ?? 0),
});

/** A sample as its row's columns, in SAMPLE_COLS' order: PostgreSQL's JSON rows, SQLite's parameters. */
export const sampleColumns = ({ lat, ...s }: ChartSample): Record<string, number | string> => ({
  grano: s.grano,
  t: s.t,
  nodo: s.nodo,
  cola: s.cola,
  antiguo_s: s.antiguo_s,
  ok: s.ok,
  fallidas: s.fallidas,
  ...Object.fromEntries(LAT.map((c, i) => [c, lat[i] ?? 0])),
});

export const sampleParams = (s: ChartSample): Array<number | string> => Object.values(sampleColumns(s));
