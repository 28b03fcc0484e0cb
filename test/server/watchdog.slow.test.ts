import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/poll.js';

/**
 * The engine's watchdog (server/watchdog.ts, D-136) in a real process: a
 * small node program that runs EngineWatchdog from dist/ and arms it 1 s
 * ahead, as the keeper does at each good beat. Each program prints its
 * steps on stdout; the test acts on them, never on elapsed time.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUILT = join(ROOT, 'dist', 'server', 'watchdog.js');
if (!existsSync(BUILT)) throw new Error('dist/ is missing: run `npm run build` before the slow tests (npm test does it)');

/**
 * `rearm`: arms 1 s ahead every 200 ms, and says so once it has lived 2 s
 * past its first deadline. `stop`: the same, for the test to freeze it.
 * `disarm`: arms 1 s ahead, disarms, and says so once 2 s past that deadline.
 */
const PROGRAM = (mode: 'rearm' | 'stop' | 'disarm') => `
import { EngineWatchdog } from ${JSON.stringify(pathToFileURL(BUILT).href)};
const mono = () => Number(process.hrtime.bigint() / 1000000n);
const w = new EngineWatchdog((code) => console.log('watchdog exited ' + code));
console.log('watchdog pid ' + w.child.pid);
const first = mono() + 1000;
w.arm(first);
console.log('armed');
if (${JSON.stringify(mode)} === 'disarm') {
  setTimeout(() => { w.arm(null); console.log('disarmed'); }, 200);
} else {
  setInterval(() => w.arm(mono() + 1000), 200);
}
const t = setInterval(() => {
  if (mono() > first + 2000) { console.log('alive past the deadline'); clearInterval(t); }
}, 50);
setInterval(() => {}, 1000);
`;

type Child = ResultPromise<{ reject: false; all: true }>;
const started: Child[] = [];

function run(mode: 'rearm' | 'stop' | 'disarm'): { child: Child; out: () => string; watchdogPid: () => Promise<number> } {
  const child = execa(process.execPath, ['--input-type=module', '-e', PROGRAM(mode)], { reject: false, all: true });
  started.push(child);
  let out = '';
  child.all.on('data', (d: Buffer) => (out += d.toString()));
  return {
    child,
    out: () => out,
    watchdogPid: async () => Number((await until(() => /watchdog pid (\d+)/.exec(out), { what: () => `the watchdog's pid in: ${out}` }))[1]),
  };
}

/** Gone: no such process, or a zombie nobody reaped yet (its code has stopped). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return true;
  }
}

afterEach(() => {
  for (const c of started.splice(0)) {
    if (c.pid !== undefined && !gone(c.pid)) {
      c.kill('SIGKILL');
    }
  }
});

describe('EngineWatchdog', () => {
  it('a process that keeps re-arming lives on past its first deadline', async () => {
    const p = run('rearm');
    await until(() => p.out().includes('alive past the deadline'), { what: () => `the program to outlive its first deadline: ${p.out()}` });
    expect(p.child.exitCode).toBeNull();
    expect(p.out()).not.toContain('watchdog ends node');
    p.child.kill('SIGTERM');
    expect((await p.child).signal).toBe('SIGTERM');
  });

  it('a frozen process (SIGSTOP) is ended with SIGKILL once its deadline passes, and the watchdog exits after it', async () => {
    const p = run('stop');
    const wpid = await p.watchdogPid();
    await until(() => p.out().includes('armed'), { what: () => `the program to arm: ${p.out()}` });
    process.kill(p.child.pid!, 'SIGSTOP');
    const r = await p.child;
    expect(r.signal).toBe('SIGKILL');
    expect(r.all).toContain(`the engine watchdog ends node pid ${p.child.pid}`);
    expect(r.all).not.toContain('alive past the deadline');
    await until(() => gone(wpid), { what: 'the watchdog to exit' });
  });

  it('disarmed (arm(null)), it leaves the process alone past the deadline', async () => {
    const p = run('disarm');
    await until(() => p.out().includes('alive past the deadline'), { what: () => `the program to outlive its deadline: ${p.out()}` });
    expect(p.out()).toContain('disarmed');
    expect(p.child.exitCode).toBeNull();
    p.child.kill('SIGTERM');
    expect((await p.child).signal).toBe('SIGTERM');
  });

  it('the watchdog exits when the process it guards dies', async () => {
    const p = run('disarm');
    const wpid = await p.watchdogPid();
    expect(gone(wpid)).toBe(false);
    p.child.kill('SIGKILL');
    expect((await p.child).signal).toBe('SIGKILL');
    await until(() => gone(wpid), { what: 'the orphaned watchdog to exit' });
  });
});
