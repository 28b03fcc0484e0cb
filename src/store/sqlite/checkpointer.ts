import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints on a thread of their own. SQLite's automatic checkpoint
 * runs inside whichever COMMIT crosses the threshold, on the request thread,
 * and syncs the database file there: about a tenth of the server's CPU under
 * a send load, in stalls of the event loop. Here a second connection copies
 * the WAL back every `intervalMs` with a PASSIVE checkpoint, which never
 * blocks the writer (and none while nothing was committed since the last
 * whole one: an idle store's thread only asks, less and less often); the writer's own automatic
 * checkpoint stays as a backstop at a much larger size in case this thread
 * falls behind or dies.
 */

/** The writer checkpoints by itself only past this many WAL pages (about 80 MB). */
export const BACKSTOP_PAGES = 20_000;

/** An idle store is looked at every interval times this at most (5 s by default). */
const IDLE_TIMES = 5;

// Plain CommonJS run by the worker (eval), so it works from sources and from dist alike.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');
// Statements prepared once: pragma() prepares one on every call, most of an idle second's cost here.
const version = db.prepare('PRAGMA data_version').pluck();
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let seen = null;
// Each look that finds nothing committed waits twice as long, up to IDLE_TIMES the interval: an idle node's
// thread wakes rarely (each wake-up costs far more than the look, D-188); the first commit after idle waits
// at most that long, its WAL bounded by the writer's backstop meanwhile.
let wait = workerData.intervalMs;
const run = (always) => {
  try {
    // data_version moves when another connection commits: an idle store's WAL has nothing new to copy back.
    const v = version.get();
    if (v === seen && !always) return false;
    // One a reader held back copied only part: tried again at the next tick, commits or not.
    const r = checkpoint.get();
    seen = r.checkpointed === r.log ? v : null;
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.message) || err) });
  }
  return true;
};
let timer;
const tick = () => {
  wait = run(false) ? workerData.intervalMs : Math.min(wait * 2, workerData.intervalMs * workerData.idleTimes);
  timer = setTimeout(tick, wait);
};
timer = setTimeout(tick, wait);
parentPort.on('message', () => {
  clearTimeout(timer);
  run(true);
  db.close();
  parentPort.close();
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<unknown>;

  constructor(file: string, intervalMs: number, onError: (message: string) => void) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER, { eval: true, workerData: { file, intervalMs, module, idleTimes: IDLE_TIMES } });
    this.worker.on('message', (m: { error?: string }) => {
      if (m.error) onError(m.error);
    });
    this.worker.on('error', (err) => onError(err.message));
    this.exited = once(this.worker, 'exit').catch(() => undefined);
    // Never keeps the process alive by itself.
    this.worker.unref();
  }

  /** A last checkpoint, then the thread ends. */
  async stop(): Promise<void> {
    // Waited for now: keep the process alive until the thread has ended.
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
