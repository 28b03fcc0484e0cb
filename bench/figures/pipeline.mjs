// Figure 2: a fixed number of queued messages through the whole pipeline,
// until the receiver has all their events. measurePipeline and warmPipeline
// serve figures 8 and 10 too.
import { join } from 'node:path';
import { countsDelta, perMessage, takeCounts, takeThreadCounts } from '../pg-statements.mjs';
import { HERE, PIPELINE_MESSAGES, PIPELINE_WARMUP, WARMUP_MESSAGES } from '../lib/options.mjs';
import { cpuMs, log, needFlags, requestThreadCpuMs, startServe, tempDir } from '../lib/proc.mjs';
import { call, needPaths, setupClient, textBody, waitReceiver } from '../lib/http.mjs';
import { load, pushN } from '../lib/load.mjs';
import { cpuPer, f0, f2, ratio, results } from '../lib/results.mjs';
import { postgresCpuMs } from '../lib/postgres.mjs';
import { anchorFailed, anchorRow, bullmqLifecycle } from '../lib/bullmq.mjs';

const NAME_2B = '2b. pasarela pipeline / BullMQ lifecycle (add, worker, complete), CPU';

/**
 * A fixed number of messages, not a time window: N queued sends go in as fast
 * as 50 connections push them, and the clock runs from the first request to
 * the moment the last message is fully done (all four of its message.status
 * events, pendiente, enviado, entregado and leido, received by the receiver).
 * A window would count work the server did for messages that are not done
 * when it closes (accepts run ahead of deliveries), or miss the tail; a fixed
 * N charges the pipeline for all the work of exactly the messages it reports.
 */
export async function figurePipeline(baseline, receiver) {
  const name = '2. whole pipeline, gap 0-0, msgs/s done';
  const m = await measurePipeline(receiver, [], baseline);
  const { base, push, st, cpu, timedOut, spanMs, perS, flags, client } = m;
  const r = ratio(perS, base.per_s);
  // The anchor after pasarela's server stopped: the same bodies and key header, pushed the same way.
  const bull = await bullmqLifecycle({
    path: '/api/mensaje_enviar_texto.php',
    key: client.key,
    makeBody: (i) => textBody(client.lines, i, 700_000 + i, false),
  }).catch((err) => anchorFailed(err));
  const perMsg = cpu / Math.max(1, st.messages_done);
  results.push({
    figure: name,
    measured:
      `${f0(perS)} msgs/s (${st.messages_done} of ${push.ok} done in ${(spanMs / 1000).toFixed(1)} s; accepts took ${((push.ended_at - push.started_at) / 1000).toFixed(1)} s; ` +
      `${st.distinct_ids} events, ${f0((st.distinct_ids * 1000) / spanMs)}/s; request thread ${cpuPer(push.request_thread_cpu_ms_per_accept, 'accept')} while accepting${timedOut ? '; STALLED: no event for 20 s' : ''})`,
    baseline: `${f0(base.per_s)}/s bare route (${cpuPer(base.server_cpu_ms_per_ok, 'req')})`,
    ratio: r,
    target: '>= 0.10',
    met: r >= 0.1 && !timedOut && st.messages_done === PIPELINE_MESSAGES,
    cpu: cpuPer(perMsg),
    detail: {
      messages: PIPELINE_MESSAGES,
      serve_flags: flags,
      accept: push,
      receiver: st,
      span_ms: spanMs,
      server_cpu_ms: cpu,
      stalled: timedOut,
      baseline: base,
      pasarela_over_bullmq_cpu: ratio(perMsg, bull.cpu_ms_per_job),
      bullmq: bull,
    },
  });
  if (bull.error) return results.push(anchorRow(NAME_2B, '<= 3.0', bull));
  const rb = ratio(perMsg, bull.cpu_ms_per_job);
  results.push({
    figure: NAME_2B,
    measured:
      `BullMQ ${bull.version}: ${f0(bull.jobs_per_s)} jobs/s done (${bull.jobs} after ${bull.warmup_jobs} of warm-up), API ${cpuPer(bull.api_cpu_ms_per_job, 'job')} + ` +
      `worker ${cpuPer(bull.worker_cpu_ms_per_job, 'job')} + Redis (AOF everysec) ${cpuPer(bull.redis_cpu_ms_per_job, 'job')} = ${cpuPer(bull.cpu_ms_per_job, 'job')}`,
    baseline: `2: ${cpuPer(perMsg)} (the server's; the receiver's apart)`,
    ratio: rb,
    ratioText: `${f2(rb)} CPU`,
    target: '<= 3.0',
    met: rb <= 3,
    cpu: cpuPer(bull.cpu_ms_per_job, 'job'),
    detail: { pasarela_over_bullmq_cpu: rb, bullmq: bull },
  });
}

/**
 * PIPELINE_MESSAGES queued sends through a server started with `extra`
 * flags, timed until the receiver has every message.status of each, after
 * WARMUP_MESSAGES went the same way unmeasured; with a `baseline`, the bare
 * route is measured first on the same client. The CPU of the PostgreSQL
 * server processes is measured beside the node's when asked, and the node's
 * statements are counted (bench/pg-count.cjs); with `countSqlite`, those it
 * runs on SQLite, every thread (bench/sqlite-count.cjs).
 */
export async function measurePipeline(receiver, extra, baseline = null, withPostgres = false, countSqlite = false) {
  needFlags('--queue-gap-ms', '--sim-delivery-ms', '--sim-read-ms', '--allow-private-urls');
  const flags = ['--queue-gap-ms', '0-0', '--sim-delivery-ms', '1', '--sim-read-ms', '1', '--allow-private-urls', ...extra];
  const counter = withPostgres ? 'pg-count.cjs' : countSqlite ? 'sqlite-count.cjs' : null;
  const countDir = counter ? tempDir('pasarela-bench-count-') : null;
  const s = countDir
    ? await startServe(flags, undefined, { PASARELA_BENCH_PGCOUNT_DIR: countDir }, ['--require', join(HERE, counter)])
    : await startServe(flags);
  const take = () => (withPostgres ? takeCounts(countDir, s.pid) : takeThreadCounts(countDir, s.pid));
  let counts = null;
  let base = null;
  let c;
  let push;
  let st;
  let cpu;
  let pgCpu = null;
  let timedOut = false;
  try {
    await needPaths(s, '/api/webhook.php');
    c = await setupClient(s, 50);
    if (baseline) {
      log('  baseline (bare Fastify)...');
      base = await load({
        origin: baseline.url,
        pid: baseline.pid,
        key: c.key,
        path: '/api/mensaje_enviar_texto.php',
        makeBody: (w, n) => textBody(c.lines, w, n, false),
      });
    }
    await call(receiver.url, 'POST', '/_reset');
    await call(s.url, 'POST', '/api/webhook.php', c.key, { url: `${receiver.url}/hooks`, secret: 'bench-secret-0123456789abcdef', eventos: 'message.status' });
    await warmPipeline(s, receiver, c, (i) => textBody(c.lines, i, 400_000 + i, false), undefined, PIPELINE_WARMUP);
    log(`  pasarela: ${PIPELINE_MESSAGES} messages, then waiting for all their events...`);
    const c0 = countDir ? await take() : null;
    const cpu0 = cpuMs(s.pid);
    const main0 = requestThreadCpuMs(s.pid);
    const pg0 = withPostgres ? postgresCpuMs() : 0;
    push = await pushN({
      origin: s.url,
      key: c.key,
      path: '/api/mensaje_enviar_texto.php',
      n: PIPELINE_MESSAGES,
      makeBody: (i) => textBody(c.lines, i, 500_000 + i, false),
    });
    // The request thread's CPU per accept while the worker, the receipts and the deliveries run beside it.
    push.request_thread_cpu_ms_per_accept = (requestThreadCpuMs(s.pid) - main0) / Math.max(1, push.ok);
    ({ st, stalled: timedOut } = await waitReceiver(receiver, s, (x) => x.messages_done >= push.ok));
    cpu = cpuMs(s.pid) - cpu0;
    if (withPostgres) pgCpu = postgresCpuMs() - pg0;
    if (c0) counts = perMessage(countsDelta([[c0, await take()]]), st.messages_done);
  } finally {
    await s.stop();
  }
  const spanMs = (st.done_last_at ?? Date.now()) - push.started_at;
  const perS = (st.messages_done * 1000) / spanMs;
  return { base, push, st, cpu, pgCpu, counts, timedOut, spanMs, perS, flags, client: c };
}

/**
 * The warm-up of a pipeline figure: `n` (WARMUP_MESSAGES) queued sends (bodies from
 * `body(i)`) through `s`, as fast as 50 connections push them, until the
 * receiver has all their events; then the receiver forgets them. So no
 * measured window pays for compiling the code or filling the caches.
 */
export async function warmPipeline(s, receiver, c, body, path = '/api/mensaje_enviar_texto.php', n = WARMUP_MESSAGES) {
  if (n <= 0) return;
  log(`  warm-up: ${n} messages through the pipeline, unmeasured...`);
  const warm = await pushN({ origin: s.url, key: c.key, path, n, makeBody: body });
  const w = await waitReceiver(receiver, s, (x) => x.messages_done >= warm.ok);
  if (w.stalled) throw new Error(`warm-up stalled: ${w.st.messages_done} of ${warm.ok} done`);
  await call(receiver.url, 'POST', '/_reset');
}
