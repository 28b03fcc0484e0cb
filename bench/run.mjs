#!/usr/bin/env node
// pasarela benchmarks: the figures of the performance issues, each a
// ratio to a baseline measured in the same run, with the server's CPU per
// message beside it (the machine is shared and noisy: absolute rates swing
// 2x, the ratios and the CPU per message much less). See bench/README.md.
//
//   npm run bench            (= npm run build && node bench/run.mjs)
//   node bench/run.mjs --help   (the flags; they are read in bench/lib/options.mjs)
//
// The server under test is the real binary (`node bin/pasarela serve`) in a
// child process with a fresh data directory per figure; the bare-route
// baseline is bench/baseline-server.mjs and the webhook receiver
// bench/receiver.mjs, each its own child process; the load generator (undici)
// runs here. A figure whose flag or endpoint the server does not have, or
// that fails, is reported as n/a or error with the reason; the run goes on.
// Prints a table; writes bench/results/latest.json with every detail.
//
// This file is the runner: the figures in their order, the table and the
// JSON. The helpers are in bench/lib/ (flags, child processes and /proc,
// HTTP, load generators, PostgreSQL and Redis, result rows), the figures in
// bench/figures/ (16 and 17: bench/engine.mjs and bench/engine-nodes.mjs).

// First: it ends the run when dist/ is missing (or prints --help) before any other module starts a process.
import { args, ENGINE_CONTACTS, ENGINE_LINES, HERE, ROOT, want } from './lib/options.mjs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { figureEngine } from './engine.mjs';
import { figureEngineNodes } from './engine-nodes.mjs';
import { children, log, memOf, needFlags, SERVE_FLAGS, startChild, startServe, stopQuietly } from './lib/proc.mjs';
import { call, setupClient } from './lib/http.mjs';
import { load, percentiles } from './lib/load.mjs';
import { cpuPer, f0, f2, figure, lat, ratio, results } from './lib/results.mjs';
import { benchRedis, dropRedisPrefix, postgresSchema } from './lib/postgres.mjs';
import { figureAcceptGrowth, figureDirecto, figureDrain, figureQueueAccept } from './figures/queue.mjs';
import { figurePipeline } from './figures/pipeline.mjs';
import { figureLifecycle, figurePostgres } from './figures/postgres.mjs';
import { figureNodes } from './figures/nodes.mjs';
import { figureLive, figureWebhooks } from './figures/webhooks.mjs';
import { figureDocument, figureDocumentGateway, figureHostileUploads } from './figures/memory.mjs';
import { figureCharts, figureHistorial, figurePanel } from './figures/history.mjs';
import { figureEventStream } from './figures/stream.mjs';
import { figureBulk } from './figures/bulk.mjs';
import { figureIdle } from './figures/idle.mjs';
import { figurePoolAccept } from './figures/pool.mjs';
import { figureScheduleScan } from './figures/schedule.mjs';

// ---------- main ----------

const started = Date.now();
log(
  `pasarela bench: ${cpus().length} cores, node ${process.version}, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; serve flags: ${SERVE_FLAGS.size}`,
);
const baseline = [1, 2, [3, '3a', '3b'], 4, '4c'].some(want) ? await startChild(join(HERE, 'baseline-server.mjs'), []) : null;
const receiver = [2, 7, 8, 9, 10, 11].some(want) ? await startChild(join(HERE, 'receiver.mjs'), []) : null;
try {
  await figure(1, '1. queue accept, accepted/s', '>= 0.50', () => figureQueueAccept(baseline));
  await figure(2, '2. whole pipeline, gap 0-0, msgs/s done', '>= 0.10', () => figurePipeline(baseline, receiver));
  await figure('1c', '1c. queue accept, background thread, 1M store vs empty', '<= 1.2x', () => figureAcceptGrowth());
  await figure([3, '3a', '3b'], '3a. directo (sim), sent/s', '>= 0.30', () => figureDirecto(baseline));
  await figure(4, '4a. 50 MB base64 document, peak RSS', '<= 1x file', () => figureDocument(baseline));
  await figure(4, '4b. 5 x 180 MB unauthenticated bodies', 'RSS <= +100 MB, /health <= 100 ms', () => figureHostileUploads());
  await figure('4c', '4c. 50 MB base64 document through Evolution, peak RSS', '<= 1x file', () => figureDocumentGateway(baseline));
} finally {
  if (baseline) await stopQuietly(baseline);
}
await figure(5, '5. queue drain, 200 lines', '>= 0.95', () => figureDrain());
await figure(6, '6. history page + total at 1M, p95', '<= 25 ms', () => figureHistorial());
await figure(12, '12. event stream, 10 readers', 'reported', () => figureEventStream());
try {
  await figure(7, '7. webhook deliveries, events/s', '>= 1000 events/s', () => figureWebhooks(receiver));
  await figure(8, '8. PostgreSQL beside SQLite', 'reported', () => figurePostgres(receiver));
  await figure(9, '9. several nodes on PostgreSQL: CPU per message, 1/2/3 nodes', '3 nodes >= 0.85 of 1', () => figureNodes(receiver));
  await figure(10, '10. PostgreSQL lifecycle per message, pg-boss beside it', 'reported', () => figureLifecycle(receiver));
  await figure(11, '11. live webhooks while messages flow', '>= 1000 events/s', () => figureLive(receiver));
} finally {
  if (receiver) await stopQuietly(receiver);
}
await figure(13, '13. send bulk, rows/s', '>= 10', () => figureBulk());
await figure(14, '14. panel history/deliveries page, 1M vs 100 messages, p95', '<= 1.5x', () => figurePanel());
await figure(15, '15. overview, charts, message page, 1M vs 100 messages, p95', '<= 1.5x', () => figureCharts());
await figure(16, '16. the engine against the fake network', 'reported', () => {
  needFlags('--gateway', '--baileys-ws-url');
  return figureEngine({
    root: ROOT,
    lines: ENGINE_LINES,
    contacts: ENGINE_CONTACTS,
    log,
    results,
    startServe,
    stopQuietly,
    setupClient,
    call,
    load,
    memOf,
    percentiles,
    children,
    fmt: { f0, f2, cpuPer, ratio, lat },
  });
});
await figure(17, '17. the engine on several nodes', 'takeover <= 15 s after gone', () => {
  needFlags('--gateway', '--baileys-ws-url', '--store', '--counters', '--counters-prefix', '--engine-key-file', '--engine-settle');
  const helpers = { log, results, startServe, stopQuietly, call, percentiles, children, postgresSchema, benchRedis, dropRedisPrefix };
  return figureEngineNodes({ root: ROOT, ...helpers, fmt: { f0, f2, cpuPer, ratio } });
});
await figure(18, '18. idle, 1,000 linked lines, nothing to send', '<= 2 ms/s SQLite, <= 4 ms/s node + PostgreSQL', () => figureIdle());
await figure(19, '19. pool accept / one-line accept, accepted/s', '>= 0.90', () => figurePoolAccept());
await figure(20, '20. scheduled-send scan, 1M scheduled vs empty store, per message', '>= 0.90', () => figureScheduleScan());

const cols = [
  ['figure', (r) => r.figure],
  ['measured', (r) => r.measured],
  ['baseline (same run)', (r) => r.baseline],
  ['ratio', (r) => r.ratioText ?? (Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : '-')],
  ['target', (r) => r.target],
  ['met', (r) => (r.met === null ? 'n/a' : r.met ? 'yes' : 'NO')],
  ['server CPU', (r) => r.cpu ?? '-'],
];
const widths = cols.map(([h, f]) => Math.max(h.length, ...results.map((r) => String(f(r)).length)));
const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
console.log('');
console.log(line(cols.map(([h]) => h)));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const r of results) console.log(line(cols.map(([, f]) => f(r))));
const met = results.filter((r) => r.met === true).length;
const judged = results.filter((r) => r.met !== null).length;
console.log(
  `\ntargets met: ${met} of ${judged}${results.some((r) => r.met === null) ? ' (some n/a or skipped)' : ''}; ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
for (const r of results) if (r.met === false) console.log(`  not met: ${r.figure}`);

const outFile = join(HERE, 'results', 'latest.json');
mkdirSync(dirname(outFile), { recursive: true });
writeFileSync(
  outFile,
  `${JSON.stringify(
    {
      generated_at: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: cpus().length,
      memory_bytes: totalmem(),
      loadavg_at_start: loadavg(),
      args,
      duration_s: (Date.now() - started) / 1000,
      results,
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${outFile}`);
