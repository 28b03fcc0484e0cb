import { CHART_KEPT_MS, CHART_MINUTES_KEPT_MS, LATENCY_BOUNDS_MS, latencyBucket, SAMPLE_GRAINS } from './charts.js';
import type { Core } from '../context.js';
import type { ChartSample } from '../ports/charts.js';

const MINUTE_MS = 60_000;

/** What one minute of this node's webhook attempts adds up to. */
interface Attempts {
  ok: number;
  fallidas: number;
  lat: number[];
}

const noAttempts = (): Attempts => ({ ok: 0, fallidas: 0, lat: new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0) });

/** Adds `s` to `row` as the store does: attempts summed, the queue's largest reading kept. */
export function addSample(row: Omit<ChartSample, 'grano' | 't' | 'nodo'>, s: Omit<ChartSample, 'grano' | 't' | 'nodo'>): void {
  row.cola = Math.max(row.cola, s.cola);
  row.antiguo_s = Math.max(row.antiguo_s, s.antiguo_s);
  row.ok += s.ok;
  row.fallidas += s.fallidas;
  s.lat.forEach((n, i) => (row.lat[i] = (row.lat[i] ?? 0) + n));
}

/**
 * This node's samples for the charts (D-101): the webhook attempts it made
 * (from the bus, by the minute they ended in) and, at each pass, the queue's
 * depth and oldest age. A pass writes what gathered since the last one to
 * this node's rows of the minute, quarter hour and hour (added there, so a
 * late or repeated pass never loses or doubles an attempt), then removes the
 * rows past their keeping. Nodes never write each other's rows: a chart sums
 * their attempts and takes the largest queue reading.
 */
/** Rows of each kind one prune statement removes at most. */
export const PRUNE_BATCH = 2000;
export const PRUNE_BATCHES_PER_PASS = 5;

export class ChartSampler {
  private readonly minutes = new Map<number, Attempts>();
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private off: (() => void) | undefined;

  constructor(
    private readonly core: Pick<Core, 'store' | 'clock' | 'bus'>,
    private readonly nodo: string,
    private readonly opts: { intervalMs: number; onError: (err: unknown) => void },
  ) {}

  /** One attempt that ended now: answered 2xx (`ok`) or not, and how long it took. */
  attempt(ok: boolean, duracionMs: number): void {
    const minute = Math.floor(this.core.clock.now() / MINUTE_MS);
    let a = this.minutes.get(minute);
    if (!a) this.minutes.set(minute, (a = noAttempts()));
    if (ok) a.ok += 1;
    else a.fallidas += 1;
    a.lat[latencyBucket(duracionMs)]! += 1;
  }

  /** One pass now (after any in flight). */
  run(): Promise<void> {
    const pass = this.chain.then(() => this.pass());
    this.chain = pass.catch(() => undefined);
    return pass;
  }

  private async pass(): Promise<void> {
    const { core } = this;
    const now = core.clock.now();
    const queue = await core.store.queueDepth();
    const taken = [...this.minutes];
    this.minutes.clear();
    const here = Math.floor(now / MINUTE_MS);
    const reading = { cola: queue.pending, antiguo_s: queue.oldest_at === null ? 0 : Math.max(0, Math.round((now - queue.oldest_at) / 1000)) };
    const byMinute = new Map<number, Attempts & { cola: number; antiguo_s: number }>();
    for (const [m, a] of taken) byMinute.set(m, { ...a, cola: 0, antiguo_s: 0 });
    byMinute.set(here, { ...(byMinute.get(here) ?? noAttempts()), ...reading });
    // One row per bucket: minutes of one quarter or hour are added together first, as the store would add them.
    const rows = new Map<string, ChartSample>();
    for (const [m, s] of byMinute) {
      for (const grano of SAMPLE_GRAINS) {
        const t = Math.floor(m / grano);
        const row = rows.get(`${grano} ${t}`);
        if (!row) rows.set(`${grano} ${t}`, { grano, t, nodo: this.nodo, ...s, lat: [...s.lat] });
        else addSample(row, s);
      }
    }
    try {
      await core.store.writeSamples([...rows.values()]);
    } catch (err) {
      // Kept for the next pass: attempts are added where they land, whenever that is.
      for (const [m, a] of taken) this.merge(m, a);
      throw err;
    }
    // In bounded batches, each its own short transaction, a few a pass: a long backlog (a store served again after
    // months) drains over passes and never holds the writers for seconds; a pass keeps up with any steady inflow
    // (PRUNE_BATCH x PRUNE_BATCHES_PER_PASS rows of each kind every 30 s).
    for (let i = 0; i < PRUNE_BATCHES_PER_PASS; i++) {
      if ((await core.store.pruneCharts(now - CHART_MINUTES_KEPT_MS, now - CHART_KEPT_MS, PRUNE_BATCH)) < PRUNE_BATCH) break;
      await new Promise((r) => setImmediate(r));
    }
  }

  private merge(minute: number, a: Attempts): void {
    const mine = this.minutes.get(minute);
    if (!mine) return void this.minutes.set(minute, a);
    mine.ok += a.ok;
    mine.fallidas += a.fallidas;
    a.lat.forEach((n, i) => (mine.lat[i]! += n));
  }

  /** Listens for attempts on the bus and passes every `intervalMs` (0: only when asked). */
  start(): void {
    this.off = this.core.bus.subscribe('webhook.attempt', (e) => this.attempt(e.estado === 'entregado', e.duracion_ms));
    if (this.opts.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.run().catch(this.opts.onError), this.opts.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer, writes what gathered since the last pass. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.off?.();
    await this.run().catch(this.opts.onError);
  }
}
