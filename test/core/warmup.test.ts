import { describe, expect, it } from 'vitest';
import { slotClaim } from '../../src/core/sending/caps.js';
import { effectiveCaps, WARMUP_PLANS } from '../../src/core/sending/warmup.js';

/** Warm-up plans (core/sending/warmup.ts): a line's caps by the plan's day, the day boundary in the server's zone. */
const H = 3_600_000;
const DAY = 24 * H;
const T0 = Date.UTC(2026, 2, 10, 12, 0, 0); // 12:00 UTC, 07:00 in Lima
const line = (over: Partial<Parameters<typeof effectiveCaps>[0]> = {}) => ({
  max_envios_por_minuto: 12,
  max_envios_por_hora: 500,
  max_envios_por_dia: null,
  calentamiento: 'estandar',
  calentamiento_desde: T0,
  ...over,
});

describe('effectiveCaps', () => {
  it("day 1 holds the plan's first ceilings; day N its Nth; past the last day the caps set", () => {
    expect(effectiveCaps(line(), T0, 'UTC')).toMatchObject({ dia: 1, max_envios_por_minuto: 2, max_envios_por_hora: 10, max_envios_por_dia: 20 });
    expect(effectiveCaps(line(), T0 + 11 * H + 59 * 60_000, 'UTC')).toMatchObject({ dia: 1, max_envios_por_dia: 20 });
    expect(effectiveCaps(line(), T0 + 12 * H, 'UTC')).toMatchObject({ dia: 2, max_envios_por_dia: 30 }); // 00:00 UTC next day
    expect(effectiveCaps(line(), T0 + 7 * DAY, 'UTC')).toMatchObject({ dia: 8, max_envios_por_minuto: 6, max_envios_por_hora: 100, max_envios_por_dia: 300 });
    expect(effectiveCaps(line(), T0 + 13 * DAY, 'UTC')).toMatchObject({
      dia: 14,
      max_envios_por_minuto: 12,
      max_envios_por_hora: 500,
      max_envios_por_dia: 2000,
    });
    expect(effectiveCaps(line(), T0 + 14 * DAY, 'UTC')).toEqual({
      max_envios_por_minuto: 12,
      max_envios_por_hora: 500,
      max_envios_por_dia: null,
      dia: null,
      bajados: [],
      cambia_at: null,
    });
  });

  it('the day turns at midnight in the zone given, not in UTC', () => {
    // Set at 07:00 in Lima (UTC-5): day 2 starts at 05:00 UTC the next day.
    expect(effectiveCaps(line(), T0 + 16 * H + 59 * 60_000, 'America/Lima').dia).toBe(1);
    expect(effectiveCaps(line(), T0 + 17 * H, 'America/Lima').dia).toBe(2);
    expect(effectiveCaps(line(), T0 + 17 * H, 'America/Lima').cambia_at).toBe(T0 + 17 * H + DAY);
  });

  it('a ceiling never raises a cap: the lower one applies, and only those the plan lowered are named', () => {
    const e = effectiveCaps(line({ max_envios_por_minuto: 1, max_envios_por_dia: 15 }), T0, 'UTC');
    expect(e).toMatchObject({ max_envios_por_minuto: 1, max_envios_por_hora: 10, max_envios_por_dia: 15 });
    expect(e.bajados).toEqual(['max_envios_por_hora']);
  });

  it('no plan: the caps set; a clock before the start stays on day 1; the other plans', () => {
    expect(effectiveCaps(line({ calentamiento: null, calentamiento_desde: null }), T0, 'UTC')).toMatchObject({ dia: null, max_envios_por_minuto: 12 });
    expect(effectiveCaps(line(), T0 - 3 * DAY, 'UTC').dia).toBe(1);
    expect(WARMUP_PLANS.rapido).toHaveLength(7);
    expect(WARMUP_PLANS.prudente).toHaveLength(28);
    expect(effectiveCaps(line({ calentamiento: 'rapido' }), T0 + 6 * DAY, 'UTC')).toMatchObject({ dia: 7, max_envios_por_dia: 2000 });
    expect(effectiveCaps(line({ calentamiento: 'prudente' }), T0 + DAY, 'UTC')).toMatchObject({ dia: 2, max_envios_por_dia: 20 });
  });
});

describe('slotClaim under a plan', () => {
  it('takes the effective caps as its room; a refusal names the plan and is due no later than the next day', () => {
    const c = slotClaim(line(), T0, 0, 'UTC');
    expect(c.windows).toEqual([60_000, H, DAY]);
    expect(c.room).toEqual([1, 9, 19]);
    const hit = c.decide([
      { n: 0, oldest: null },
      { n: 3, oldest: T0 - 10 * 60_000 },
      { n: 20, oldest: T0 - 10 * 60_000 },
    ]);
    // The day's window would roll in 23 h 50 min; the plan's next day begins in 12 h.
    expect(hit).toEqual({ retryAfterMs: 12 * H, which: 'per day (warm-up estandar, day 1)', cap: 20 });
    // Without a plan nothing changes.
    expect(slotClaim(line({ calentamiento: null }), T0, 0, 'UTC').room).toEqual([11, 499]);
  });
});
