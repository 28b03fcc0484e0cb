#!/usr/bin/env node
// The anchor of figure 10 (bench/figures/postgres.mjs): pg-boss's job lifecycle
// on the same PostgreSQL, in a process of its own so its CPU is its own.
// Started by the figure with `--require bench/pg-count.cjs` (its round trips counted by
// text, as pasarela's are).
//
//   node --require bench/pg-count.cjs bench/pgboss-anchor.mjs URL SCHEMA APP JOBS RATE WARMUP
//
// URL is the database (no search_path), SCHEMA pg-boss's own (created by
// pg-boss, dropped by the figure afterwards), APP the application_name of its
// connections (the figure finds their backends by it). Each job: send, then one
// fetch of one job (retried while the fetch finds none: another job's fetch
// may hold the row) and its complete, the i-th started at i / RATE seconds
// (open loop, as figure 10 paces pasarela). WARMUP jobs go first, unmeasured;
// then it prints `warm` on stdout and waits for `go` on stdin; then it runs
// JOBS jobs and prints one JSON line: its CPU (ms), the window, the round
// trips by text over the window.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import PgBoss from 'pg-boss';

const [url, schema, app, jobsArg, rateArg, warmArg] = process.argv.slice(2);
const { snapshot } = createRequire(import.meta.url)('./pg-count.cjs');
const QUEUE = 'bench';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// pg-boss's defaults but no cron (pasarela's lifecycle has none either); supervise (its maintenance) stays on.
const boss = new PgBoss({ connectionString: url, schema, application_name: app, schedule: false });
boss.on('error', (err) => process.stderr.write(`pg-boss: ${err.message}\n`));
await boss.start();
await boss.createQueue(QUEUE);

let empty = 0;
async function lifecycle(i) {
  await boss.send(QUEUE, { i, texto: `Hola, su pedido ${i} está en camino. Gracias por su compra.` });
  for (;;) {
    const jobs = await boss.fetch(QUEUE);
    if (jobs && jobs.length > 0) {
      await boss.complete(
        QUEUE,
        jobs.map((j) => j.id),
      );
      return;
    }
    empty += 1;
    await sleep(5);
  }
}

/** `n` lifecycles, the i-th started at i / perS seconds; resolves when all are complete. */
async function paced(n, perS) {
  const t0 = performance.now();
  const all = [];
  for (let i = 0; i < n; i += 1) {
    const wait = t0 + (i * 1000) / perS - performance.now();
    if (wait > 1) await sleep(wait);
    all.push(lifecycle(i));
  }
  await Promise.all(all);
}

await paced(Number(warmArg), Number(rateArg));
process.stdout.write('warm\n');
const lines = createInterface({ input: process.stdin });
for await (const l of lines) if (l.trim() === 'go') break;

empty = 0;
const c0 = snapshot();
const cpu0 = process.cpuUsage();
const t0 = Date.now();
await paced(Number(jobsArg), Number(rateArg));
const t1 = Date.now();
const cpu = process.cpuUsage(cpu0);
const c1 = snapshot();
const counts = {};
for (const [k, v] of Object.entries(c1.counts)) {
  const n = v.n - (c0.counts[k]?.n ?? 0);
  if (n > 0) counts[k] = { n, ms: v.ms - (c0.counts[k]?.ms ?? 0) };
}
process.stdout.write(
  `${JSON.stringify({ jobs: Number(jobsArg), cpu_ms: (cpu.user + cpu.system) / 1000, started_at: t0, ended_at: t1, empty_fetches: empty, counts })}\n`,
);
await boss.stop({ graceful: true, wait: true, timeout: 5000 });
process.exit(0);
