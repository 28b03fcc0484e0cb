// Figures 8 and 10: one node on PostgreSQL beside one on SQLite (accepts and
// the pipeline), and the PostgreSQL lifecycle per message beside pg-boss's
// job lifecycle (bench/pgboss-anchor.mjs).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countsAt, countsDelta, describeStatements, describeTrips, monoUs, perMessage, takeCounts } from '../pg-statements.mjs';
import { HERE, LIFECYCLE_MESSAGES, LIFECYCLE_RATE, PIPELINE_MESSAGES, ROOT, WARMUP_MESSAGES } from '../lib/options.mjs';
import { children, cpuMs, log, needFlags, sleep, startServe, tempDir } from '../lib/proc.mjs';
import { call, destinatario, needPaths, setupClient, textBody, waitReceiver } from '../lib/http.mjs';
import { load, pushPaced } from '../lib/load.mjs';
import { cpuPer, f0, f2, lat, ratio, results } from '../lib/results.mjs';
import { pgNodeFlags, pgTableWrites, pgWal, pgWalSince, pgWatcher, postgresCpuMs, postgresSchema } from '../lib/postgres.mjs';
import { measurePipeline, warmPipeline } from './pipeline.mjs';

// ---------- 8. PostgreSQL beside SQLite ----------

/** One node on PostgreSQL against one on SQLite, same load, same run: queue accepts (as figure 1) and the whole pipeline (as figure 2). */
export async function figurePostgres(receiver) {
  needFlags('--store');
  // The measured window alone (load's warm-up left out): PostgreSQL's CPU, and on PostgreSQL the node's statements.
  const accept = async (extra, withPostgres) => {
    const countDir = withPostgres ? tempDir('pasarela-bench-pgcount-') : null;
    const s = countDir
      ? await startServe(extra, undefined, { PASARELA_BENCH_PGCOUNT_DIR: countDir }, ['--require', join(HERE, 'pg-count.cjs')])
      : await startServe(extra);
    try {
      const c = await setupClient(s, 50);
      let pg0 = 0;
      let pg1 = 0;
      const marks = [];
      const got = await load({
        origin: s.url,
        pid: s.pid,
        key: c.key,
        path: '/api/mensaje_enviar_texto.php',
        makeBody: (w, n) => textBody(c.lines, w, n, false),
        atStart: () => {
          if (!withPostgres) return;
          pg0 = postgresCpuMs();
          marks.push(monoUs());
          process.kill(s.pid, 'SIGUSR2');
        },
        atEnd: () => {
          if (!withPostgres) return;
          pg1 = postgresCpuMs();
          marks.push(monoUs());
          process.kill(s.pid, 'SIGUSR2');
        },
      });
      let counts = null;
      if (countDir) {
        const [a, b] = await countsAt(countDir, s.pid, marks);
        counts = perMessage(countsDelta([[a, b]]), got.ok);
      }
      return { got, pgCpu: withPostgres ? pg1 - pg0 : null, counts };
    } finally {
      await s.stop();
    }
  };
  let pg = await postgresSchema();
  try {
    log('  queue accept on SQLite...');
    const lite = await accept([], false);
    log('  queue accept on PostgreSQL...');
    const post = await accept(['--store', pg.store], true);
    const r = ratio(post.got.per_s, lite.got.per_s);
    const pgPer = post.pgCpu / Math.max(1, post.got.ok);
    results.push({
      figure: '8a. queue accept on PostgreSQL / SQLite',
      measured: `${f0(post.got.per_s)}/s on PostgreSQL (${lat(post.got)}, ${post.got.errors} errors; PostgreSQL CPU ${pgPer.toFixed(2)} ms/msg; ${describeTrips(post.counts)})`,
      baseline: `${f0(lite.got.per_s)}/s on SQLite (${lat(lite.got)}, ${cpuPer(lite.got.server_cpu_ms_per_ok)})`,
      ratio: r,
      target: 'reported',
      met: null,
      cpu: cpuPer(post.got.server_cpu_ms_per_ok),
      detail: { sqlite: lite.got, postgres: post.got, postgres_cpu_ms: post.pgCpu, postgres_statements_per_msg: post.counts },
    });
  } finally {
    await pg.drop();
  }
  pg = await postgresSchema();
  try {
    log(`  pipeline on SQLite (${PIPELINE_MESSAGES} messages)...`);
    const lite = await measurePipeline(receiver, [], null, false, true);
    log(`  pipeline on PostgreSQL (${PIPELINE_MESSAGES} messages)...`);
    const post = await measurePipeline(receiver, ['--store', pg.store], null, true);
    const r = ratio(post.perS, lite.perS);
    const done = Math.max(1, post.st.messages_done);
    results.push({
      figure: '8b. whole pipeline on PostgreSQL / SQLite',
      measured: `${f0(post.perS)} msgs/s on PostgreSQL (${post.st.messages_done} of ${post.push.ok} done${post.timedOut ? '; STALLED' : ''}; PostgreSQL CPU ${(post.pgCpu / done).toFixed(2)} ms/msg; ${describeTrips(post.counts)})`,
      baseline: `${f0(lite.perS)} msgs/s on SQLite (${cpuPer(lite.cpu / Math.max(1, lite.st.messages_done))}; ${describeStatements(lite.counts)})`,
      ratio: r,
      target: 'reported',
      met: null,
      cpu: cpuPer(post.cpu / done),
      detail: {
        sqlite: { per_s: lite.perS, server_cpu_ms: lite.cpu, statements_per_msg: lite.counts, receiver: lite.st },
        postgres: { per_s: post.perS, server_cpu_ms: post.cpu, postgres_cpu_ms: post.pgCpu, statements_per_msg: post.counts, receiver: post.st },
      },
    });
  } finally {
    await pg.drop();
  }
}

// ---------- 10. the PostgreSQL lifecycle per message, pg-boss beside it ----------

/**
 * One node on PostgreSQL, the flags of figure 2, its statements counted
 * (bench/pg-count.cjs) and its backends' CPU read from /proc (found by
 * application_name). WARMUP_MESSAGES go through the whole pipeline first,
 * unmeasured; then LIFECYCLE_MESSAGES queued texts at LIFECYCLE_RATE/s (open
 * loop), until the receiver has all four message.status events of each. Per
 * message: the node's CPU, its backends' CPU, round trips, statements,
 * transactions, the simulator's own statements apart. Then, same run, same
 * PostgreSQL, pg-boss's job lifecycle (bench/pgboss-anchor.mjs) at the same
 * rate: the anchor the figure is read against.
 */
export async function figureLifecycle(receiver) {
  needFlags('--store', '--queue-gap-ms', '--sim-delivery-ms', '--sim-read-ms', '--allow-private-urls');
  const tag = Date.now().toString(36);
  const pg = await postgresSchema();
  const app = `bench10_${tag}_`;
  const countDir = tempDir('pasarela-bench-pgcount-');
  const flags = pgNodeFlags(pg.store, `${app}node`);
  let out;
  try {
    const s = await startServe(flags, undefined, { PASARELA_BENCH_PGCOUNT_DIR: countDir }, ['--require', join(HERE, 'pg-count.cjs')]);
    let watch;
    try {
      await needPaths(s, '/api/webhook.php');
      const c = await setupClient(s, 50);
      await call(receiver.url, 'POST', '/_reset');
      await call(s.url, 'POST', '/api/webhook.php', c.key, {
        url: `${receiver.url}/hooks`,
        secret: 'bench-secret-0123456789abcdef',
        eventos: 'message.status',
      });
      const body = (i) => ({
        celular_id: c.lines[i % 50],
        destinatario: destinatario(i),
        mensaje: `Hola, su pedido ${i} está en camino. Gracias por su compra.`,
      });
      await warmPipeline(s, receiver, c, (i) => body(800_000 + i));
      watch = await pgWatcher(pg.store, app, [s.pid], { leases: false });
      log(`  pasarela: ${LIFECYCLE_MESSAGES} messages at ${LIFECYCLE_RATE}/s, then waiting for all their events...`);
      const c0 = await takeCounts(countDir, s.pid);
      const m0 = { cpu: cpuMs(s.pid), pg: await watch.snapshot(), wal: await pgWal(pg.url) };
      const push = await pushPaced({
        origins: [s.url],
        key: c.key,
        path: '/api/mensaje_enviar_texto.php',
        n: LIFECYCLE_MESSAGES,
        perS: LIFECYCLE_RATE,
        makeBody: (i) => body(900_000 + i),
      });
      const { st, stalled } = await waitReceiver(receiver, s, (x) => x.messages_done >= push.ok);
      const m1 = { cpu: cpuMs(s.pid), pg: await watch.snapshot(), wal: await pgWalSince(pg.url, m0.wal) };
      const c1 = await takeCounts(countDir, s.pid);
      const done = Math.max(1, st.messages_done);
      const pgd = watch.delta(m0.pg, m1.pg);
      out = {
        messages: LIFECYCLE_MESSAGES,
        rate_per_s: LIFECYCLE_RATE,
        done: st.messages_done,
        stalled,
        accept: push,
        span_ms: (st.done_last_at ?? Date.now()) - push.started_at,
        serve_ms_per_msg: (m1.cpu - m0.cpu) / done,
        postgres_ms_per_msg: pgd.total / done,
        total_ms_per_msg: (m1.cpu - m0.cpu + pgd.total) / done,
        postgres_backends: pgd.backends,
        statements_per_msg: perMessage(countsDelta([[c0, c1]]), st.messages_done),
        wal_bytes_per_msg: m1.wal / done,
      };
    } finally {
      await watch?.close().catch(() => {});
      await s.stop();
    }
    // Warm-up included: the share of updates that were HOT (no index entry written) is what it shows.
    if (out) out.table_writes = await pgTableWrites(pg.url, pg.schema).catch((err) => `unread: ${err.message}`);
  } finally {
    await pg.drop();
  }
  const anchor = await pgBossAnchor(pg.url, tag);
  const p = out.statements_per_msg;
  results.push({
    figure: '10a. PostgreSQL lifecycle per message',
    measured:
      `${cpuPer(out.serve_ms_per_msg)} node + PostgreSQL ${out.postgres_ms_per_msg.toFixed(2)} ms/msg = ${out.total_ms_per_msg.toFixed(2)} ms/msg; ${describeTrips(p)}; ` +
      `WAL ${(out.wal_bytes_per_msg / 1024).toFixed(1)} KiB/msg (the whole database server's); ` +
      `${out.done} of ${out.messages} done${out.stalled ? ' STALLED' : ''} at ${LIFECYCLE_RATE}/s offered, last done ${(out.span_ms / 1000).toFixed(1)} s`,
    baseline: '- (the baseline of 10b)',
    ratio: NaN,
    target: 'reported',
    met: null,
    cpu: cpuPer(out.serve_ms_per_msg),
    detail: out,
  });
  const r = ratio(out.total_ms_per_msg, anchor.total_ms_per_job);
  const trips = ratio(p.product.round_trips, anchor.statements_per_job.round_trips);
  results.push({
    figure: '10b. pasarela message / pg-boss job (send, fetch, complete)',
    measured: `pg-boss: ${cpuPer(anchor.node_ms_per_job, 'job')} node + PostgreSQL ${anchor.postgres_ms_per_job.toFixed(2)} ms/job = ${anchor.total_ms_per_job.toFixed(2)} ms/job; ${anchor.statements_per_job.round_trips.toFixed(1)} round trips/job; ${f0(anchor.jobs_per_s)} jobs/s at ${LIFECYCLE_RATE}/s offered`,
    baseline: `10a: ${out.total_ms_per_msg.toFixed(2)} ms/msg, ${p.product.round_trips.toFixed(1)} round trips/msg`,
    ratio: r,
    ratioText: `${f2(r)} CPU, ${f2(trips)} round trips`,
    target: 'reported',
    met: null,
    cpu: cpuPer(anchor.node_ms_per_job, 'job'),
    detail: { pasarela_over_pgboss_cpu: r, pasarela_over_pgboss_round_trips: trips, pgboss: anchor },
  });
}

/**
 * pg-boss's job lifecycle (bench/pgboss-anchor.mjs, its own process and
 * schema) at LIFECYCLE_RATE for LIFECYCLE_MESSAGES jobs after as many
 * warm-up jobs as figure 10's messages had; its CPU, its backends' CPU (by
 * application_name, as pasarela's), its round trips. The schema is dropped.
 */
async function pgBossAnchor(url, tag) {
  const schema = `bench_pgboss_${tag}`;
  const app = `bench10_${tag}_pgboss`;
  const pgMod = (await import('pg')).default;
  const watch = await pgWatcher(url, app, [], { leases: false });
  const child = spawn(
    process.execPath,
    [
      '--require',
      join(HERE, 'pg-count.cjs'),
      join(HERE, 'pgboss-anchor.mjs'),
      url,
      schema,
      app,
      String(LIFECYCLE_MESSAGES),
      String(LIFECYCLE_RATE),
      String(WARMUP_MESSAGES),
    ],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), LANG: 'C.UTF-8' } },
  );
  children.add(child);
  let err = '';
  child.stderr.on('data', (d) => (err = (err + String(d)).slice(-4000)));
  const lines = [];
  let wake = () => {};
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += String(d);
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
      wake();
    }
  });
  const exited = new Promise((resolve) => child.once('exit', (code) => (children.delete(child), resolve(code))));
  const nextLine = async () => {
    while (lines.length === 0) {
      if (child.exitCode !== null) throw new Error(`pgboss-anchor.mjs ended (${child.exitCode}): ${err.slice(-500)}`);
      await Promise.race([new Promise((r) => (wake = r)), sleep(500)]);
    }
    return lines.shift();
  };
  try {
    log(`  pg-boss anchor: ${WARMUP_MESSAGES} jobs of warm-up, then ${LIFECYCLE_MESSAGES} at ${LIFECYCLE_RATE}/s...`);
    if ((await nextLine()) !== 'warm') throw new Error('pgboss-anchor.mjs did not warm up');
    const pg0 = await watch.snapshot();
    child.stdin.write('go\n');
    const res = JSON.parse(await nextLine());
    const pg1 = await watch.snapshot();
    await exited;
    const pgd = watch.delta(pg0, pg1);
    return {
      version: JSON.parse(readFileSync(join(ROOT, 'node_modules', 'pg-boss', 'package.json'), 'utf8')).version,
      jobs: res.jobs,
      jobs_per_s: (res.jobs * 1000) / Math.max(1, res.ended_at - res.started_at),
      node_ms_per_job: res.cpu_ms / res.jobs,
      postgres_ms_per_job: pgd.total / res.jobs,
      total_ms_per_job: (res.cpu_ms + pgd.total) / res.jobs,
      postgres_backends: pgd.backends,
      empty_fetches: res.empty_fetches,
      statements_per_job: perMessage(res.counts, res.jobs),
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await watch.close().catch(() => {});
    const c = new pgMod.Client({ connectionString: url });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  }
}
