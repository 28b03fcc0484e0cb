import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Watchdog } from '../core/engine/engine-keeper.js';

/**
 * The engine's watchdog (D-136): a small child process that ends this one
 * with SIGKILL if it is still alive past the instant it was last given,
 * which the engine's keeper moves forward at each good beat while it holds
 * sockets. A process frozen (SIGSTOP, a stalled VM) cannot close its own
 * sockets before another node takes its lines; its death closes them (the
 * kernel does), so two sockets of one line never overlap. Patroni's leader
 * does the same with the Linux watchdog device. The child reads the
 * machine's monotonic clock, as the keeper does, and exits when this
 * process's pipe closes.
 */
const CHILD = String.raw`
const parent = Number(process.argv[1]);
let deadline = null;
const now = () => Number(process.hrtime.bigint() / 1000000n);
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const v = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    deadline = v === '-' ? null : Number(v);
  }
});
process.stdin.on('end', () => process.exit(0));
setInterval(() => {
  if (deadline === null || now() < deadline) return;
  process.stderr.write('pasarela: the engine watchdog ends node pid ' + parent + ': it held engine sessions and could not tell the store it was alive in time, so its sockets must close before another node takes its lines (docs/decisions.md D-136)\n');
  try { process.kill(parent, 'SIGKILL'); } catch {}
  process.exit(0);
}, 100);
`;

export class EngineWatchdog implements Watchdog {
  private child: ChildProcess | null = null;
  private last: number | null = null;
  private closing = false;

  /** `onExit`: the child ended by itself (it is started again at once, with the last instant). */
  constructor(private readonly onExit: (code: number | null) => void) {
    this.spawn();
  }

  private spawn(): void {
    const child = spawn(process.execPath, ['-e', CHILD, String(process.pid)], { stdio: ['pipe', 'ignore', 'inherit'] });
    this.child = child;
    child.on('error', () => undefined);
    child.stdin?.on('error', () => undefined);
    child.on('exit', (code) => {
      if (this.child === child) this.child = null;
      // Its end at a stop is the stop's own doing, not news.
      if (this.closing) return;
      this.onExit(code);
      const last = this.last;
      this.last = null;
      this.spawn();
      this.arm(last);
    });
    child.unref();
    (child.stdin as Socket | null)?.unref();
  }

  /** The instant (monotonic ms) past which this process must be gone; null: nothing to guard. */
  arm(deadlineMonoMs: number | null): void {
    const v = deadlineMonoMs === null ? null : Math.floor(deadlineMonoMs);
    if (v === this.last || !this.child?.stdin) return;
    this.last = v;
    this.child.stdin.write(v === null ? '-\n' : `${v}\n`);
  }

  close(): void {
    this.closing = true;
    this.arm(null);
    this.child?.stdin?.end();
    this.child?.kill();
    this.child = null;
  }
}
