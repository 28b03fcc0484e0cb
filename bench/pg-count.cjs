// Preloaded into a `serve` node by bench/run.mjs (figure 9 with --nodes-profile):
// counts the statements the node sends to PostgreSQL, by their text, and the
// milliseconds each kind waited for its answer. On SIGUSR2 it appends a
// snapshot of the counts to <PASARELA_BENCH_PGCOUNT_DIR>/<pid>.jsonl, so the
// bench can take the difference over its measured window. Nothing of
// pasarela is changed: pg's Client.prototype.query is wrapped before the
// first connection is made.
'use strict';
const { appendFileSync } = require('node:fs');
const { join } = require('node:path');
const pg = require('pg');

const dir = process.env.PASARELA_BENCH_PGCOUNT_DIR;
const counts = new Map();
const keys = new Map();
/** The statement's text, whitespace folded; lease statements also name the kind of stream (cola, salud, webhooks). */
const keyOf = (config, values) => {
  const text = typeof config === 'string' ? config : config?.text;
  if (typeof text !== 'string') return '(other)';
  let key = keys.get(text);
  if (key === undefined) keys.set(text, (key = text.replace(/\s+/g, ' ').trim().slice(0, 160)));
  if (text.includes('leases')) {
    const v = [...(Array.isArray(values) ? values : Array.isArray(config?.values) ? config.values : [])].flat();
    const kind = v.map((x) => (typeof x === 'string' ? /^(cola|salud|webhooks):/.exec(x)?.[1] : undefined)).find(Boolean);
    if (kind) return `[${kind}] ${key}`;
  }
  return key;
};
const plain = pg.Client.prototype.query;
pg.Client.prototype.query = function query(config, values, callback) {
  const key = keyOf(config, values);
  const c = counts.get(key) ?? counts.set(key, { n: 0, ms: 0 }).get(key);
  c.n += 1;
  const t = performance.now();
  const done = () => (c.ms += performance.now() - t);
  const timed = (cb) =>
    function answered(...a) {
      done();
      return cb.apply(this, a);
    };
  // Callback style (pg-pool's query): the callback marks the answer.
  if (typeof values === 'function') return plain.call(this, config, timed(values));
  if (typeof callback === 'function') return plain.call(this, config, values, timed(callback));
  const r = plain.call(this, config, values, callback);
  if (r && typeof r.then === 'function') r.then(done, done);
  return r;
};
if (dir) {
  process.on('SIGUSR2', () => {
    const snapshot = { mono_us: Number(process.hrtime.bigint() / 1000n), counts: Object.fromEntries(counts) };
    appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify(snapshot)}\n`);
  });
}
