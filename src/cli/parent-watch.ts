/**
 * `serve` started by npm (`npm start`, `npx pasarela serve`) runs under a
 * shell npm spawned: npm passes a SIGTERM to that shell, which ends without
 * passing it on, so `kill <npm's pid>` left the server running, adopted by
 * init (D-109). Under npm, `serve` looks at its parent: once it is no longer
 * the process that started it, it stops as on SIGTERM. Only under npm: a
 * server started directly and left behind on purpose (`nohup`, `setsid`, a
 * shell that exits) keeps running.
 */

/** How often the parent is looked at (one cheap system call; the timer keeps nothing alive). */
export const PARENT_WATCH_MS = 1000;

/** True when npm (a script or npx) started this process: npm sets `npm_lifecycle_event` for what it runs. */
export const startedByNpm = (env: NodeJS.ProcessEnv): boolean => Boolean(env.npm_lifecycle_event);

/**
 * Calls `gone` once when this process's parent changes (the parent ended and
 * the process was adopted). Returns the stop of the watch.
 */
export function watchParent(gone: () => void, everyMs = PARENT_WATCH_MS, ppid: () => number = () => process.ppid): () => void {
  const first = ppid();
  const timer = setInterval(() => {
    if (ppid() === first) return;
    clearInterval(timer);
    gone();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
