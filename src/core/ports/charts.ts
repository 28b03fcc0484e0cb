import type { MensajeEstado } from './model.js';

/**
 * The charts' reads and writes (core/charts/charts.ts, D-100, D-101): the kept
 * counts of messages by creation bucket and estado, and the background
 * pass's samples. Every read is one key range of count or sample rows, so a
 * chart costs the same whatever the history holds.
 */

/** Whose sends: a line (its own counts), a client (its lines'), or everyone's (neither). */
export interface ChartScope {
  cliente_id?: number;
  celular_id?: number;
}

/** Messages created in bucket `t` (its start, in units of the grain: `t * grano` minutes since the epoch) that are now in `estado`. */
export interface ChartCount {
  t: number;
  estado: MensajeEstado;
  n: number;
}

/** One node's sample of a bucket (`t` in units of `grano` minutes); `lat` counts attempts per latency bucket (core/charts/charts.ts `LATENCY_BOUNDS_MS`, then the rest). */
export interface ChartSample {
  grano: number;
  t: number;
  nodo: string;
  /** The queue's depth, and its oldest message's age in seconds: the largest reading of the bucket. */
  cola: number;
  antiguo_s: number;
  /** Webhook attempts answered 2xx, and the others (failed, retried or given up). */
  ok: number;
  fallidas: number;
  lat: number[];
}

/** A bucket's samples of every node: attempts summed, the queue's largest reading. */
export type ChartSampleSum = Omit<ChartSample, 'grano' | 'nodo'>;

export interface ChartsStore {
  /**
   * The counts of `scope` per bucket of `grano` minutes (1, 15, or 60 for a client or everyone) and estado,
   * for the buckets in [desde, hasta) (units of the grain), summed over the
   * scope's lines or clients; buckets without messages are absent.
   */
  chartCounts(scope: ChartScope, grano: number, desde: number, hasta: number): Promise<ChartCount[]>;
  /** Adds each sample to its node's row of its bucket (attempts added, the queue's largest reading kept). */
  writeSamples(samples: ChartSample[]): Promise<void>;
  /** Every node's samples per bucket of `grano` minutes in [desde, hasta), oldest first. */
  chartSamples(grano: number, desde: number, hasta: number): Promise<ChartSampleSum[]>;
  /**
   * Removes the minute rows (counts and samples) of minutes before `minutesBefore`, and the other rows of buckets
   * before `before` (both ms), at most `limit` rows of each kind in one short transaction; how many went. Fewer
   * than `limit` means nothing is left to prune.
   */
  pruneCharts(minutesBefore: number, before: number, limit?: number): Promise<number>;
}
