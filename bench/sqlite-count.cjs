// Preloaded into a `serve` node on SQLite by bench/run.mjs (figure 8b): counts
// the statements the process runs through better-sqlite3, by their text, on
// every thread (node's --require runs in worker threads too, and serve's
// background thread is one). On SIGUSR2 the main thread appends a snapshot to
// <PASARELA_BENCH_PGCOUNT_DIR>/<pid>.jsonl and tells the other threads, which
// append theirs to <pid>.t<threadId>.jsonl (a signal reaches only the main
// thread). Keys as bench/pg-count.cjs's ([sim] for the simulator's kv rows),
// so bench/pg-statements.mjs reads both. Nothing of pasarela is changed: the
// prototype methods of better-sqlite3's statements are wrapped.
'use strict';
const { appendFileSync } = require('node:fs');
const { join } = require('node:path');
const { isMainThread, threadId } = require('node:worker_threads');
const Database = require('better-sqlite3');

const dir = process.env.PASARELA_BENCH_PGCOUNT_DIR;
const counts = new Map();
const keys = new Map();
const keyOf = (text, args) => {
  let key = keys.get(text);
  if (key === undefined) keys.set(text, (key = text.replace(/\s+/g, ' ').trim().slice(0, 160)));
  if (/\bkv\b/.test(text)) {
    const v0 = args[0];
    const ns = v0 && typeof v0 === 'object' ? (v0.ns ?? Object.values(v0)[0]) : v0;
    if (typeof ns === 'string' ? ns.startsWith('sim.') : /\bexpira_at\s*</.test(text)) return `[sim] ${key}`;
  }
  return key;
};
const count = (key) => {
  const c = counts.get(key) ?? counts.set(key, { n: 0, ms: 0 }).get(key);
  c.n += 1;
};

let patched = false;
/** The native Statement class is reached through the first statement prepared. */
function patchStatements(stmt) {
  if (patched) return;
  patched = true;
  const proto = Object.getPrototypeOf(stmt);
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const plain = proto[m];
    proto[m] = function counted(...args) {
      count(keyOf(this.source, args));
      return plain.apply(this, args);
    };
  }
}
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function prepareCounted(...a) {
  const stmt = prepare.apply(this, a);
  patchStatements(stmt);
  return stmt;
};
const exec = Database.prototype.exec;
Database.prototype.exec = function execCounted(sql) {
  count(keyOf(String(sql), []));
  return exec.call(this, sql);
};

const snapshot = () => ({ mono_us: Number(process.hrtime.bigint() / 1000n), counts: Object.fromEntries([...counts].map(([k, c]) => [k, { ...c }])) });
if (dir) {
  const file = join(dir, isMainThread ? `${process.pid}.jsonl` : `${process.pid}.t${threadId}.jsonl`);
  const write = () => appendFileSync(file, `${JSON.stringify(snapshot())}\n`);
  const channel = new BroadcastChannel('pasarela-bench-count');
  channel.unref();
  if (isMainThread) {
    process.on('SIGUSR2', () => {
      write();
      channel.postMessage('snapshot');
    });
  } else channel.onmessage = write;
  // Setting onmessage refs the channel again: it must not keep a thread from ending.
  channel.unref();
}
