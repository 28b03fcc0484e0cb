// Child processes of the bench (the server under test, the baseline, the
// receiver, the CLI) and what /proc says of them: CPU, memory, context
// switches. What is started or made temporary here is killed or removed when
// the bench exits.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, HERE } from './options.mjs';

export const log = (m) => process.stderr.write(`${m}\n`);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const temps = [];
export const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

/** A figure that cannot run on this server (a flag or endpoint it does not have). */
export class NotApplicable extends Error {}

/** Starts a node script; resolves when its stderr names the URL it listens on. */
export function startChild(script, argv, env = {}, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, script, ...argv], {
    stdio: ['ignore', process.env.BENCH_CHILD_LOG ? 'pipe' : 'ignore', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), LANG: 'C.UTF-8', ...env },
  });
  children.add(child);
  // BENCH_CHILD_LOG=FILE: every child's output also goes to FILE (to read what a server said during a figure).
  if (process.env.BENCH_CHILD_LOG) for (const out of [child.stdout, child.stderr]) out.on('data', (d) => appendFileSync(process.env.BENCH_CHILD_LOG, d));
  let tail = '';
  let exit;
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      exit = { code, signal };
      resolve(exit);
    }),
  );
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk) => {
      seen += String(chunk);
      const m = /listening on (http:\/\/\S+)/.exec(seen);
      if (m) {
        // Keep draining stderr (its tail is kept for the report) so the child never blocks on a full pipe.
        child.stderr.off('data', onData);
        child.stderr.on('data', (d) => (tail = (tail + String(d)).slice(-4000)));
        resolve({
          url: m[1],
          pid: child.pid,
          alive: () => exit === undefined,
          exit: () => exit,
          stderrTail: () => tail,
          async stop() {
            if (exit) throw new Error(`${script} had already ended (${exit.code ?? exit.signal}): ${tail.slice(-500)}`);
            child.kill('SIGTERM');
            const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
            const r = await exited;
            clearTimeout(t);
            // A helper killed by the signal itself (before its handler was installed) stopped fine too.
            if (r.code !== 0 && r.signal !== 'SIGTERM') throw new Error(`${script} stopped with ${r.code ?? r.signal}`);
          },
        });
      }
    };
    child.stderr.on('data', onData);
    void exited.then((r) => reject(new Error(`${script} ended before listening (${r.code ?? r.signal}): ${seen}`)));
  });
}

/** The flags `serve --help` lists: figures use only flags the server under test has. */
export const SERVE_FLAGS = new Set(
  (spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' }).stdout ?? '').match(/--[a-z][a-z0-9-]*/g) ?? [],
);
export function needFlags(...flags) {
  const missing = flags.filter((f) => !SERVE_FLAGS.has(f));
  if (missing.length > 0) throw new NotApplicable(`serve has no ${missing.join(', ')}`);
}

/**
 * `env` is added to the child's (small) environment; an operator token given there is the one used (no
 * admin-token file is written then). `nodeArgs` go to node itself, before the script (--cpu-prof).
 */
export async function startServe(extra, dataDir, env = {}, nodeArgs = []) {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'pasarela-bench-'));
  if (!dataDir) temps.push(dir);
  // PASARELA_BACKGROUND=inline in the bench's environment compares with the background on the request thread.
  const background = process.env.PASARELA_BACKGROUND ? { PASARELA_BACKGROUND: process.env.PASARELA_BACKGROUND } : {};
  const s = await startChild(BIN, ['serve', '--port', '0', '--data-dir', dir, '--log-level', 'warn', ...extra], { ...background, ...env }, nodeArgs);
  return { ...s, dataDir: dir, admin: env.PASARELA_ADMIN_TOKEN ?? readFileSync(join(dir, 'admin-token'), 'utf8').trim() };
}

/** Stops a server; a server that already died is reported, not thrown, when `quiet`. */
export async function stopQuietly(s) {
  try {
    await s.stop();
    return null;
  } catch (err) {
    return String(err.message ?? err);
  }
}

/** { rss, hwm } in bytes, from /proc/PID/status. */
export function memOf(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

export const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;
/** CPU time (user + system) the process has used so far, in ms (utime + stime of /proc/PID/stat). */
export function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

/** The same for one thread of the process (its kernel id; the main thread's is the pid). */
export function threadCpuMs(pid, tid) {
  const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

/**
 * Every thread of the process now: its kernel id, its name (`comm`: node's are `node` for the main thread, `V8Worker`
 * for the GC's platform threads, `libuv-worker`, and a worker thread's own name), CPU ms and context switches (each
 * a wake-up: voluntary ones are waits that ended, the others preemptions). A thread gone between reads is left out.
 */
export function threadTimes(pid) {
  const out = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const switches = [...status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
      out.push({ tid: Number(tid), name, ms: threadCpuMs(pid, tid), switches });
    } catch {
      // Ended meanwhile.
    }
  }
  return out;
}

/**
 * Each thread's ms/s and wake-ups/s between two threadTimes readings `secs` apart, busiest first (node names most of
 * its threads `node`: the main thread, the request thread of serve, is marked `main`).
 */
export function threadRates(pid, a, b, secs) {
  const before = new Map(a.map((t) => [t.tid, t]));
  return b
    .map((t) => {
      const o = before.get(t.tid) ?? { ms: 0, switches: 0 };
      const name = t.tid === pid ? 'main' : t.name;
      return { tid: t.tid, name, ms_per_s: (t.ms - o.ms) / secs, wakes_per_s: (t.switches - o.switches) / secs };
    })
    .sort((x, y) => y.ms_per_s - x.ms_per_s);
}

/** The process's main thread alone (the request thread of serve; its background thread is apart). */
export function requestThreadCpuMs(pid) {
  return threadCpuMs(pid, pid);
}

/**
 * startServe with each JS thread's kernel id recorded (bench/lib/tid.cjs): `backgroundTid()` is the
 * background thread's, the latest started (a thread that died is started again).
 */
export async function startServeThreads(extra, dataDir) {
  const file = join(tempDir('pasarela-bench-tids-'), 'tids');
  const s = await startServe(extra, dataDir, { PASARELA_BENCH_TIDS: file }, ['--require', join(HERE, 'lib', 'tid.cjs')]);
  const backgroundTid = () => {
    const tids = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('background '))
      .map((l) => l.split(' ')[1]);
    if (tids.length === 0) throw new Error('the background thread did not record its thread id');
    return tids[tids.length - 1];
  };
  return { ...s, backgroundTid };
}

/** Context switches so far: voluntary (the process waited, e.g. for a socket) and involuntary (preempted). */
export function ctxOf(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const n = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { vol: n('voluntary_ctxt_switches'), invol: n('nonvoluntary_ctxt_switches') };
}

/** Resets VmHWM to the current RSS (Linux: write 5 to clear_refs); false when not allowed. */
export function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A fresh temporary directory, removed when the bench ends. */
export function tempDir(prefix) {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}
