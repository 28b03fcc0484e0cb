import type { CelularRow } from '../ports/model.js';
import { localDayNumber, localSecondOfDay } from '../time/hours.js';

/**
 * Warm-up plans (docs/warm-up.md, D-166..D-168): a line that follows one has
 * its caps held under the plan's ceilings for its day, counted in the
 * server's zone (`serve --tz`) from the day the plan was set (day 1), until
 * the plan's last day has passed; then its configured caps alone apply. A
 * ceiling never raises a cap: the effective cap is the lower of the two.
 */

/** One day's ceilings: sends per minute, per hour, per day. */
export type WarmupDay = readonly [minuto: number, hora: number, dia: number];

/**
 * `estandar`: two weeks from 20 sends on day 1 to 2,000 on day 14, about
 * doubling every three days; per minute and per hour rise with it, so no day's
 * sends come in one burst. What the field advises for a new number.
 */
const ESTANDAR: readonly WarmupDay[] = [
  [2, 10, 20],
  [2, 15, 30],
  [3, 20, 50],
  [3, 30, 75],
  [4, 40, 100],
  [4, 50, 150],
  [5, 75, 200],
  [6, 100, 300],
  [8, 150, 400],
  [8, 200, 500],
  [10, 250, 700],
  [10, 300, 1000],
  [12, 400, 1500],
  [12, 500, 2000],
];

/** The built-in plans by name: `estandar`; `rapido`, a week (every other day of it); `prudente`, four weeks (each day twice). */
export const WARMUP_PLANS: Readonly<Record<string, readonly WarmupDay[]>> = {
  estandar: ESTANDAR,
  rapido: ESTANDAR.filter((_, i) => i % 2 === 1),
  prudente: ESTANDAR.flatMap((d) => [d, d]),
};

export const WARMUP_PLAN_NAMES: readonly string[] = Object.keys(WARMUP_PLANS);

/** The longest plan name an edit may carry (the names are shorter). */
export const WARMUP_NAME_MAX = 32;

/** The plan the docs suggest for a new number. */
export const WARMUP_DEFAULT = 'estandar';

export function isWarmupPlan(name: string): boolean {
  return Object.hasOwn(WARMUP_PLANS, name);
}

type Caps = Pick<CelularRow, 'max_envios_por_minuto' | 'max_envios_por_hora' | 'max_envios_por_dia'>;
/** A line's caps and plan (a row without the plan's columns follows none). */
export type WarmupLine = Caps & Partial<Pick<CelularRow, 'calentamiento' | 'calentamiento_desde'>>;

export interface EffectiveCaps extends Caps {
  /** The plan's day now (1 on the day it was set), while the plan holds; null without a plan or once it is over. */
  dia: number | null;
  /** Which caps the plan lowered below the configured ones (their `CelularRow` names). */
  bajados: ReadonlyArray<keyof Caps>;
  /** The next local midnight while the plan holds: its caps change then. */
  cambia_at: number | null;
}

/** A line's caps at `now`, its warm-up plan applied (the day boundary in `tz`). */
export function effectiveCaps(c: WarmupLine, now: number, tz: string): EffectiveCaps {
  const configured: Caps = {
    max_envios_por_minuto: c.max_envios_por_minuto,
    max_envios_por_hora: c.max_envios_por_hora,
    max_envios_por_dia: c.max_envios_por_dia,
  };
  const plan = c.calentamiento ? (WARMUP_PLANS[c.calentamiento] ?? WARMUP_PLANS[WARMUP_DEFAULT]) : undefined;
  if (!plan) return { ...configured, dia: null, bajados: [], cambia_at: null };
  // A plan without its start (never written so) counts from today; a clock set back before the start stays on day 1.
  const dia =
    c.calentamiento_desde === null || c.calentamiento_desde === undefined
      ? 1
      : Math.max(1, localDayNumber(now, tz) - localDayNumber(c.calentamiento_desde, tz) + 1);
  const ceiling = plan[dia - 1];
  if (!ceiling) return { ...configured, dia: null, bajados: [], cambia_at: null };
  const [minuto, hora, diaCap] = ceiling;
  const out: Caps = {
    max_envios_por_minuto: Math.min(c.max_envios_por_minuto, minuto),
    max_envios_por_hora: Math.min(c.max_envios_por_hora, hora),
    max_envios_por_dia: c.max_envios_por_dia === null ? diaCap : Math.min(c.max_envios_por_dia, diaCap),
  };
  const bajados = (['max_envios_por_minuto', 'max_envios_por_hora', 'max_envios_por_dia'] as const).filter((k) => out[k] !== configured[k]);
  return { ...out, dia, bajados, cambia_at: now + (86_400 - localSecondOfDay(now, tz)) * 1000 };
}
