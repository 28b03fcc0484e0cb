import { describe, expect, it } from 'vitest';
import { ChartSampler } from '../../src/core/charts/chart-samples.js';
import { chartWindow, enviosBars, estadisticas, latencyBucket, latencyQuantile, muestraBars } from '../../src/core/charts/charts.js';
import { ManualClock } from '../../src/core/time/clock.js';
import type { Core } from '../../src/core/context.js';
import { EventBus } from '../../src/core/events/events.js';
import type { ChartCount, ChartSample, ChartScope } from '../../src/core/ports/charts.js';

/** 2026-11-23 10:00:00 UTC. */
const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const MIN = 60_000;

describe('charts: the bars of each range (injected clock)', () => {
  it('ends each range with the bar that holds now: 60 minutes, 96 quarter hours, 168 hours', () => {
    const now = T0 + 7 * MIN + 12_345;
    expect(chartWindow('1h', now)).toEqual({ desde: T0 + 8 * MIN - 3_600_000, hasta: T0 + 8 * MIN, paso: MIN, n: 60 });
    expect(chartWindow('24h', now)).toEqual({ desde: T0 + 15 * MIN - 86_400_000, hasta: T0 + 15 * MIN, paso: 15 * MIN, n: 96 });
    expect(chartWindow('7d', now)).toEqual({ desde: T0 + 60 * MIN - 7 * 86_400_000, hasta: T0 + 60 * MIN, paso: 60 * MIN, n: 168 });
    // On a boundary, the bar that starts there is the last.
    expect(chartWindow('1h', T0).hasta).toBe(T0 + MIN);
  });

  it("adds a week's quarter hours into hours, every bar and estado present, rows outside left out", () => {
    const w = chartWindow('7d', T0 + 5 * MIN);
    const q = (ms: number) => ms / (15 * MIN);
    const rows: ChartCount[] = [
      { t: q(T0), estado: 'enviado', n: 2 },
      { t: q(T0 + 15 * MIN), estado: 'enviado', n: 3 },
      { t: q(T0 + 45 * MIN), estado: 'error', n: 1 },
      { t: q(T0 - 15 * MIN), estado: 'leido', n: 4 },
      { t: q(w.desde - 15 * MIN), estado: 'leido', n: 9 },
      { t: q(w.hasta), estado: 'leido', n: 9 },
    ];
    const bars = enviosBars(rows, 15, w);
    expect(bars).toHaveLength(168);
    expect(bars.at(-1)).toEqual({ desde: new Date(T0).toISOString(), pendiente: 0, enviado: 5, entregado: 0, leido: 0, error: 1, total: 6 });
    expect(bars.at(-2)).toMatchObject({ leido: 4, total: 4 });
    expect(bars.reduce((a, b) => a + b.total, 0)).toBe(10);
  });

  it('reads latency percentiles as bucket bounds, and leaves a bar no node sampled empty', () => {
    expect([0, 50, 51, 30_000, 30_001].map(latencyBucket)).toEqual([0, 0, 1, 8, 9]);
    const lat = [10, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    expect(latencyQuantile(lat, 0.5)).toBe(50);
    expect(latencyQuantile([5, 4, 0, 0, 0, 1, 0, 0, 0, 0], 0.95)).toBe(2500);
    expect(latencyQuantile([0, 0, 0, 0, 0, 0, 0, 0, 0, 3], 0.5)).toBe(30_000);
    expect(latencyQuantile(new Array(10).fill(0), 0.5)).toBeNull();
    const w = chartWindow('1h', T0);
    const bars = muestraBars([{ t: T0 / MIN, cola: 3, antiguo_s: 20, ok: 4, fallidas: 1, lat: [5, 0, 0, 0, 0, 0, 0, 0, 0, 0] }], 1, w);
    expect(bars.at(-1)).toEqual({
      desde: new Date(T0).toISOString(),
      cola: 3,
      mas_antiguo_s: 20,
      entregas_ok: 4,
      entregas_fallidas: 1,
      latencia_p50_ms: 50,
      latencia_p95_ms: 50,
    });
    expect(bars[0]).toMatchObject({ cola: null, mas_antiguo_s: null, entregas_ok: 0, latencia_p50_ms: null });
  });
});

/** A core over a store that keeps what the charts write and ask. */
function fakeCore(clock: ManualClock) {
  const written: ChartSample[] = [];
  const asked: Array<{ scope: ChartScope; grano: number; desde: number; hasta: number }> = [];
  const pruned: Array<[number, number]> = [];
  let depth = { pending: 0, oldest_at: null as number | null };
  let failWrites = false;
  const store = {
    queueDepth: async () => depth,
    writeSamples: async (rows: ChartSample[]) => {
      if (failWrites) throw new Error('store down');
      written.push(...rows.map((r) => ({ ...r, lat: [...r.lat] })));
    },
    pruneCharts: async (a: number, b: number) => (pruned.push([a, b]), 0),
    chartCounts: async (scope: ChartScope, grano: number, desde: number, hasta: number) => (asked.push({ scope, grano, desde, hasta }), []),
    chartSamples: async () => [],
    getCliente: async (id: number) => (id === 7 ? { id: 7 } : null),
    getCelular: async (id: number) => (id === 70 ? { id: 70, cliente_id: 7 } : id === 80 ? { id: 80, cliente_id: 8 } : null),
  };
  const core = { store, clock, bus: new EventBus(() => {}) } as unknown as Core;
  return {
    core,
    written,
    asked,
    pruned,
    setDepth: (d: typeof depth) => (depth = d),
    failWrites: (v: boolean) => (failWrites = v),
  };
}

describe('ChartSampler: one node writes its attempts and the queue per minute, quarter hour and hour', () => {
  it("writes each minute's attempts where they ended, with the queue reading of the pass's minute", async () => {
    const clock = new ManualClock(T0 + 10_000);
    const f = fakeCore(clock);
    const s = new ChartSampler(f.core, 'n1', { intervalMs: 0, onError: () => {} });
    s.start();
    f.core.bus.publish('webhook.attempt', {
      cliente_id: 1,
      evento: 'x',
      estado: 'entregado',
      status: 200,
      error: null,
      duracion_ms: 40,
      intentos: 1,
      edad_ms: 0,
    });
    f.core.bus.publish('webhook.attempt', {
      cliente_id: 1,
      evento: 'x',
      estado: 'pendiente',
      status: 500,
      error: 'x',
      duracion_ms: 700,
      intentos: 1,
      edad_ms: 0,
    });
    clock.advance(MIN);
    s.attempt(true, 60);
    f.setDepth({ pending: 4, oldest_at: T0 });
    await s.run();
    const m = T0 / MIN;
    const row = (grano: number, t: number) => f.written.find((r) => r.grano === grano && r.t === t);
    expect(row(1, m)).toMatchObject({ nodo: 'n1', ok: 1, fallidas: 1, cola: 0, lat: [1, 0, 0, 0, 1, 0, 0, 0, 0, 0] });
    expect(row(1, m + 1)).toMatchObject({ ok: 1, fallidas: 0, cola: 4, antiguo_s: 70, lat: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0] });
    // Both minutes fall in one quarter and one hour: one row each, added together.
    expect(row(15, m / 15)).toMatchObject({ ok: 2, fallidas: 1, cola: 4, antiguo_s: 70, lat: [1, 1, 0, 0, 1, 0, 0, 0, 0, 0] });
    expect(row(60, m / 60)).toMatchObject({ ok: 2, fallidas: 1, cola: 4 });
    expect(f.written).toHaveLength(4);
    expect(f.pruned).toEqual([[T0 + 70_000 - 2 * 86_400_000, T0 + 70_000 - 8 * 86_400_000]]);
    // The next pass writes only the queue reading: nothing is written twice.
    f.written.length = 0;
    await s.run();
    expect(f.written.map((r) => r.ok + r.fallidas)).toEqual([0, 0, 0]);
    await s.stop();
  });

  it('keeps the attempts of a pass whose write failed for the next one', async () => {
    const clock = new ManualClock(T0);
    const f = fakeCore(clock);
    const s = new ChartSampler(f.core, 'n1', { intervalMs: 0, onError: () => {} });
    s.attempt(false, 20_000);
    f.failWrites(true);
    await expect(s.run()).rejects.toThrow('store down');
    f.failWrites(false);
    await s.run();
    expect(f.written.find((r) => r.grano === 1)).toMatchObject({ fallidas: 1, lat: [0, 0, 0, 0, 0, 0, 0, 0, 1, 0] });
  });
});

describe('estadisticas: who may see which chart', () => {
  const clock = new ManualClock(T0 + 5 * MIN);
  it('reads the grain of the range over the window, for the scope asked', async () => {
    const f = fakeCore(clock);
    const op = { kind: 'operator' } as const;
    const all = await estadisticas(f.core, op, {});
    expect(all).toMatchObject({ rango: '1h', paso_s: 60, cliente_id: null, celular_id: null });
    expect(all.envios).toHaveLength(60);
    expect(all.muestras).toHaveLength(60);
    expect(f.asked[0]).toEqual({ scope: {}, grano: 1, desde: T0 / MIN + 6 - 60, hasta: T0 / MIN + 6 });
    const line = await estadisticas(f.core, op, { rango: '7d', celular_id: 70 });
    expect(line).toMatchObject({ cliente_id: 7, celular_id: 70, muestras: null });
    expect(line.envios).toHaveLength(168);
    expect(f.asked[1]).toMatchObject({ scope: { cliente_id: 7, celular_id: 70 }, grano: 15 });
    await expect(estadisticas(f.core, op, { cliente_id: 9 })).rejects.toMatchObject({ row: { codigo: 601 } });
    await expect(estadisticas(f.core, op, { celular_id: 71 })).rejects.toMatchObject({ row: { codigo: 600 } });
    // A line named with another client is not that client's.
    await expect(estadisticas(f.core, op, { cliente_id: 7, celular_id: 80 })).rejects.toMatchObject({ row: { codigo: 600 } });
  });

  it("a client's session sees its own lines only; a line's session its own line", async () => {
    const f = fakeCore(clock);
    const cliente = { id: 7 } as never;
    const client = { kind: 'client', cliente } as const;
    expect(await estadisticas(f.core, client, { rango: '24h' })).toMatchObject({ cliente_id: 7, celular_id: null, muestras: null });
    await expect(estadisticas(f.core, client, { celular_id: 80 })).rejects.toMatchObject({ row: { codigo: 600 } });
    await expect(estadisticas(f.core, client, { cliente_id: 8 })).rejects.toMatchObject({ row: { codigo: 601 } });
    const celular = { kind: 'celular', cliente, celular: { id: 70, cliente_id: 7 }, via: 'key' } as never;
    expect(await estadisticas(f.core, celular, {})).toMatchObject({ celular_id: 70 });
  });
});
