#!/usr/bin/env node
// pasarela benchmarks: each figure beside a baseline measured in the same run.
//
//   npm run bench            (= npm run build && node bench/run.mjs)
//   node bench/run.mjs [--duration-ms 5000] [--warmup-ms 1000] [--connections 50] [--skip-historial] [--only 1,2,3,4,5]
//
// The server under test is the real binary (`node bin/pasarela serve`) in a
// child process with its own data directory; the baseline is
// bench/baseline-server.mjs, a bare Fastify app, also a child process; the
// load generator (undici, N workers each looping requests) runs here. So on
// a 2-core machine the load generator and the server each have a core.
//
// Figures and targets:
//  1. queue-mode text sends accepted per second, 50 connections, vs the bare
//     Fastify route on the same bodies: >= 50% of the baseline.
//  2. the same with directo=1 on the simulator: >= 50% of the baseline.
//  3. one 50 MB base64 document, directo=1: time (beside the same body posted
//     to the baseline) and the server's peak RSS growth (VmHWM after minus
//     VmRSS before, from /proc/PID/status): <= 3x the file size.
//  4. queue drain: 200 lines, caps 1000/min, zero gaps, 20 queued messages
//     each: sends per second as a share of what the caps allow (3333/s): >= 95%.
//  5. history: bench/historial.mjs (if present), worst p95 of a page with its
//     total, beside the page alone: <= 50 ms.
// Prints a table; writes bench/results/latest.json.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Pool, request } from 'undici';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const BIN = join(ROOT, 'bin', 'pasarela');
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const DURATION_MS = opt('duration-ms', 5000);
const WARMUP_MS = opt('warmup-ms', 1000);
const CONNECTIONS = opt('connections', 50);
const SKIP_HISTORIAL = args.includes('--skip-historial');
/** --only 1,3: run just those figures (for a quick look; the README numbers come from a full run). */
const ONLY = args.includes('--only') ? new Set(String(args[args.indexOf('--only') + 1]).split(',').map(Number)) : null;
const want = (n) => !ONLY || ONLY.has(n);
const MB = 1024 * 1024;

if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  console.error('dist/ is missing: run `npm run bench` (it builds first)');
  process.exit(2);
}

const log = (m) => process.stderr.write(`${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const temps = [];
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

// ---------- child processes ----------

/** Starts a node script; resolves when its stderr names the URL it listens on. */
function startChild(script, argv) {
  const child = spawn(process.execPath, [script, ...argv], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), LANG: 'C.UTF-8' },
  });
  children.add(child);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => { children.delete(child); resolve({ code, signal }); }));
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk) => {
      seen += String(chunk);
      const m = /listening on (http:\/\/\S+)/.exec(seen);
      if (m) {
        // Keep draining stderr so the child never blocks on a full pipe.
        child.stderr.off('data', onData);
        child.stderr.resume();
        resolve({
          url: m[1],
          pid: child.pid,
          async stop() {
            child.kill('SIGTERM');
            const r = await exited;
            if (r.code !== 0) throw new Error(`${script} stopped with ${r.code ?? r.signal}`);
          },
        });
      }
    };
    child.stderr.on('data', onData);
    void exited.then((r) => reject(new Error(`${script} ended before listening (${r.code ?? r.signal}): ${seen}`)));
  });
}

async function startServe(extra, dataDir) {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'pasarela-bench-'));
  if (!dataDir) temps.push(dir);
  const s = await startChild(BIN, ['serve', '--port', '0', '--data-dir', dir, '--log-level', 'warn', ...extra]);
  return { ...s, dataDir: dir, admin: readFileSync(join(dir, 'admin-token'), 'utf8').trim() };
}

/** { rss, hwm } in bytes, from /proc/PID/status. */
function memOf(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** CPU time (user + system) the process has used so far, in ms. */
function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}
const CLK_TCK = 100;

/** Resets VmHWM to the current RSS (Linux: write 5 to clear_refs); false when not allowed. */
function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

// ---------- HTTP ----------

async function call(base, method, path, key, json) {
  const res = await request(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.body.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return body;
}

/** Runs `jobs` with at most `n` at once. */
async function inParallel(n, jobs) {
  let next = 0;
  const out = new Array(jobs.length);
  await Promise.all(
    Array.from({ length: Math.min(n, jobs.length) }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]();
      }
    }),
  );
  return out;
}

let numeroSeq = 0;
/** A client with a large balance and `lines` linked celulares with the highest caps. */
async function setupClient(s, lines) {
  const cli = await call(s.url, 'POST', '/admin/clientes', s.admin, { nombre: 'Bench', email: 'bench@example.com', saldo: 1_000_000_000 });
  const key = cli.api_key;
  const ids = await inParallel(
    8,
    Array.from({ length: lines }, () => async () => {
      numeroSeq += 1;
      const numero = `52155${String(10_000_000 + numeroSeq * 7 + Math.floor(Math.random() * 7))}`;
      const c = await call(s.url, 'POST', '/api/celular_crear.php', key, { numero });
      const id = c.celular_id;
      await call(s.url, 'POST', `/api/celular_qr.php?id=${id}`, key);
      await call(s.url, 'POST', '/admin/sim/scan', s.admin, { celular_id: id });
      await call(s.url, 'POST', `/api/celular_editar.php?id=${id}`, key, {
        max_envios_por_minuto: 1000,
        max_envios_por_hora: 50_000,
        max_envios_por_dia: null,
      });
      return id;
    }),
  );
  const deadline = Date.now() + 10_000;
  for (;;) {
    const list = await call(s.url, 'GET', '/api/celulares.php', key);
    if (list.celulares.filter((c) => c.estado === 'activo').length === lines) break;
    if (Date.now() > deadline) throw new Error('the lines did not become activo');
    await sleep(50);
  }
  return { key, clienteId: cli.cliente.id, lines: ids };
}

function percentiles(samples) {
  const s = Float64Array.from(samples).sort();
  const q = (p) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]);
  return { p50: q(0.5), p95: q(0.95), p99: q(0.99), max: s[s.length - 1] ?? NaN };
}

/**
 * `connections` workers, each looping POSTs for warm-up + duration over one
 * pool of keep-alive connections. Counts 2xx and errors in the measured part.
 */
async function load({ origin, pid, path, key, makeBody, connections = CONNECTIONS, warmupMs = WARMUP_MS, durationMs = DURATION_MS }) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
  const t0 = performance.now();
  const measureFrom = t0 + warmupMs;
  const end = measureFrom + durationMs;
  let ok = 0;
  let errors = 0;
  const statuses = {};
  const samples = [];
  let firstError;
  let seq = 0;
  let cpuStart;
  const cpuTimer = setTimeout(() => (cpuStart = pid ? cpuMs(pid) : undefined), Math.max(0, measureFrom - performance.now()));
  let cpuEnd;
  const cpuEndTimer = setTimeout(() => (cpuEnd = pid ? cpuMs(pid) : undefined), Math.max(0, end - performance.now()));
  await Promise.all(
    Array.from({ length: connections }, async (_, w) => {
      while (performance.now() < end) {
        const body = JSON.stringify(makeBody(w, seq++));
        const start = performance.now();
        let status = 0;
        let text;
        try {
          const res = await pool.request({ path, method: 'POST', headers, body });
          status = res.statusCode;
          if (status >= 200 && status < 300) await res.body.dump();
          else text = await res.body.text();
        } catch (err) {
          text = String(err);
        }
        const done = performance.now();
        if (start < measureFrom || done > end) continue;
        samples.push(done - start);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status >= 200 && status < 300) ok += 1;
        else {
          errors += 1;
          firstError ??= `${status} ${String(text).slice(0, 200)}`;
        }
      }
    }),
  );
  await pool.close();
  clearTimeout(cpuTimer);
  clearTimeout(cpuEndTimer);
  const serverCpu = cpuStart !== undefined && cpuEnd !== undefined ? cpuEnd - cpuStart : undefined;
  return {
    per_s: ok / (durationMs / 1000),
    ok,
    errors,
    statuses,
    latency_ms: percentiles(samples),
    ...(serverCpu !== undefined ? { server_cpu_ms: serverCpu, server_cpu_ms_per_ok: ok ? serverCpu / ok : NaN } : {}),
    ...(firstError ? { first_error: firstError } : {}),
  };
}

/** A valid Mexico City number, different for every `n` (duplicate protection is per recipient and content). */
const destinatario = (n) => `5255${String(10_000_000 + (n % 89_999_999))}`;

// ---------- figures ----------

const results = [];
const cpuNote = (r) => (r.server_cpu_ms_per_ok === undefined ? 'cpu ?' : `${r.server_cpu_ms_per_ok.toFixed(2)} ms cpu/req`);
const ratio = (a, b) => (b > 0 ? a / b : NaN);

async function figureSends(baseline, { name, directo }) {
  log(`\n[${name}] starting the server and ${CONNECTIONS} lines...`);
  const s = await startServe(['--queue-gap-ms', '0-0', '--queue-max-pending', '10000000']);
  let base;
  let got;
  let window;
  try {
    const c = await setupClient(s, CONNECTIONS);
    const run = (target) =>
      load({
        origin: target.url,
        pid: target.pid,
        key: c.key,
        path: '/api/mensaje_enviar_texto.php',
        makeBody: (w, n) => ({
          celular_id: c.lines[w % c.lines.length],
          destinatario: destinatario(n),
          mensaje: `Hola, su pedido ${n} está en camino. Gracias por su compra.`,
          ...(directo ? { directo: 1 } : {}),
        }),
      });
    log(`[${name}] baseline (bare Fastify)...`);
    base = await run(baseline);
    log(`[${name}] pasarela...`);
    const from = Date.now() + WARMUP_MS;
    got = await run(s);
    window = { from, to: Date.now() };
  } finally {
    await s.stop();
  }
  // What the queue worker sent meanwhile, in the same process (queue mode only).
  const db = new Database(join(s.dataDir, 'pasarela.db'), { readonly: true, fileMustExist: true });
  const w = db
    .prepare("SELECT COUNT(*) AS sent, SUM(modo = 'cola') AS cola FROM mensajes WHERE enviado_at >= ? AND enviado_at < ?")
    .get(window.from, window.to);
  const left = db.prepare("SELECT COUNT(*) AS n FROM mensajes WHERE estado = 'pendiente'").get().n;
  db.close();
  const workerPerS = ((w.cola ?? 0) * 1000) / (window.to - window.from);
  const share = ratio(got.per_s, base.per_s);
  results.push({
    figure: name,
    measured:
      `${got.per_s.toFixed(0)}/s (p50 ${got.latency_ms.p50.toFixed(1)} ms, p95 ${got.latency_ms.p95.toFixed(1)} ms, ${got.errors} errors, ${cpuNote(got)}` +
      `${directo ? '' : `; worker sent ${workerPerS.toFixed(0)}/s meanwhile`})`,
    baseline: `${base.per_s.toFixed(0)}/s (p50 ${base.latency_ms.p50.toFixed(1)} ms, p95 ${base.latency_ms.p95.toFixed(1)} ms, ${cpuNote(base)})`,
    ratio: share,
    target: '>= 0.50',
    met: share >= 0.5 && got.errors === 0,
    detail: {
      connections: CONNECTIONS,
      lines: CONNECTIONS,
      warmup_ms: WARMUP_MS,
      duration_ms: DURATION_MS,
      pasarela: got,
      baseline: base,
      ...(directo ? {} : { worker_sent_per_s: workerPerS, pending_at_stop: left }),
    },
  });
}

async function figureDocument(baseline) {
  const name = '3. 50 MB base64 document, directo';
  log(`\n[${name}] building the file...`);
  const size = 50 * MB;
  const file = randomBytes(size);
  file.write('%PDF-1.7\n%\u00e2\u00e3\u00cf\u00d3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n', 0, 'latin1');
  const b64 = file.toString('base64');
  const s = await startServe(['--queue-gap-ms', '0-0']);
  try {
    const c = await setupClient(s, 1);
    const payload = JSON.stringify({ celular_id: c.lines[0], destinatario: destinatario(1), directo: 1, filename: 'informe.pdf', documentBase64: b64 });
    const post = async (target) => {
      await sleep(300);
      const exact = resetPeak(target.pid);
      const before = memOf(target.pid);
      const t = performance.now();
      const res = await request(`${target.url}/api/mensaje_enviar_documento_base64.php`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${c.key}` },
        body: payload,
        bodyTimeout: 120_000,
        headersTimeout: 120_000,
      });
      const text = await res.body.text();
      const ms = performance.now() - t;
      const after = memOf(target.pid);
      return { status: res.statusCode, text, ms, before, after, growth: after.hwm - before.rss, peak_reset: exact };
    };
    log(`[${name}] baseline (bare Fastify)...`);
    const base = await post(baseline);
    log(`[${name}] pasarela...`);
    const got = await post(s);
    if (got.status !== 200) throw new Error(`document send: ${got.status} ${got.text.slice(0, 300)}`);
    const leftovers = readdirSync(join(s.dataDir, 'tmp'));
    const growthRatio = got.growth / size;
    results.push({
      figure: name,
      measured: `${(got.ms / 1000).toFixed(2)} s, peak RSS +${(got.growth / MB).toFixed(0)} MB (${growthRatio.toFixed(2)}x file)`,
      baseline: `${(base.ms / 1000).toFixed(2)} s, peak RSS +${(base.growth / MB).toFixed(0)} MB (bare Fastify, same body)`,
      ratio: growthRatio,
      target: 'RSS growth <= 3.00x file',
      met: growthRatio <= 3 && leftovers.length === 0,
      detail: {
        file_bytes: size,
        body_bytes: Buffer.byteLength(payload),
        time_ratio_vs_baseline: ratio(got.ms, base.ms),
        temp_files_left: leftovers.length,
        pasarela: { ...got, text: undefined },
        baseline: { ...base, text: undefined },
      },
    });
  } finally {
    await s.stop();
  }
}

async function figureDrain() {
  const name = '4. queue drain, 200 lines';
  const LINES = 200;
  const EACH = 20;
  const allowed = (LINES * 1000) / 60;
  log(`\n[${name}] queuing ${LINES} x ${EACH} messages (a one-minute gap holds each line after its first send)...`);
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
  log(`[${name}] restarting with --queue-gap-ms 0-0 and timing the drain...`);
  const restartAt = Date.now();
  s = await startServe(['--queue-gap-ms', '0-0'], dataDir);
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      const h = await call(s.url, 'GET', '/api/historial_listar.php?estado=pendiente&por_pagina=1', c.key);
      if (h.total === 0) break;
      if (Date.now() > deadline) throw new Error(`drain not finished in 60 s (${h.total} pending)`);
      await sleep(100);
    }
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
    measured: `${perS.toFixed(0)} sent/s (${r.n} in ${((r.last - r.first) / 1000).toFixed(2)} s)`,
    baseline: `${allowed.toFixed(0)}/s allowed by caps (${LINES} lines x 1000/min)`,
    ratio: share,
    target: '>= 0.95',
    met: share >= 0.95,
    detail: { lines: LINES, queued_per_line: EACH, drained: r.n, window_ms: r.last - r.first, first_send_after_restart_ms: r.first - restartAt },
  });
}

async function figureHistorial() {
  const name = '5. history page + total, p95';
  const script = join(HERE, 'historial.mjs');
  if (SKIP_HISTORIAL || !existsSync(script)) {
    results.push({ figure: name, measured: 'skipped', baseline: '-', ratio: NaN, target: '<= 50 ms', met: null, note: SKIP_HISTORIAL ? '--skip-historial' : 'bench/historial.mjs not found' });
    return;
  }
  log(`\n[${name}] node bench/historial.mjs (1M messages; about a minute)...`);
  const out = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.add(child);
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.once('exit', (code) => {
      children.delete(child);
      if (code === 0) resolve(text);
      else reject(new Error(`bench/historial.mjs exited ${code}:\n${text}`));
    });
  });
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
    measured: `${worst.toFixed(1)} ms worst p95${scenario ? ` (${scenario})` : ''}`,
    baseline: pageOnly === undefined ? '-' : `${pageOnly.toFixed(1)} ms (same page without its total)`,
    ratio: pageOnly === undefined ? NaN : ratio(worst, pageOnly),
    target: '<= 50 ms',
    met: worst <= 50,
    detail: { rows, worst_p95_ms: worst, page_only_p95_ms: pageOnly, scenario, results_file: 'bench/results/historial.json' },
  });
}

// ---------- main ----------

const started = Date.now();
log(`pasarela bench: ${cpus().length} cores, node ${process.version}, load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const baseline = await startChild(join(HERE, 'baseline-server.mjs'), []);
try {
  if (want(1)) await figureSends(baseline, { name: '1. queue send text, accepted/s', directo: false });
  if (want(2)) await figureSends(baseline, { name: '2. directo send text (sim), sent/s', directo: true });
  if (want(3)) await figureDocument(baseline);
} finally {
  await baseline.stop();
}
if (want(4)) await figureDrain();
if (want(5)) await figureHistorial();

const fmtRatio = (r) => (Number.isFinite(r) ? r.toFixed(2) : '-');
const cols = [
  ['figure', (r) => r.figure],
  ['measured', (r) => r.measured],
  ['baseline (same run)', (r) => r.baseline],
  ['ratio', (r) => fmtRatio(r.ratio)],
  ['target', (r) => r.target],
  ['met', (r) => (r.met === null ? 'skipped' : r.met ? 'yes' : 'NO')],
];
const widths = cols.map(([h, f]) => Math.max(h.length, ...results.map((r) => String(f(r)).length)));
const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
console.log('');
console.log(line(cols.map(([h]) => h)));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const r of results) console.log(line(cols.map(([, f]) => f(r))));
const met = results.filter((r) => r.met === true).length;
const judged = results.filter((r) => r.met !== null).length;
console.log(`\ntargets met: ${met} of ${judged}${results.some((r) => r.met === null) ? ' (some skipped)' : ''}; ${((Date.now() - started) / 1000).toFixed(0)} s`);
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
      duration_s: (Date.now() - started) / 1000,
      results,
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${outFile}`);
