import { describe, expect, it } from 'vitest';
import { BRAKE_DEFAULTS, brakeCause, healthWindow, QUARTER_MS, UNDELIVERED_AFTER_MS } from '../../src/core/accounts/line-brake.js';

/** The brake's thresholds (core/accounts/line-brake.ts, docs/brake.md): pure functions of a line's counts. */
const counts = (over: Partial<Parameters<typeof brakeCause>[0]> = {}) => ({
  celular_id: 1,
  salidos: 100,
  fallos: 0,
  rechazados: 0,
  enviados: 0,
  sin_entregar: 0,
  ...over,
});

describe('brakeCause', () => {
  it('nothing under the minimum of messages, nor under the floor of 5, whatever the share', () => {
    expect(brakeCause(counts({ salidos: 19, fallos: 19, rechazados: 19 }), BRAKE_DEFAULTS)).toBeNull();
    expect(brakeCause(counts({ salidos: 20, fallos: 4, rechazados: 4 }), BRAKE_DEFAULTS)).toBeNull();
  });

  it('refusals first, then failures, then undelivered; each at its share, and not below', () => {
    expect(brakeCause(counts({ fallos: 10, rechazados: 10 }), BRAKE_DEFAULTS)).toMatchObject({ causa: 'rechazados' });
    expect(brakeCause(counts({ fallos: 9, rechazados: 9 }), BRAKE_DEFAULTS)).toBeNull();
    expect(brakeCause(counts({ fallos: 30, rechazados: 5 }), BRAKE_DEFAULTS)).toMatchObject({
      causa: 'fallos',
      motivo: 'failed in the last hour: 30 of 100 (30%, threshold 30%)',
    });
    expect(brakeCause(counts({ enviados: 40, sin_entregar: 20 }), BRAKE_DEFAULTS)).toMatchObject({ causa: 'sin_entregar' });
    expect(brakeCause(counts({ enviados: 40, sin_entregar: 19 }), BRAKE_DEFAULTS)).toBeNull();
  });
});

describe('healthWindow', () => {
  it('the waited span ends at the last quarter wholly older than the wait; the window starts an hour back', () => {
    const now = 10 * 3_600_000 + 7 * 60_000;
    const w = healthWindow(now);
    expect(w.esperaHasta * QUARTER_MS).toBeLessThanOrEqual(now - UNDELIVERED_AFTER_MS);
    expect(w.salidosDesde).toBe(Math.floor((now - 3_600_000) / QUARTER_MS));
    expect(w.esperaDesde).toBeLessThan(w.esperaHasta);
  });
});
