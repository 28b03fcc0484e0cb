// Figures 1, 3 and 5: queue accepts and directo sends, each against the bare
// route of bench/baseline-server.mjs (3b on the cached 1M-message store of
// bench/big-store.mjs), the accepts' background thread on that store against
// an empty one (1c), and the drain of a held queue.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyStore, ensureBigStore } from '../big-store.mjs';
import Database from 'better-sqlite3';
import { BIG_ROWS, CACHE, CONNECTIONS, DURATION_MS, GROWTH_RATE, GROWTH_ROUNDS, REBUILD_STORE, ROOT, want, WARMUP_MS } from '../lib/options.mjs';
import { cpuMs, log, needFlags, sleep, startServe, startServeThreads, temps, threadCpuMs } from '../lib/proc.mjs';
import { call, destinatario, inParallel, setupClient, textBody, waitActive } from '../lib/http.mjs';
import { load, pushPaced } from '../lib/load.mjs';
import { cpuPer, f0, f2, lat, ratio, results } from '../lib/results.mjs';
import { anchorFailed, anchorRow, bullmqAccept } from '../lib/bullmq.mjs';

// ---------- 1. queue accept ----------

const NAME_1B = '1b. pasarela accept / BullMQ accept (Fastify route -> queue.add), CPU';

export async function figureQueueAccept(baseline) {
  const name = '1. queue accept, accepted/s';
  // Production pacing: no --queue-gap-ms (1-5 s between two sends of a line), default limits.
  const s = await startServe([]);
  let base;
  let got;
  let window;
  let c;
  const path = '/api/mensaje_enviar_texto.php';
  try {
    c = await setupClient(s, 50);
    const run = (target) => load({ origin: target.url, pid: target.pid, key: c.key, path, makeBody: (w, n) => textBody(c.lines, w, n, false) });
    log('  baseline (bare Fastify)...');
    base = await run(baseline);
    log('  pasarela...');
    const from = Date.now() + WARMUP_MS;
    got = await run(s);
    window = { from, to: Date.now() };
  } finally {
    await s.stop();
  }
  // The anchor after pasarela's server stopped: the same generator, bodies and key header, nothing else running.
  const bull = await bullmqAccept({ path, key: c.key, makeBody: (w, n) => textBody(c.lines, w, 600_000 + n, false) }).catch((err) => anchorFailed(err));
  const db = new Database(join(s.dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
  const w = db.prepare("SELECT COUNT(*) AS sent FROM mensajes WHERE modo = 'cola' AND enviado_at >= ? AND enviado_at < ?").get(window.from, window.to);
  const left = db.prepare("SELECT COUNT(*) AS n FROM mensajes WHERE estado = 'pendiente'").get().n;
  db.close();
  const workerPerS = (w.sent * 1000) / (window.to - window.from);
  const r = ratio(got.per_s, base.per_s);
  results.push({
    figure: name,
    measured: `${f0(got.per_s)}/s (${lat(got)}, ${got.errors} errors; worker sent ${f0(workerPerS)}/s meanwhile; request thread ${cpuPer(got.request_thread_cpu_ms_per_ok)})`,
    baseline: `${f0(base.per_s)}/s bare route (${lat(base)}, ${cpuPer(base.server_cpu_ms_per_ok, 'req')})`,
    ratio: r,
    target: '>= 0.50',
    met: r >= 0.5 && got.errors === 0,
    cpu: cpuPer(got.server_cpu_ms_per_ok),
    detail: {
      lines: 50,
      connections: CONNECTIONS,
      warmup_ms: WARMUP_MS,
      duration_ms: DURATION_MS,
      serve_flags: [],
      pasarela: got,
      baseline: base,
      worker_sent_per_s: workerPerS,
      pending_at_stop: left,
      pasarela_over_bullmq_cpu: ratio(got.server_cpu_ms_per_ok, bull.cpu_ms_per_job),
      bullmq: bull,
    },
  });
  if (bull.error) return results.push(anchorRow(NAME_1B, '<= 2.0', bull));
  const rb = ratio(got.server_cpu_ms_per_ok, bull.cpu_ms_per_job);
  results.push({
    figure: NAME_1B,
    measured: `BullMQ ${bull.version}: ${f0(bull.per_s)}/s (${lat(bull)}, ${bull.errors} errors), API ${cpuPer(bull.api_cpu_ms_per_job, 'job')} + Redis (AOF everysec) ${cpuPer(bull.redis_cpu_ms_per_job, 'job')} = ${cpuPer(bull.cpu_ms_per_job, 'job')}`,
    baseline: `1: ${cpuPer(got.server_cpu_ms_per_ok)} (request thread ${cpuPer(got.request_thread_cpu_ms_per_ok)})`,
    ratio: rb,
    ratioText: `${f2(rb)} CPU`,
    target: '<= 2.0',
    met: rb <= 2 && bull.errors === 0,
    cpu: cpuPer(bull.cpu_ms_per_job, 'job'),
    detail: { pasarela_over_bullmq_cpu: rb, bullmq: bull },
  });
}

// ---------- 1c. queue accept on the 1M store: the background thread ----------

/** The cached 1M-message store (built first when missing), copied for one run: { store, dir, copyMs }. */
async function bigStoreCopy(lines) {
  const store = await ensureBigStore({ root: ROOT, cacheDir: CACHE, rows: BIG_ROWS, lines, rebuild: REBUILD_STORE, log, startServe, setupClient });
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-bench-big-'));
  temps.push(dir);
  const tc = performance.now();
  copyStore(store.dir, dir);
  return { store, dir, copyMs: performance.now() - tc };
}

/**
 * Figure 1's bodies (production pacing, 50 lines) on an empty store and on the 1M-message store (its 5%
 * pendiente: a queued backlog on those very lines, each line's head waiting for a retry far ahead),
 * GROWTH_ROUNDS times each, interleaved. The background thread runs the queue worker: its CPU per accepted
 * message (/proc/PID/task/TID/stat, the thread's id from bench/lib/tid.cjs) must not grow with the waiting
 * backlog. Both stores get the same offer, GROWTH_RATE a second in an open loop: the worker's work follows the
 * sends its pacing allows, not the accepts, so under a closed loop a store whose request thread accepts less
 * (the 1M store's deeper indexes) would read as a dearer worker per accept.
 */
export async function figureAcceptGrowth() {
  const name = '1c. queue accept, background thread CPU/msg, 1M store vs empty';
  const one = async (s, key, lines) => {
    const tid = s.backgroundTid();
    // 50 lines on both stores (the 1M store's client has 100): the worker's pacing, and so its sends, per line.
    const fifty = lines.slice(0, 50);
    const push = (n, from) =>
      pushPaced({
        origins: [s.url],
        path: '/api/mensaje_enviar_texto.php',
        key,
        n,
        perS: GROWTH_RATE,
        connections: CONNECTIONS,
        makeBody: (i) => textBody(fifty, i, 700_000 + from + i, false),
      });
    await push(Math.round((GROWTH_RATE * WARMUP_MS) / 1000), 0);
    const bg0 = threadCpuMs(s.pid, tid);
    const all0 = cpuMs(s.pid);
    const t0 = performance.now();
    const got = await push(Math.round((GROWTH_RATE * DURATION_MS) / 1000), 100_000);
    const secs = (performance.now() - t0) / 1000;
    const bg = threadCpuMs(s.pid, tid) - bg0;
    const all = cpuMs(s.pid) - all0;
    const errors = got.ok === 0 ? 1 : Object.entries(got.statuses).reduce((a, [st, n]) => a + (Number(st) >= 200 && Number(st) < 300 ? 0 : n), 0);
    // Per second too: the thread's work at the same offer on both stores.
    return {
      ...got,
      errors,
      server_cpu_ms_per_ok: got.ok ? all / got.ok : NaN,
      background_thread_cpu_ms_per_ok: got.ok ? bg / got.ok : NaN,
      background_thread_cpu_ms_per_s: bg / secs,
    };
  };
  const empty = [];
  const big = [];
  let built = false;
  for (let round = 0; round < GROWTH_ROUNDS; round += 1) {
    log(`  round ${round + 1}: empty store...`);
    const s = await startServeThreads([]);
    try {
      const c = await setupClient(s, 50);
      empty.push(await one(s, c.key, c.lines));
    } finally {
      await s.stop();
    }
    log(`  round ${round + 1}: 1M-message store...`);
    const { store, dir } = await bigStoreCopy(DIRECTO_LINES);
    built ||= store.built;
    const b = await startServeThreads([], dir);
    try {
      await waitActive(b, store.meta.bench.key, DIRECTO_LINES);
      big.push(await one(b, store.meta.bench.key, store.meta.bench.lines));
    } finally {
      await b.stop();
    }
  }
  const mean = (rs, k) => rs.reduce((a, r) => a + r[k], 0) / rs.length;
  const bgE = mean(empty, 'background_thread_cpu_ms_per_ok');
  const bgB = mean(big, 'background_thread_cpu_ms_per_ok');
  const r = ratio(bgB, bgE);
  const each = (rs) =>
    rs.map((x) => `${f0(x.accepted_per_s)}/s ${f2(x.background_thread_cpu_ms_per_ok * 1000)} us, ${f0(x.background_thread_cpu_ms_per_s)} ms/s`).join('; ');
  results.push({
    figure: name,
    measured: `1M store: background ${cpuPer(bgB)} (${each(big)}; offered ${GROWTH_RATE}/s)${built ? '; store BUILT this run' : ''}`,
    baseline: `empty store: background ${cpuPer(bgE)} (${each(empty)})`,
    ratioText: `${f2(r)}x`,
    ratio: r,
    target: '<= 1.2x',
    met: r <= 1.2 && [...empty, ...big].every((x) => x.errors === 0),
    cpu: `${cpuPer(mean(big, 'server_cpu_ms_per_ok'))} vs ${cpuPer(mean(empty, 'server_cpu_ms_per_ok'))}`,
    detail: {
      lines: 50,
      connections: CONNECTIONS,
      offered_per_s: GROWTH_RATE,
      warmup_ms: WARMUP_MS,
      duration_ms: DURATION_MS,
      rounds: GROWTH_ROUNDS,
      empty,
      big,
    },
  });
}

// ---------- 3. directo, empty store and 1M store ----------

const DIRECTO_LINES = 100;

/**
 * 3a: directo sends on an empty store against the bare route. 3b: the same load on a copy of the
 * 1M-message store, its server and the empty store's both up, their windows alternated
 * (GROWTH_ROUNDS each, 3a's window the first of the empty ones): the ratio of the mean rates, so a
 * load that drifts over the run (this machine is shared) weighs on both sides alike.
 */
export async function figureDirecto(baseline) {
  const nameA = '3a. directo (sim), sent/s';
  const nameB = '3b. directo on a 1M-message store';
  // 100 lines: at 1000/min each (the highest cap) the caps never bind within a run.
  const s = await startServe([]);
  try {
    const c = await setupClient(s, DIRECTO_LINES);
    const run = (target, key, lines, from = 0) =>
      load({
        origin: target.url,
        pid: target.pid,
        key,
        path: '/api/mensaje_enviar_texto.php',
        makeBody: (w, n) => textBody(lines, w, from + n, true),
      });
    log('  baseline (bare Fastify)...');
    const base = await run(baseline, c.key, c.lines);
    log('  pasarela, empty store...');
    const empty = [await run(s, c.key, c.lines)];
    const first = empty[0];
    const r = ratio(first.per_s, base.per_s);
    results.push({
      figure: nameA,
      measured: `${f0(first.per_s)}/s (${lat(first)}, ${first.errors} errors; request thread ${cpuPer(first.request_thread_cpu_ms_per_ok)})`,
      baseline: `${f0(base.per_s)}/s bare route (${lat(base)}, ${cpuPer(base.server_cpu_ms_per_ok, 'req')})`,
      ratio: r,
      target: '>= 0.30',
      met: r >= 0.3 && first.errors === 0,
      cpu: cpuPer(first.server_cpu_ms_per_ok),
      detail: { lines: DIRECTO_LINES, connections: CONNECTIONS, pasarela: first, baseline: base },
    });
    if (!want(3) && !want('3b')) return;
    log(`\n[${nameB}]`);
    await directoBig(nameB, empty, (round) => run(s, c.key, c.lines, 100_000 * round), run);
  } finally {
    await s.stop();
  }
}

async function directoBig(name, empty, runEmpty, run) {
  try {
    const { store, dir, copyMs } = await bigStoreCopy(DIRECTO_LINES);
    const t0 = performance.now();
    const b = await startServe([], dir);
    const startMs = performance.now() - t0;
    const big = [];
    try {
      await waitActive(b, store.meta.bench.key, DIRECTO_LINES);
      for (let round = 0; round < GROWTH_ROUNDS; round += 1) {
        log(`  round ${round + 1}: 1M-message store...`);
        big.push(await run(b, store.meta.bench.key, store.meta.bench.lines, 700_000 + 100_000 * round));
        if (round + 1 < GROWTH_ROUNDS) {
          log(`  round ${round + 2}: empty store...`);
          empty.push(await runEmpty(round + 1));
        }
      }
    } finally {
      await b.stop();
    }
    const mean = (rs, k) => rs.reduce((a, x) => a + x[k], 0) / rs.length;
    const r = ratio(mean(big, 'per_s'), mean(empty, 'per_s'));
    const each = (rs) => rs.map((x) => `${f0(x.per_s)}/s ${cpuPer(x.server_cpu_ms_per_ok)}`).join('; ');
    const errors = [...big, ...empty].reduce((a, x) => a + x.errors, 0);
    results.push({
      figure: name,
      measured: `${each(big)} (${errors} errors; ${store.built ? `store BUILT this run in ${(store.meta.build_ms / 1000).toFixed(0)} s` : 'cached store'})`,
      baseline: `empty store, alternated: ${each(empty)}`,
      ratio: r,
      target: '>= 0.90',
      met: r >= 0.9 && errors === 0,
      cpu: cpuPer(mean(big, 'server_cpu_ms_per_ok')),
      detail: {
        rows: store.meta.rows,
        built_this_run: store.built,
        store: { ...store.meta, bench: { clienteId: store.meta.bench.clienteId, lines: store.meta.bench.lines.length } },
        cache_dir: store.dir,
        copy_ms: Math.round(copyMs),
        serve_start_ms: Math.round(startMs),
        rounds: GROWTH_ROUNDS,
        cpu_per_msg_ratio_vs_empty: ratio(mean(big, 'server_cpu_ms_per_ok'), mean(empty, 'server_cpu_ms_per_ok')),
        big,
        empty,
      },
    });
  } catch (err) {
    log(`[${name}] ERROR: ${err.stack ?? err}`);
    results.push({
      figure: name,
      measured: `error: ${String(err.message ?? err).slice(0, 300)}`,
      baseline: '-',
      ratio: NaN,
      target: '>= 0.90',
      met: false,
      cpu: '-',
    });
  }
}

// ---------- 5. queue drain ----------

export async function figureDrain() {
  const name = '5. queue drain, 200 lines';
  needFlags('--queue-gap-ms');
  const LINES = 200;
  const EACH = 20;
  const allowed = (LINES * 1000) / 60;
  log(`  queuing ${LINES} x ${EACH} messages (a one-minute gap holds each line after its first send)...`);
  let s = await startServe(['--queue-gap-ms', '60000-60000']);
  const dataDir = s.dataDir;
  let c;
  try {
    c = await setupClient(s, LINES);
    // EACH + 1 per line: the first is sent at once, EACH wait for the drain.
    let n = 1_000_000;
    const jobs = [];
    for (let i = 0; i <= EACH; i += 1) {
      for (const id of c.lines) {
        n += 1;
        const k = n;
        jobs.push(() => call(s.url, 'POST', '/api/mensaje_enviar_texto.php', c.key, { celular_id: id, destinatario: destinatario(k), mensaje: `cola ${k}` }));
      }
    }
    await inParallel(32, jobs);
  } finally {
    await s.stop();
  }
  log('  restarting with --queue-gap-ms 0-0 and timing the drain...');
  const restartAt = Date.now();
  s = await startServe(['--queue-gap-ms', '0-0'], dataDir);
  const cpu0 = cpuMs(s.pid);
  let cpu;
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      const h = await call(s.url, 'GET', '/api/historial_listar.php?estado=pendiente&por_pagina=1', c.key);
      if (h.total === 0) break;
      if (Date.now() > deadline) throw new Error(`drain not finished in 60 s (${h.total} pending)`);
      await sleep(100);
    }
    cpu = cpuMs(s.pid) - cpu0;
  } finally {
    await s.stop();
  }
  const db = new Database(join(dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
  const r = db
    .prepare("SELECT COUNT(*) AS n, MIN(enviado_at) AS first, MAX(enviado_at) AS last, SUM(estado = 'error') AS errors FROM mensajes WHERE enviado_at >= ?")
    .get(restartAt);
  db.close();
  // n sends span (last - first); the first send of the drain opens the window.
  const perS = ((r.n - 1) * 1000) / Math.max(1, r.last - r.first);
  const share = perS / allowed;
  results.push({
    figure: name,
    measured: `${f0(perS)} sent/s (${r.n} in ${((r.last - r.first) / 1000).toFixed(2)} s)`,
    baseline: `${f0(allowed)}/s allowed by caps (${LINES} lines x 1000/min)`,
    ratio: share,
    target: '>= 0.95',
    met: share >= 0.95,
    // Includes the receipts of the drained sends that arrived before the drain was seen done (upper bound).
    cpu: `<= ${cpuPer(cpu / Math.max(1, r.n))}`,
    detail: {
      lines: LINES,
      queued_per_line: EACH,
      drained: r.n,
      window_ms: r.last - r.first,
      first_send_after_restart_ms: r.first - restartAt,
      server_cpu_ms: cpu,
    },
  });
}
