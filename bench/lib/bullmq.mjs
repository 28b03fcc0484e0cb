// BullMQ beside figures 1 and 2 (bench/bullmq-anchor.mjs): its accept (a
// Fastify route adding a job) under figure 1's load generator, and its
// lifecycle (add, a worker processes, complete) at figure 2's shape, each on
// a Redis of its own with AOF on (fsync every second, as pasarela's SQLite
// syncs only at checkpoints with WAL and synchronous=NORMAL), stopped after. CPU per job is every process
// involved: the API, the worker, that redis-server, from /proc.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { HERE, PIPELINE_MESSAGES, PIPELINE_WARMUP, ROOT } from './options.mjs';
import { children, cpuMs, log, sleep, startChild, tempDir } from './proc.mjs';
import { load, pushN } from './load.mjs';
import { call } from './http.mjs';

const ANCHOR = join(HERE, 'bullmq-anchor.mjs');
const WORKER_CONCURRENCY = 10;
/** The lifecycle's warm-up: at least the study's 1000 jobs, so a cold JIT is not charged to the anchor (figure 2 warms pasarela with 200). */
const LIFECYCLE_WARMUP = PIPELINE_WARMUP;

export const bullmqVersion = () => JSON.parse(readFileSync(join(ROOT, 'node_modules', 'bullmq', 'package.json'), 'utf8')).version;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** redis-server on a free port, AOF every second, in a temporary directory; resolves once it accepts connections. */
async function startRedis() {
  const port = await freePort();
  const dir = tempDir('pasarela-bench-bullmq-');
  const child = spawn('redis-server', ['--port', String(port), '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => (children.delete(child), resolve(code ?? signal))));
  await new Promise((resolve, reject) => {
    const onData = (d) => {
      out = (out + String(d)).slice(-4000);
      if (out.includes('Ready to accept connections')) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((r) => reject(new Error(`redis-server ended (${r}): ${out.slice(-500)}`)));
  });
  return {
    port,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Starts Redis and the anchor's processes (`modes`), runs `fn` with them, stops them all. */
async function withBullmq(modes, fn) {
  const redis = await startRedis();
  const procs = {};
  try {
    for (const m of modes) procs[m] = await startChild(ANCHOR, m === 'worker' ? [m, String(redis.port), String(WORKER_CONCURRENCY)] : [m, String(redis.port)]);
    return await fn({ redis, ...procs });
  } finally {
    for (const p of Object.values(procs)) await p.stop().catch(() => undefined);
    await redis.stop();
  }
}

/**
 * BullMQ's accept under figure 1's load generator (the same bodies, key
 * header, connections, warm-up and window): accepted/s and CPU per job of the
 * API process and its Redis.
 */
export function bullmqAccept({ path, key, makeBody }) {
  log('  BullMQ accept (Fastify route -> queue.add, Redis AOF everysec)...');
  return withBullmq(['api'], async ({ redis, api }) => {
    let r0;
    let r1;
    const got = await load({
      origin: api.url,
      pid: api.pid,
      key,
      path,
      makeBody,
      atStart: () => (r0 = cpuMs(redis.pid)),
      atEnd: () => (r1 = cpuMs(redis.pid)),
    });
    const redisPer = (r1 - r0) / Math.max(1, got.ok);
    return {
      version: bullmqVersion(),
      ...got,
      api_cpu_ms_per_job: got.server_cpu_ms_per_ok,
      redis_cpu_ms_per_job: redisPer,
      cpu_ms_per_job: got.server_cpu_ms_per_ok + redisPer,
    };
  });
}

/**
 * BullMQ's lifecycle at figure 2's shape: LIFECYCLE_WARMUP jobs added through
 * the route and completed by the worker, unmeasured; then PIPELINE_MESSAGES
 * pushed by 50 connections, timed from the first request to the worker's last
 * completion. CPU per job: API + worker + Redis.
 */
export function bullmqLifecycle({ path, key, makeBody }) {
  log(`  BullMQ lifecycle: ${LIFECYCLE_WARMUP} jobs of warm-up, then ${PIPELINE_MESSAGES} (add, worker x${WORKER_CONCURRENCY}, complete)...`);
  return withBullmq(['api', 'worker'], async ({ redis, api, worker }) => {
    const completed = async (n) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const c = await call(worker.url, 'GET', '/count');
        if (c.completed >= n) return c;
        if (Date.now() > deadline) throw new Error(`the BullMQ worker completed ${c.completed} of ${n} jobs in 60 s`);
        await sleep(20);
      }
    };
    const pids = [api.pid, worker.pid, redis.pid];
    await pushN({ origin: api.url, key, path, n: LIFECYCLE_WARMUP, makeBody: (i) => makeBody(300_000 + i) });
    await completed(LIFECYCLE_WARMUP);
    const cpu0 = pids.map(cpuMs);
    const push = await pushN({ origin: api.url, key, path, n: PIPELINE_MESSAGES, makeBody });
    const done = await completed(LIFECYCLE_WARMUP + push.ok);
    const [api1, worker1, redis1] = pids.map((p, i) => cpuMs(p) - cpu0[i]);
    const n = Math.max(1, push.ok);
    const spanMs = done.last_at - push.started_at;
    return {
      version: bullmqVersion(),
      jobs: push.ok,
      warmup_jobs: LIFECYCLE_WARMUP,
      worker_concurrency: WORKER_CONCURRENCY,
      jobs_per_s: (push.ok * 1000) / spanMs,
      span_ms: spanMs,
      accept: push,
      api_cpu_ms_per_job: api1 / n,
      worker_cpu_ms_per_job: worker1 / n,
      redis_cpu_ms_per_job: redis1 / n,
      cpu_ms_per_job: (api1 + worker1 + redis1) / n,
    };
  });
}

/** The anchor could not run (no redis-server, say): its figure keeps its own row, the anchor's says why. */
export function anchorFailed(err) {
  log(`  BullMQ anchor ERROR: ${err.stack ?? err}`);
  return { error: String(err.message ?? err).slice(0, 300), cpu_ms_per_job: NaN };
}

export const anchorRow = (figure, target, bull) => ({ figure, measured: `error: ${bull.error}`, baseline: '-', ratio: NaN, target, met: false, cpu: '-' });
