// Figure 9: 1, 2 and 3 nodes on one PostgreSQL and one Redis under the same
// paced load; the CPU per message of the nodes and of their backends.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { countsAt, countsDelta, describeTrips, monoUs, perMessage } from '../pg-statements.mjs';
import { HERE, NODES_CPU_PROF, NODES_IDLE_MS, NODES_MESSAGES, NODES_PROFILE, NODES_RATE, NODES_ROUNDS } from '../lib/options.mjs';
import { cpuMs, ctxOf, log, needFlags, sleep, startServe, stopQuietly, tempDir } from '../lib/proc.mjs';
import { call, destinatario, needPaths, setupClient, waitActive, waitReceiver } from '../lib/http.mjs';
import { pushPaced } from '../lib/load.mjs';
import { cpuPer, f0, f2, ratio, results } from '../lib/results.mjs';
import { benchRedis, dropRedisPrefix, pgNodeFlags, pgWatcher, postgresCpuMs, postgresSchema } from '../lib/postgres.mjs';

/** GET /health of every node until each counts `k` live nodes (or 15 s). */
async function waitNodes(nodes, k) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const seen = await Promise.all(nodes.map(async (s) => (await call(s.url, 'GET', '/health')).nodos_vivos));
    if (seen.every((v) => v === k) || Date.now() > deadline) return seen;
    await sleep(200);
  }
}

/**
 * One run of figure 9 with `k` nodes: a fresh schema, the same Redis under a
 * prefix of its own, one operator token in every node's environment, a data
 * directory each. The client and its 50 lines are set up through the first
 * node; NODES_WARMUP messages per node go through the pipeline unmeasured (so
 * no node is timed while its code is still being compiled); then
 * NODES_IDLE_MS of nothing (each node's polling alone), then
 * NODES_MESSAGES queued texts at NODES_RATE/s, request i to node i % k, each
 * line's messages spread over all the nodes; the window ends when the
 * receiver has all four message.status events of every message.
 */
const NODES_WARMUP = 60;
async function nodesRun(receiver, k, redisUrl, tag) {
  const pg = await postgresSchema();
  const app = `bench9_${tag}_${k}n_`;
  const token = randomBytes(24).toString('hex');
  // Every node counts its statements (bench/pg-count.cjs), kept under --nodes-profile DIR, else in a temporary directory.
  const profDir = NODES_PROFILE ? join(NODES_PROFILE, `${tag}-${k}n`) : tempDir('pasarela-bench-pgcount-');
  mkdirSync(profDir, { recursive: true });
  const env = { PASARELA_ADMIN_TOKEN: token, PASARELA_BENCH_PGCOUNT_DIR: profDir };
  const nodeArgs = [...(NODES_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), '--require', join(HERE, 'pg-count.cjs')];
  // Each node appends its statement counts to <profDir>/<pid>.jsonl (idle start and end, measured start and end).
  const markCounts = () => nodes.forEach((x) => process.kill(x.pid, 'SIGUSR2'));
  const prefix = `pasarela-bench9:${tag}:${k}:`;
  const flags = (i) => pgNodeFlags(pg.store, `${app}${i + 1}`, ['--counters', redisUrl, '--counters-prefix', prefix]);
  const nodes = [];
  let watch;
  let out;
  let tables0;
  try {
    // The first alone (it runs the migrations and records the shared settings), then the others together.
    nodes.push(await startServe(flags(0), undefined, env, nodeArgs));
    nodes.push(...(await Promise.all(Array.from({ length: k - 1 }, (_, i) => startServe(flags(i + 1), undefined, env, nodeArgs)))));
    const s = nodes[0];
    await needPaths(s, '/api/webhook.php');
    const vivos = await waitNodes(nodes, k);
    if (!vivos.every((v) => v === k)) throw new Error(`/health nodos_vivos ${vivos.join('/')} with ${k} nodes running`);
    const c = await setupClient(s, 50);
    // Lines linked through the first node are linked for all: the sim's sessions live in the store.
    for (const other of nodes.slice(1)) await waitActive(other, c.key, 50);
    await call(receiver.url, 'POST', '/_reset');
    await call(s.url, 'POST', '/api/webhook.php', c.key, { url: `${receiver.url}/hooks`, secret: 'bench-secret-0123456789abcdef', eventos: 'message.status' });
    // Line (i + i/50) % 50: with any node count every line gets requests through every node.
    const body = (i) => ({
      celular_id: c.lines[(i + Math.floor(i / 50)) % 50],
      destinatario: destinatario(i),
      mensaje: `Hola, su pedido ${i} está en camino. Gracias por su compra.`,
    });
    const origins = nodes.map((x) => x.url);
    // Warm-up, not measured: NODES_WARMUP messages through each node, so every node's code is compiled before the window.
    const warm = await pushPaced({
      origins,
      key: c.key,
      path: '/api/mensaje_enviar_texto.php',
      n: NODES_WARMUP * k,
      perS: NODES_RATE,
      makeBody: (i) => body(300_000 + i),
    });
    const w = await waitReceiver(receiver, { alive: () => nodes.every((x) => x.alive()) }, (x) => x.messages_done >= warm.ok);
    if (w.stalled) throw new Error(`warm-up stalled: ${w.st.messages_done} of ${warm.ok} done`);
    await call(receiver.url, 'POST', '/_reset');
    watch = await pgWatcher(
      pg.store,
      app,
      nodes.map((x) => x.pid),
    );
    await sleep(1000);
    // Idle: what the nodes (and their backends) cost with nothing to do.
    const idle0 = { nodes: nodes.map((x) => cpuMs(x.pid)), pg: await watch.snapshot(), mono: monoUs(), at: performance.now() };
    markCounts();
    await sleep(NODES_IDLE_MS);
    const idle1 = { nodes: nodes.map((x) => cpuMs(x.pid)), pg: await watch.snapshot(), mono: monoUs(), at: performance.now() };
    markCounts();
    const idleS = (idle1.at - idle0.at) / 1000;
    const idle = {
      seconds: idleS,
      serve_ms_per_s: idle1.nodes.reduce((a, v, i) => a + v - idle0.nodes[i], 0) / idleS,
      per_node_ms_per_s: idle1.nodes.map((v, i) => (v - idle0.nodes[i]) / idleS),
      postgres_ms_per_s: watch.delta(idle0.pg, idle1.pg).total / idleS,
    };
    log(`  ${k} node${k > 1 ? 's' : ''}: ${NODES_MESSAGES} messages at ${NODES_RATE}/s, round-robin, then waiting for all their events...`);
    watch.resetHolds();
    const all0 = postgresCpuMs();
    tables0 = await watch.tables();
    const m0 = { nodes: nodes.map((x) => cpuMs(x.pid)), ctx: nodes.map((x) => ctxOf(x.pid)), pg: await watch.snapshot(), mono: monoUs() };
    markCounts();
    const push = await pushPaced({
      origins,
      key: c.key,
      path: '/api/mensaje_enviar_texto.php',
      n: NODES_MESSAGES,
      perS: NODES_RATE,
      makeBody: (i) => body(600_000 + i),
    });
    const { st, stalled } = await waitReceiver(receiver, { alive: () => nodes.every((x) => x.alive()) }, (x) => x.messages_done >= push.ok);
    const m1 = { nodes: nodes.map((x) => cpuMs(x.pid)), ctx: nodes.map((x) => ctxOf(x.pid)), pg: await watch.snapshot(), mono: monoUs() };
    markCounts();
    const allPg = postgresCpuMs() - all0;
    const holds = watch.holds();
    const vivosAfter = await waitNodes(nodes, k);
    const perNode = m1.nodes.map((v, i) => v - m0.nodes[i]);
    const serve = perNode.reduce((a, b) => a + b, 0);
    const pgd = watch.delta(m0.pg, m1.pg);
    const done = Math.max(1, st.messages_done);
    const spanMs = (st.done_last_at ?? Date.now()) - push.started_at;
    // The snapshots of the measured window's edges, by time.
    const snaps = await Promise.all(nodes.map((x) => countsAt(profDir, x.pid, [m0.mono, m1.mono])));
    const statements = perMessage(countsDelta(snaps), st.messages_done);
    out = {
      nodes: k,
      messages: NODES_MESSAGES,
      done: st.messages_done,
      stalled,
      warmup_messages: warm.ok,
      accept: push,
      span_ms: spanMs,
      serve_cpu_ms: serve,
      serve_cpu_ms_per_node: perNode,
      serve_ms_per_msg: serve / done,
      postgres_cpu_ms: pgd.total,
      postgres_cpu_ms_per_node: nodes.map((_, i) => pgd.byApp[`${app}${i + 1}`] ?? 0),
      postgres_backends: pgd.backends,
      postgres_ms_per_msg: pgd.total / done,
      total_ms_per_msg: (serve + pgd.total) / done,
      statements_per_msg: statements,
      postgres_all_processes_cpu_ms: allPg,
      // Per message: how often the nodes and their backends went to sleep waiting (voluntary) or were preempted.
      context_switches_per_msg: {
        serve: {
          voluntary: m1.ctx.reduce((a, x, i) => a + x.vol - m0.ctx[i].vol, 0) / done,
          involuntary: m1.ctx.reduce((a, x, i) => a + x.invol - m0.ctx[i].invol, 0) / done,
        },
        postgres: { voluntary: pgd.ctx.vol / done, involuntary: pgd.ctx.invol / done },
      },
      idle,
      lease_holds: holds,
      nodos_vivos: { before: vivos, after: vivosAfter },
      receiver: st,
      ...(NODES_PROFILE
        ? { profile: { dir: profDir, pids: nodes.map((x) => x.pid), idle_us: [idle0.mono, idle1.mono], measured_us: [m0.mono, m1.mono] } }
        : {}),
    };
  } finally {
    const errs = (await Promise.all(nodes.map(stopQuietly))).filter(Boolean);
    if (errs.length > 0) log(`  stopping nodes: ${errs.join('; ')}`);
    if (out && tables0) {
      // Read once the nodes have stopped (their backends have reported); so it also holds the few seconds after the window.
      const t1 = await watch.tables().catch(() => null);
      if (t1) out.table_stats_per_msg = tableDelta(tables0, t1, Math.max(1, out.done));
    }
    await watch?.close().catch(() => {});
    await pg.drop();
    await dropRedisPrefix(redisUrl, prefix).catch((err) => log(`  could not remove the Redis keys ${prefix}*: ${err.message}`));
  }
  return out;
}

/** Per table, what the window added to each counter, per message (zeros left out). */
function tableDelta(a, b, n) {
  const out = {};
  for (const [rel, r] of b) {
    const d = {};
    for (const k of ['seq_scan', 'idx_scan', 'n_tup_ins', 'n_tup_upd', 'n_tup_hot_upd', 'n_tup_del']) {
      const v = (Number(r[k] ?? 0) - Number(a.get(rel)?.[k] ?? 0)) / n;
      if (v) d[k] = Number(v.toFixed(3));
    }
    if (Object.keys(d).length > 0) out[rel] = d;
  }
  return out;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * 1, 2 and 3 nodes on one PostgreSQL (a fresh schema each) and one Redis, the
 * same fixed offered load; CPU per message of all the nodes together, and of
 * their PostgreSQL backends; efficiency = CPU/msg with one node / with k.
 */
export async function figureNodes(receiver) {
  needFlags('--store', '--counters', '--counters-prefix', '--queue-gap-ms', '--sim-delivery-ms', '--sim-read-ms', '--allow-private-urls');
  const redisUrl = await benchRedis();
  // n/a without a PostgreSQL; the schema is dropped at once (each run makes its own).
  await (await postgresSchema()).drop();
  const tag = Date.now().toString(36);
  const runs = { 1: [], 2: [], 3: [] };
  for (let round = 0; round < NODES_ROUNDS; round += 1) {
    for (const k of [1, 2, 3]) {
      const r = await nodesRun(receiver, k, redisUrl, `${tag}r${round}`);
      log(
        `    ${k}: serve ${r.serve_ms_per_msg.toFixed(2)} ms/msg (${r.serve_cpu_ms_per_node.map(f0).join('/')} ms), PostgreSQL ${r.postgres_ms_per_msg.toFixed(2)} ms/msg; ${describeTrips(r.statements_per_msg)}; ` +
          `${r.done} of ${r.messages} done in ${(r.span_ms / 1000).toFixed(1)} s; idle ${r.idle.serve_ms_per_s.toFixed(1)} + ${r.idle.postgres_ms_per_s.toFixed(1)} ms/s; lease holds ${r.lease_holds.per_node.join('/')}; ` +
          `context switches/msg ${r.context_switches_per_msg.serve.voluntary.toFixed(0)}+${r.context_switches_per_msg.serve.involuntary.toFixed(0)} (PostgreSQL ${r.context_switches_per_msg.postgres.voluntary.toFixed(0)}+${r.context_switches_per_msg.postgres.involuntary.toFixed(0)}); load ${loadavg()[0].toFixed(1)}`,
      );
      runs[k].push(r);
    }
  }
  const pick = (k, f) => median(runs[k].map(f));
  const serve = (k) => pick(k, (r) => r.serve_ms_per_msg);
  const pgm = (k) => pick(k, (r) => r.postgres_ms_per_msg);
  const tot = (k) => pick(k, (r) => r.total_ms_per_msg);
  const trips = (k) => pick(k, (r) => r.statements_per_msg.product.round_trips);
  const allDone = (k) => runs[k].every((r) => r.done === r.messages && !r.stalled);
  const rounds = NODES_ROUNDS > 1 ? `, median of ${NODES_ROUNDS} rounds` : '';
  const describe = (k) => {
    const r = runs[k][runs[k].length - 1];
    return (
      `${cpuPer(serve(k))} over ${k} node${k > 1 ? 's' : ''} + PostgreSQL ${pgm(k).toFixed(2)} ms/msg (total ${tot(k).toFixed(2)})${rounds}; ` +
      `${trips(k).toFixed(1)} round trips/msg, ${pick(k, (x) => x.statements_per_msg.transactions).toFixed(2)} transactions (the simulator's own ${pick(k, (x) => x.statements_per_msg.sim.statements).toFixed(1)} more); ` +
      `${runs[k].map((x) => x.done).join('+')} of ${runs[k].length * r.messages} done${runs[k].some((x) => x.stalled) ? ' STALLED' : ''} at ${NODES_RATE}/s offered (accepted ${f0(r.accept.accepted_per_s)}/s, last done ${(r.span_ms / 1000).toFixed(1)} s); ` +
      `${NODES_ROUNDS > 1 ? 'last round: ' : ''}idle ${r.idle.serve_ms_per_s.toFixed(1)} + ${r.idle.postgres_ms_per_s.toFixed(1)} ms/s` +
      (k > 1
        ? `; per node CPU ${r.serve_cpu_ms_per_node.map(f0).join('/')} ms (their PostgreSQL backends ${r.postgres_cpu_ms_per_node.map(f0).join('/')}), accepts ${r.accept.per_node.join('/')}, line leases seen held ${r.lease_holds.per_node.join('/')}, nodos_vivos ${r.nodos_vivos.before.join('/')}`
        : '')
    );
  };
  const detail = (k) => ({
    serve_ms_per_msg: serve(k),
    postgres_ms_per_msg: pgm(k),
    total_ms_per_msg: tot(k),
    round_trips_per_msg: trips(k),
    messages: NODES_MESSAGES,
    rate_per_s: NODES_RATE,
    runs: runs[k].map((r) => ({ ...r, receiver: { ...r.receiver, by_evento: undefined } })),
  });
  results.push({
    figure: '9a. one node on PostgreSQL + Redis, fixed load',
    measured: describe(1),
    baseline: '- (the baseline of 9b and 9c)',
    ratio: NaN,
    target: 'reported',
    met: null,
    cpu: cpuPer(serve(1)),
    detail: detail(1),
  });
  for (const k of [2, 3]) {
    const eff = ratio(serve(1), serve(k));
    const effAll = ratio(tot(1), tot(k));
    results.push({
      figure: `9${k === 2 ? 'b' : 'c'}. ${k} nodes, same load, efficiency`,
      measured: describe(k),
      baseline: `1 node: ${cpuPer(serve(1))} + PostgreSQL ${pgm(1).toFixed(2)} ms/msg (total ${tot(1).toFixed(2)})`,
      ratio: eff,
      ratioText: `${f2(eff)} (with PostgreSQL ${f2(effAll)})`,
      target: k === 3 ? '>= 0.85' : 'reported',
      met: k === 3 ? eff >= 0.85 && allDone(1) && allDone(3) : null,
      cpu: cpuPer(serve(k)),
      detail: { ...detail(k), efficiency: eff, efficiency_with_postgres: effAll },
    });
  }
}
