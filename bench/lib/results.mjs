// The rows of the result table, the formatting of their cells, and figure():
// a figure's error or missing capability becomes its row, the run goes on.
import { MB, want } from './options.mjs';
import { log, NotApplicable } from './proc.mjs';

export const results = [];
export const ratio = (a, b) => (b > 0 ? a / b : NaN);
export const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '?');
export const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '?');
export const lat = (r) => `p50 ${f2(r.latency_ms.p50)} ms, p95 ${f2(r.latency_ms.p95)} ms`;
export const cpuPer = (ms, unit = 'msg') => (Number.isFinite(ms) ? `${ms.toFixed(3)} ms/${unit}` : '?');
export const mb = (b) => `${(b / MB).toFixed(0)} MB`;

/** Runs one figure; an error or a missing capability becomes its row instead of ending the run. */
export async function figure(n, name, target, fn) {
  if (!want(n)) return;
  log(`\n[${name}]`);
  const t0 = Date.now();
  try {
    await fn();
  } catch (err) {
    const na = err instanceof NotApplicable;
    log(`[${name}] ${na ? 'n/a' : 'ERROR'}: ${err.stack ?? err}`);
    results.push({
      figure: name,
      measured: `${na ? 'n/a' : 'error'}: ${String(err.message ?? err).slice(0, 300)}`,
      baseline: '-',
      ratio: NaN,
      target,
      met: na ? null : false,
      cpu: '-',
    });
  }
  log(`[${name}] ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
