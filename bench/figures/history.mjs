// Figures 6, 14 and 15, read from bench/historial.mjs (run once for the three,
// on its own 1M store) and the bench/results/historial.json it writes.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, SKIP_HISTORIAL } from '../lib/options.mjs';
import { children, log, NotApplicable } from '../lib/proc.mjs';
import { f2, ratio, results } from '../lib/results.mjs';

// ---------- 6. history ----------

/** bench/historial.mjs, run once for figures 6 and 14 (it measures both on the same 1M store); its stdout. */
let historialRun = null;
function runHistorialScript() {
  historialRun ??= (async () => {
    log('  node bench/historial.mjs (1M messages, then the panel pages; a few minutes)...');
    const out = await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [join(HERE, 'historial.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
      children.add(child);
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.once('exit', (code) => {
        children.delete(child);
        if (code === 0) resolve(text);
        else reject(new Error(`bench/historial.mjs exited ${code}:\n${text.slice(-1000)}`));
      });
    });
    return out;
  })();
  return historialRun;
}

export async function figureHistorial() {
  const name = '6. history page + total at 1M, p95';
  const target = '<= 25 ms';
  const script = join(HERE, 'historial.mjs');
  if (SKIP_HISTORIAL || !existsSync(script)) {
    results.push({
      figure: name,
      measured: 'skipped',
      baseline: '-',
      ratio: NaN,
      target,
      met: null,
      cpu: '-',
      note: SKIP_HISTORIAL ? '--skip-historial' : 'bench/historial.mjs not found',
    });
    return;
  }
  const out = await runHistorialScript();
  let worst;
  let pageOnly;
  let rows;
  let scenario;
  try {
    const j = JSON.parse(readFileSync(join(HERE, 'results', 'historial.json'), 'utf8'));
    const w = j.results.reduce((a, b) => (b.with_total_ms.p95 > a.with_total_ms.p95 ? b : a));
    worst = w.with_total_ms.p95;
    pageOnly = w.page_only_ms.p95;
    scenario = w.scenario;
    rows = j.rows;
  } catch {
    worst = Number(/worst p95 with total: ([\d.]+) ms/.exec(out)?.[1]);
  }
  results.push({
    figure: name,
    measured: `${f2(worst)} ms worst p95${scenario ? ` (${scenario})` : ''}`,
    baseline: pageOnly === undefined ? '-' : `${f2(pageOnly)} ms (same page without its total)`,
    ratio: pageOnly === undefined ? NaN : ratio(worst, pageOnly),
    target,
    met: worst <= 25,
    cpu: '- (in-process query)',
    detail: { rows, worst_p95_ms: worst, page_only_p95_ms: pageOnly, scenario, results_file: 'bench/results/historial.json' },
  });
}

// ---------- 14. panel pages at 1M ----------

/**
 * A page of the panel's history or webhook deliveries, timed through the real
 * app (bench/historial.mjs serves its 1M store in-process and signs in an
 * operator session) against the same pages on a 100-message store: same
 * time, since both read through the API's indexes. The figure is the worst
 * p95 ratio among pages that render as many rows on both stores.
 */
export async function figurePanel() {
  const name = '14. panel history/deliveries page, 1M vs 100 messages, p95';
  const target = '<= 1.5x';
  const script = join(HERE, 'historial.mjs');
  if (SKIP_HISTORIAL || !existsSync(script)) throw new NotApplicable(SKIP_HISTORIAL ? '--skip-historial' : 'bench/historial.mjs not found');
  await runHistorialScript();
  const j = JSON.parse(readFileSync(join(HERE, 'results', 'historial.json'), 'utf8'));
  const panel = j.panel;
  if (!panel) throw new Error('bench/results/historial.json has no panel section (run without --skip-panel)');
  const w = panel.pages.find((p) => p.page === panel.worst_page);
  results.push({
    figure: name,
    measured: `${f2(w.big.ms.p95)} ms p95 at ${panel.rows.toLocaleString('en')} (${w.page})`,
    baseline: `${f2(w.small.ms.p95)} ms at ${panel.small_rows}`,
    ratio: panel.worst_ratio,
    target,
    met: panel.worst_ratio <= panel.target_ratio,
    cpu: '- (in-process, inject)',
    detail: { ...panel, results_file: 'bench/results/historial.json' },
  });
}

// ---------- 15. overview, charts and message page at 1M ----------

/**
 * The operator's overview, the chart pages and a message's page, timed as
 * figure 14's pages (bench/historial.mjs, the same run) but served at the
 * fixture's last minute, so the charts' windows hold its newest messages:
 * a chart reads kept counts, so it costs the same on both stores. The
 * message page is skipped, with a note, by a build that answers it 404.
 */
export async function figureCharts() {
  const name = '15. overview, charts, message page, 1M vs 100 messages, p95';
  const script = join(HERE, 'historial.mjs');
  if (SKIP_HISTORIAL || !existsSync(script)) throw new NotApplicable(SKIP_HISTORIAL ? '--skip-historial' : 'bench/historial.mjs not found');
  await runHistorialScript();
  const j = JSON.parse(readFileSync(join(HERE, 'results', 'historial.json'), 'utf8'));
  const charts = j.panel?.charts;
  if (!charts) throw new Error('bench/results/historial.json has no panel.charts section (run without --skip-panel)');
  const w = charts.pages.find((p) => p.page === charts.worst_page);
  for (const p of charts.pages) if (p.skipped) log(`  15: ${p.page} skipped (${p.skipped})`);
  results.push({
    figure: name,
    measured: `${f2(w.big.ms.p95)} ms p95 at ${j.panel.rows.toLocaleString('en')} (${w.page})`,
    baseline: `${f2(w.small.ms.p95)} ms at ${j.panel.small_rows}`,
    ratio: charts.worst_ratio,
    target: '<= 1.5x',
    met: charts.worst_ratio <= charts.target_ratio,
    cpu: '- (in-process, inject)',
    detail: { ...charts, results_file: 'bench/results/historial.json' },
  });
}
