#!/usr/bin/env node
// Figure 2's pipeline on two builds, one after the other in alternating order,
// for an A/B of the server's CPU per message on a shared machine (the pipeline
// saturates both cores, so the two are not served at once as pair-accept does).
//
//   node bench/pair-pipeline.mjs OTHER_ROOT [ROUNDS] [--messages 2000] [--prof DIR]
//
// OTHER_ROOT is another built checkout (a `git worktree add --detach` of main,
// `npm run build` in it). Per run: a fresh `serve` of that build (its own
// bin/pasarela and data directory, figure 2's flags, 50 lines, one webhook on
// message.status to bench/receiver.mjs), 200 messages of warm-up, then
// --messages queued texts until the receiver has all four events of each.
// Prints per run the process's CPU per message split into the request thread,
// the background thread and the rest (V8/libuv helpers, checkpointer), and the
// medians per build at the end. With --prof, each server runs with --cpu-prof
// into DIR/<build>-<round>/ (profiled CPU is inflated: compare profiles with
// profiles only).
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, ROOT } from './lib/options.mjs';
import { cpuMs, startChild, tempDir, threadCpuMs } from './lib/proc.mjs';
import { call, setupClient, textBody, waitReceiver } from './lib/http.mjs';
import { pushN } from './lib/load.mjs';

const argv = process.argv.slice(2);
const flag = (name, def) => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : def);
const positional = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
const [otherRoot, roundsArg] = positional;
if (!otherRoot) {
  console.error('usage: node bench/pair-pipeline.mjs OTHER_ROOT [ROUNDS] [--messages 2000] [--prof DIR]');
  process.exit(2);
}
const ROUNDS = Number(roundsArg ?? 3);
const MESSAGES = Number(flag('messages', 2000));
const WARMUP = Number(flag('warmup', 200));
const PROF = flag('prof', null);
// Node flags for this build's server only (e.g. a V8 heap flag to try).
const THIS_NODE_ARGS = flag('this-node-args', null);
const builds = { other: otherRoot, this: ROOT };

const receiver = await startChild(join(HERE, 'receiver.mjs'), []);
const receiverCpu = () => cpuMs(receiver.pid);

async function runOnce(which, round) {
  const root = builds[which];
  const dataDir = tempDir('pasarela-pair-pipeline-');
  const tids = join(tempDir('pasarela-pair-tids-'), 'tids');
  const nodeArgs = ['--require', join(HERE, 'lib', 'tid.cjs'), ...(which === 'this' && THIS_NODE_ARGS ? THIS_NODE_ARGS.split(' ') : [])];
  if (PROF) {
    const dir = join(PROF, `${which}-${round}`);
    mkdirSync(dir, { recursive: true });
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  const flags = ['--queue-gap-ms', '0-0', '--sim-delivery-ms', '1', '--sim-read-ms', '1', '--allow-private-urls'];
  const child = await startChild(
    join(root, 'bin', 'pasarela'),
    ['serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', ...flags],
    { PASARELA_BENCH_TIDS: tids },
    nodeArgs,
  );
  const s = { ...child, admin: readFileSync(join(dataDir, 'admin-token'), 'utf8').trim() };
  try {
    const c = await setupClient(s, 50);
    await call(receiver.url, 'POST', '/_reset');
    await call(s.url, 'POST', '/api/webhook.php', c.key, { url: `${receiver.url}/hooks`, secret: 'bench-secret-0123456789abcdef', eventos: 'message.status' });
    const push = (n, base) =>
      pushN({ origin: s.url, key: c.key, path: '/api/mensaje_enviar_texto.php', n, makeBody: (i) => textBody(c.lines, i, base + i, false) });
    const warm = await push(WARMUP, round * 10_000_000 + 400_000);
    const w = await waitReceiver(receiver, s, (x) => x.messages_done >= warm.ok);
    if (w.stalled) throw new Error('warm-up stalled');
    await call(receiver.url, 'POST', '/_reset');
    const bg = readFileSync(tids, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('background '))
      .at(-1)
      ?.split(' ')[1];
    // --perf FILE: `perf record` of this build's server during the measured window (true CPU samples, every thread).
    const perfFile = flag('perf', null);
    const perf =
      perfFile && which === 'this'
        ? spawn('perf', ['record', '-F', '997', '-g', '-p', String(s.pid), '-o', `${perfFile}.${round}`], { stdio: 'ignore' })
        : null;
    const t0s = tasks(s.pid);
    const p0 = cpuMs(s.pid);
    const m0 = threadCpuMs(s.pid, s.pid);
    const b0 = threadCpuMs(s.pid, bg);
    const r0 = receiverCpu();
    const t0 = Date.now();
    const p = await push(MESSAGES, round * 10_000_000 + 500_000);
    const { st, stalled } = await waitReceiver(receiver, s, (x) => x.messages_done >= p.ok);
    if (perf) {
      perf.kill('SIGINT');
      await new Promise((r) => perf.once('exit', r));
    }
    const done = Math.max(1, st.messages_done);
    const per = (v) => v / done;
    const out = {
      which,
      done: st.messages_done,
      stalled,
      perS: (st.messages_done * 1000) / ((st.done_last_at ?? Date.now()) - t0),
      process: per(cpuMs(s.pid) - p0),
      request: per(threadCpuMs(s.pid, s.pid) - m0),
      background: per(threadCpuMs(s.pid, bg) - b0),
      receiver: per(receiverCpu() - r0),
    };
    out.rest = out.process - out.request - out.background;
    if (argv.includes('--tasks')) {
      const t1s = tasks(s.pid);
      const by = new Map();
      const roles = new Map(
        readFileSync(tids, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ').reverse()),
      );
      for (const [tid, { ms }] of t1s) {
        const role = roles.get(tid) ?? `h${tid}`;
        by.set(role, (by.get(role) ?? 0) + ms - (t0s.get(tid)?.ms ?? 0));
      }
      out.tasks = [...by].map(([k, v]) => `${k} ${(v / done).toFixed(3)}`).join(', ');
    }
    return out;
  } finally {
    await s.stop();
  }
}

/** Each thread's name and CPU so far (ms), by thread id. */
function tasks(pid) {
  const m = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      m.set(tid, { comm: tid === String(pid) ? 'request' : comm, ms: threadCpuMs(pid, tid) });
    } catch {
      // a thread that ended meanwhile
    }
  }
  return m;
}

const f3 = (v) => v.toFixed(3);
const show = (r) =>
  `${r.which.padEnd(5)} ${r.done} done${r.stalled ? ' STALLED' : ''}, ${r.perS.toFixed(0)} msgs/s: process ${f3(r.process)} ms/msg ` +
  `(request ${f3(r.request)}, background ${f3(r.background)}, rest ${f3(r.rest)}); receiver ${f3(r.receiver)}${r.tasks ? `\n    threads: ${r.tasks}` : ''}`;
const all = { other: [], this: [] };
try {
  for (let round = 1; round <= ROUNDS; round += 1) {
    const order = round % 2 === 1 ? ['other', 'this'] : ['this', 'other'];
    for (const which of order) {
      const r = await runOnce(which, round);
      all[which].push(r);
      console.log(`round ${round}: ${show(r)}`);
    }
  }
} finally {
  await receiver.stop();
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const which of ['other', 'this']) {
  const rs = all[which];
  const m = (k) => f3(median(rs.map((r) => r[k])));
  console.log(
    `median ${which.padEnd(5)} (${builds[which]}): process ${m('process')} ms/msg (request ${m('request')}, background ${m('background')}, rest ${m('rest')}); receiver ${m('receiver')}`,
  );
}
const ratio = median(all.this.map((r) => r.process)) / median(all.other.map((r) => r.process));
console.log(`this/other process CPU by medians: ${ratio.toFixed(2)}`);
