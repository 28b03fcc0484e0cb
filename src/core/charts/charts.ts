import { celularInScope, type Principal } from '../auth/auth.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import type { ChartCount, ChartSampleSum, ChartScope } from '../ports/charts.js';
import type { MensajeEstado } from '../ports/model.js';

/**
 * The charts (docs/decisions.md D-100, D-101): sends by estado over the last
 * hour, day or week, for everyone, a client or a line; and, for everyone,
 * the queue and the webhook attempts the background pass samples. Every
 * figure comes from kept rows (counts the triggers keep, samples a node
 * writes once a minute), one key range per chart: never a read of messages.
 */

export const RANGOS = ['1h', '24h', '7d'] as const;
export type Rango = (typeof RANGOS)[number];

const MINUTE_MS = 60_000;

/**
 * Each range: its length, the width of a bar, and the grains (minutes) its
 * counts and samples are read at: everyone's and a client's counts at the
 * bar's own width (a client's hours, D-106), a line's week from its quarter
 * hours (four to a bar; a line keeps no hours, so a send writes less).
 */
export const RANGE_STEPS: Readonly<Record<Rango, { ms: number; paso: number; conteos: number; conteosLinea: number; muestras: number }>> = {
  '1h': { ms: 3_600_000, paso: MINUTE_MS, conteos: 1, conteosLinea: 1, muestras: 1 },
  '24h': { ms: 86_400_000, paso: 15 * MINUTE_MS, conteos: 15, conteosLinea: 15, muestras: 15 },
  '7d': { ms: 7 * 86_400_000, paso: 60 * MINUTE_MS, conteos: 60, conteosLinea: 15, muestras: 60 },
};

/** Minute rows (counts and samples) are kept this long: the hour's chart needs one. */
export const CHART_MINUTES_KEPT_MS = 2 * 86_400_000;
/** Every other chart row is kept this long: the week's chart needs seven days. */
export const CHART_KEPT_MS = 8 * 86_400_000;
/** The grains samples are written at (minutes), one row each per node. */
export const SAMPLE_GRAINS = [1, 15, 60] as const;

/**
 * Webhook attempt latency is counted per bucket (ms, upper bounds; a last
 * bucket takes the rest), so nodes and minutes add up and a percentile is
 * read as the bound of the bucket that holds it.
 */
export const LATENCY_BOUNDS_MS = [50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000] as const;

/** The latency bucket of an attempt that took `ms`. */
export function latencyBucket(ms: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((b) => ms <= b);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
}

/** The `q` quantile (0..1) of a latency histogram, as its bucket's upper bound (the last bucket: its lower one); null for none. */
export function latencyQuantile(lat: readonly number[], q: number): number | null {
  const total = lat.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const want = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < lat.length; i += 1) {
    seen += lat[i] ?? 0;
    if (seen >= want) return LATENCY_BOUNDS_MS[Math.min(i, LATENCY_BOUNDS_MS.length - 1)]!;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

/** The bars of a range at `now`: `n` of `paso` ms, the last one holding `now`. */
export function chartWindow(rango: Rango, now: number): { desde: number; hasta: number; paso: number; n: number } {
  const { ms, paso } = RANGE_STEPS[rango];
  const hasta = (Math.floor(now / paso) + 1) * paso;
  return { desde: hasta - ms, hasta, paso, n: ms / paso };
}

export const CHART_ESTADOS: readonly MensajeEstado[] = ['pendiente', 'enviado', 'entregado', 'leido', 'error'];

export type EnviosBar = { desde: string } & Record<MensajeEstado, number> & { total: number };

export interface MuestraBar {
  desde: string;
  /** The queue's largest depth and oldest age (s) any node read in the bar; null when no node sampled it. */
  cola: number | null;
  mas_antiguo_s: number | null;
  entregas_ok: number;
  entregas_fallidas: number;
  latencia_p50_ms: number | null;
  latencia_p95_ms: number | null;
}

export interface Estadisticas {
  rango: Rango;
  desde: string;
  hasta: string;
  paso_s: number;
  cliente_id: number | null;
  celular_id: number | null;
  /** Messages created in each bar, by the estado they are in now (D-100). */
  envios: EnviosBar[];
  /** The queue and webhooks per bar (D-101); null for a client's or a line's chart: they are sampled for everyone only. */
  muestras: MuestraBar[] | null;
}

/** Count rows (any grain) summed into the window's bars, oldest first, every bar and estado present. */
export function enviosBars(rows: readonly ChartCount[], grano: number, w: { desde: number; paso: number; n: number }): EnviosBar[] {
  const bars: EnviosBar[] = Array.from({ length: w.n }, (_, i) => ({
    desde: iso(w.desde + i * w.paso),
    pendiente: 0,
    enviado: 0,
    entregado: 0,
    leido: 0,
    error: 0,
    total: 0,
  }));
  for (const r of rows) {
    const i = Math.floor((r.t * grano * MINUTE_MS - w.desde) / w.paso);
    const bar = bars[i];
    if (!bar || !(r.estado in bar)) continue;
    bar[r.estado] += r.n;
    bar.total += r.n;
  }
  return bars;
}

/** Sample rows (at the range's own grain) into the window's bars, oldest first. */
export function muestraBars(rows: readonly ChartSampleSum[], grano: number, w: { desde: number; paso: number; n: number }): MuestraBar[] {
  const byStart = new Map(rows.map((r) => [r.t * grano * MINUTE_MS, r]));
  return Array.from({ length: w.n }, (_, i) => {
    const at = w.desde + i * w.paso;
    const r = byStart.get(at);
    return {
      desde: iso(at),
      cola: r ? r.cola : null,
      mas_antiguo_s: r ? r.antiguo_s : null,
      entregas_ok: r?.ok ?? 0,
      entregas_fallidas: r?.fallidas ?? 0,
      latencia_p50_ms: r ? latencyQuantile(r.lat, 0.5) : null,
      latencia_p95_ms: r ? latencyQuantile(r.lat, 0.95) : null,
    };
  });
}

export interface EstadisticasQuery {
  rango?: Rango;
  cliente_id?: number;
  celular_id?: number;
}

/**
 * A chart's figures. The operator may ask for everyone, a client or a line
 * (a line's client is its own, and must match a client named with it); a
 * client's session for itself or one of its lines; a line's for itself.
 */
export async function estadisticas(core: Pick<Core, 'store' | 'clock'>, p: Principal, q: EstadisticasQuery): Promise<Estadisticas> {
  const rango = q.rango ?? '1h';
  const scope = await scopeOf(core, p, q);
  const now = core.clock.now();
  const w = chartWindow(rango, now);
  const steps = RANGE_STEPS[rango];
  const g = scope.celular_id === undefined ? steps.conteos : steps.conteosLinea;
  const counts = await core.store.chartCounts(scope, g, w.desde / (g * MINUTE_MS), w.hasta / (g * MINUTE_MS));
  let muestras: MuestraBar[] | null = null;
  if (scope.cliente_id === undefined) {
    const s = steps.muestras;
    muestras = muestraBars(await core.store.chartSamples(s, w.desde / (s * MINUTE_MS), w.hasta / (s * MINUTE_MS)), s, w);
  }
  return {
    rango,
    desde: iso(w.desde),
    hasta: iso(w.hasta),
    paso_s: w.paso / 1000,
    cliente_id: scope.cliente_id ?? null,
    celular_id: scope.celular_id ?? null,
    envios: enviosBars(counts, g, w),
    muestras,
  };
}

async function scopeOf(core: Pick<Core, 'store'>, p: Principal, q: EstadisticasQuery): Promise<ChartScope> {
  if (p.kind !== 'operator') {
    if (q.cliente_id !== undefined && q.cliente_id !== p.cliente.id) fail('CLIENT_NOT_FOUND', `cliente_id ${q.cliente_id}: no such client`);
    const own = p.kind === 'celular' ? p.celular.id : q.celular_id;
    if (own === undefined) return { cliente_id: p.cliente.id };
    await celularInScope(core, p, own);
    return { cliente_id: p.cliente.id, celular_id: own };
  }
  if (q.celular_id !== undefined) {
    const line = await core.store.getCelular(q.celular_id);
    if (!line) fail('CELULAR_NOT_FOUND', `celular_id ${q.celular_id}: no such line`);
    if (q.cliente_id !== undefined && line.cliente_id !== q.cliente_id)
      fail('CELULAR_NOT_FOUND', `celular_id ${q.celular_id}: not a line of client ${q.cliente_id}`);
    return { cliente_id: line.cliente_id, celular_id: line.id };
  }
  if (q.cliente_id !== undefined) {
    if (!(await core.store.getCliente(q.cliente_id))) fail('CLIENT_NOT_FOUND', `cliente_id ${q.cliente_id}: no such client`);
    return { cliente_id: q.cliente_id };
  }
  return {};
}
