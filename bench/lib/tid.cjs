// Preload (`node --require bench/lib/tid.cjs`): each JS thread of the server
// writes its kernel thread id to $PASARELA_BENCH_TIDS as "role tid", so the
// bench reads one thread's CPU from /proc/PID/task/TID/stat. The background
// thread is told by its workerData (src/server/background/handle.ts passes
// `resume`); the checkpointer and any other worker are "other".
const { appendFileSync, readlinkSync } = require('node:fs');
const { isMainThread, workerData } = require('node:worker_threads');

const out = process.env.PASARELA_BENCH_TIDS;
if (out) {
  const tid = readlinkSync('/proc/thread-self').split('/').pop();
  const role = isMainThread ? 'request' : workerData && typeof workerData === 'object' && 'resume' in workerData ? 'background' : 'other';
  appendFileSync(out, `${role} ${tid}\n`);
}
