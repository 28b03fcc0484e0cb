#!/usr/bin/env node
// Where figure 9's CPU goes per message with 1, 2 and 3 nodes: reads the runs
// of a `node bench/run.mjs --only 9 --nodes-profile DIR [--nodes-cpu-prof]`
// (their details in the results file name each node's statement counts and
// --cpu-prof profile, and the measured window on the profiles' clock) and
// prints, per node count and summed over the nodes, per message:
//   - with --nodes-cpu-prof, the profiled JS time by function (self), and by pasarela function (inclusive),
//   - the statements sent to PostgreSQL, by text (bench/pg-count.cjs), with the time they waited,
//   - the table counters of the run's schema (pg_stat_user_tables), and the context switches,
// then the rows that grow most from 1 node to the most nodes.
//
//   node bench/nodes-profile.mjs [results.json] [--top 25]
import { countSnapshots } from './pg-statements.mjs';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const TOP = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 25;
const file = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--top') ?? join(HERE, 'results', 'latest.json');
const results = JSON.parse(readFileSync(file, 'utf8')).results;
const runs = results.filter((r) => r.figure.startsWith('9')).flatMap((r) => r.detail?.runs ?? []);
const profiled = runs.filter((r) => r.profile);
if (profiled.length === 0) {
  console.error(`${file}: no figure-9 run made with --nodes-profile`);
  process.exit(2);
}

const label = (x) => {
  const u = x.callFrame.url;
  const where = u.includes('/dist/') && !u.includes('node_modules') ? u.slice(u.lastIndexOf('/dist/') + 1) : u.split('/').slice(-2).join('/');
  return `${x.callFrame.functionName || '(anonymous)'} ${where}:${x.callFrame.lineNumber + 1}`;
};

/** Self and inclusive ms of one profile's samples inside [from, to] (microseconds on the profile's clock). */
function profileWindow(path, from, to) {
  const p = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const parent = new Map();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const names = new Map();
  const stackOf = (id) => {
    let s = names.get(id);
    if (!s) {
      s = [];
      for (let cur = id; cur !== undefined; cur = parent.get(cur)) s.push(label(byId.get(cur)));
      names.set(id, s);
    }
    return s;
  };
  const self = new Map();
  const incl = new Map();
  let total = 0;
  let idle = 0;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i += 1) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (t < from || t > to) continue;
    const stack = stackOf(p.samples[i]);
    const ms = (p.timeDeltas[i + 1] ?? dt) / 1000;
    if (stack[0].startsWith('(idle)')) {
      idle += ms;
      continue;
    }
    total += ms;
    self.set(stack[0], (self.get(stack[0]) ?? 0) + ms);
    for (const s of new Set(stack)) incl.set(s, (incl.get(s) ?? 0) + ms);
  }
  return { self, incl, total, idle, covered: p.startTime <= from && p.endTime >= to };
}

/** The statement counts a node appended nearest after each end of the window [from, to] (same clock, microseconds). */
function countsWindow(dir, pid, [from, to]) {
  const f = join(dir, `${pid}.jsonl`);
  if (!existsSync(f)) return null;
  const snaps = countSnapshots(dir, pid);
  // The bench signals right after reading its clock: the snapshot is the first one taken at or after that.
  const at = (t) => snaps.find((x) => x.mono_us >= t && x.mono_us - t < 1_000_000);
  const a = at(from);
  const b = at(to);
  if (!a || !b || a === b) return null;
  const out = new Map();
  for (const [k, v] of Object.entries(b.counts)) {
    const n = v.n - (a.counts[k]?.n ?? 0);
    const ms = v.ms - (a.counts[k]?.ms ?? 0);
    if (n > 0) out.set(k, { n, ms });
  }
  return out;
}

const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
const byCount = new Map();
for (const r of profiled) {
  const agg = byCount.get(r.nodes) ?? {
    runs: 0,
    msgs: 0,
    idleS: 0,
    idleStmts: new Map(),
    perNode: new Map(),
    self: new Map(),
    incl: new Map(),
    total: 0,
    idle: 0,
    cpu: 0,
    pgCpu: 0,
    ctx: new Map(),
    stmts: new Map(),
    stmtMs: new Map(),
    tables: new Map(),
    notes: [],
  };
  byCount.set(r.nodes, agg);
  agg.runs += 1;
  agg.msgs += r.done;
  agg.cpu += r.serve_cpu_ms;
  agg.pgCpu += r.postgres_cpu_ms;
  for (const [who, c] of Object.entries(r.context_switches_per_msg ?? {})) for (const [k, v] of Object.entries(c)) add(agg.ctx, `${who} ${k}`, v * r.done);
  const [from, to] = r.profile.measured_us;
  const files = readdirSync(r.profile.dir);
  for (const [nodeIndex, pid] of r.profile.pids.entries()) {
    const prof = files.find((f) => f.endsWith('.cpuprofile') && f.includes(`.${pid}.`));
    // A run without --nodes-cpu-prof has the statement counts only.
    if (!prof) {
      if (files.some((f) => f.endsWith('.cpuprofile'))) agg.notes.push(`no profile of pid ${pid} in ${r.profile.dir}`);
    } else {
      agg.profiled = true;
      const w = profileWindow(join(r.profile.dir, prof), from, to);
      if (!w.covered) agg.notes.push(`profile of pid ${pid} does not cover the window`);
      agg.total += w.total;
      agg.idle += w.idle;
      for (const [k, v] of w.self) add(agg.self, k, v);
      for (const [k, v] of w.incl) add(agg.incl, k, v);
    }
    const ic = r.profile.idle_us ? countsWindow(r.profile.dir, pid, r.profile.idle_us) : null;
    if (ic) {
      agg.idleS += r.idle.seconds / r.profile.pids.length;
      for (const [k, v] of ic) add(agg.idleStmts, k, v.n);
    }
    const c = countsWindow(r.profile.dir, pid, r.profile.measured_us);
    if (!c) agg.notes.push(`no statement counts of pid ${pid}`);
    else
      for (const [k, v] of c) {
        add(agg.stmts, k, v.n);
        add(agg.stmtMs, k, v.ms);
        const row = agg.perNode.get(k) ?? agg.perNode.set(k, Array(r.nodes).fill(0)).get(k);
        row[nodeIndex] += v.n;
      }
  }
  for (const [rel, d] of Object.entries(r.table_stats_per_msg ?? {})) for (const [k, v] of Object.entries(d)) add(agg.tables, `${rel}.${k}`, v * r.done);
}

const counts = [...byCount.keys()].sort();
const per = (agg, v) => v / Math.max(1, agg.msgs);
const fmt = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const pad = (s, n) => String(s).padStart(n);

for (const k of counts) {
  const a = byCount.get(k);
  console.log(`\n=== ${k} node${k > 1 ? 's' : ''}: ${a.runs} run(s), ${a.msgs} messages ===`);
  console.log(
    `serve CPU ${fmt(per(a, a.cpu))} ms/msg (from /proc)${a.profiled ? `, profiled JS ${fmt(per(a, a.total))} ms/msg` : ''}, PostgreSQL backends ${fmt(per(a, a.pgCpu))} ms/msg`,
  );
  if (a.ctx.size > 0) console.log(`context switches per msg: ${[...a.ctx].map(([k, v]) => `${k} ${fmt(per(a, v), 1)}`).join(', ')}`);
  let n = 0;
  let ms = 0;
  for (const v of a.stmts.values()) n += v;
  for (const v of a.stmtMs.values()) ms += v;
  console.log(`statements ${fmt(per(a, n), 2)}/msg, waited ${fmt(per(a, ms), 2)} ms/msg in all`);
  if (a.idleS > 0) {
    // Per node and second with nothing to do: the polling loops and heartbeats.
    const perNodeS = (v) => v / a.idleS / k;
    let total = 0;
    for (const v of a.idleStmts.values()) total += v;
    console.log(
      `idle: ${fmt(perNodeS(total), 1)} statements per node per second (${fmt(a.idleS, 1)} s), most: ${[...a.idleStmts]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 8)
        .map(([q, v]) => `${fmt(perNodeS(v), 2)} ${q.slice(0, 70)}`)
        .join(' | ')}`,
    );
  }
  for (const note of a.notes) console.log(`  note: ${note}`);
  // Who does what: a line's lease is given back after every attempt, so [cola] gives are the sends of each node.
  const WHO = [
    ['sends (line lease given back)', /^\[cola\] UPDATE leases/],
    ['line lease takes (taken or not)', /^\[cola\] WITH n AS/],
    ['queue looks (queueHeads)', /^WITH RECURSIVE lineas/],
    ['journal moves (transactions)', /^SELECT pg_advisory_xact_lock\(\$1, 0\)/],
    ['webhook lease takes', /^\[webhooks\] WITH n AS/],
    ['webhook lease gives', /^\[webhooks\] UPDATE leases/],
    ['webhook attempts recorded', /^INSERT INTO webhook_intentos/],
    ['accepts (INSERT INTO mensajes)', /^INSERT INTO mensajes/],
  ];
  if (k > 1)
    for (const [what, re] of WHO) {
      const row = Array(k).fill(0);
      for (const [key, v] of a.perNode) if (re.test(key)) v.forEach((x, i) => (row[i] += x));
      console.log(`  per node, ${what}: ${row.map((x) => fmt(per(a, x), 2)).join(' / ')} per msg`);
    }
  if (!a.profiled) continue;
  console.log('self time, ms/msg:');
  for (const [f, v] of [...a.self].sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`  ${fmt(per(a, v))}  ${f}`);
}

/** Rows of every node count side by side, the ones growing most from the fewest to the most nodes first. */
function compare(title, pick, unit, filter = () => true, d = 3) {
  const lo = byCount.get(counts[0]);
  const hi = byCount.get(counts[counts.length - 1]);
  const keys = new Set();
  for (const k of counts) for (const key of pick(byCount.get(k)).keys()) if (filter(key)) keys.add(key);
  const rows = [...keys].map((key) => ({ key, v: counts.map((k) => per(byCount.get(k), pick(byCount.get(k)).get(key) ?? 0)) }));
  const grow = (r) => r.v[r.v.length - 1] - r.v[0];
  console.log(`\n${title} (${unit}; ${counts.map((k) => `${k}n`).join(' / ')}; sorted by growth ${counts[0]}n -> ${counts[counts.length - 1]}n)`);
  for (const r of rows.sort((x, y) => grow(y) - grow(x)).slice(0, TOP))
    console.log(`  ${r.v.map((x) => pad(fmt(x, d), 8)).join(' ')}  ${pad(fmt(grow(r), d), 8)}  ${r.key}`);
  void lo;
  void hi;
}
if ([...byCount.values()].some((a) => a.profiled)) {
  compare(
    'inclusive JS time by pasarela function',
    (a) => a.incl,
    'ms/msg',
    (k) => / dist\//.test(k),
  );
  compare('self JS time', (a) => a.self, 'ms/msg');
}
compare(
  'statements to PostgreSQL',
  (a) => a.stmts,
  'per msg',
  () => true,
  2,
);
compare(
  'time statements waited for their answer',
  (a) => a.stmtMs,
  'ms/msg',
  () => true,
  2,
);
compare(
  "table counters of the run's schema",
  (a) => a.tables,
  'per msg',
  () => true,
  2,
);
