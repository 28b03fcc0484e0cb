// Preloaded into a `serve` node by bench/run.mjs (figures 8, 10 and 9 with
// --nodes-profile; and into the pg-boss anchor of figure 10): counts the
// calls the process makes to PostgreSQL, by their text, and the milliseconds
// each kind waited for its answer. One call of Client.query is one round trip
// (pg sends a statement's parse, bind and execute together and waits for the
// answer). On SIGUSR2 it appends a snapshot of the counts to
// <PASARELA_BENCH_PGCOUNT_DIR>/<pid>.jsonl, so the bench can take the
// difference over its measured window; a process that loads it with require()
// reads snapshot() directly. Nothing of pasarela is changed: pg's
// Client.prototype.query is wrapped before the first connection is made.
//
// Tags in front of a key: [cola|salud|webhooks] a lease statement's stream;
// [sim] the built-in simulator's own bookkeeping (its rows in kv, namespaces
// `sim.*` (the first of a many-form's namespaces), and the expiry of kv rows, which only the simulator asks for), so
// the bench reports it apart from the product's statements.
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
  const v0 = Array.isArray(values) ? values[0] : Array.isArray(config?.values) ? config.values[0] : undefined;
  // The many-forms (kvGetMany, kvSetMany, kvDeleteMany) give the namespaces as their first array.
  const ns = Array.isArray(v0) ? v0[0] : v0;
  if (/\bkv\b/.test(text) && (typeof ns === 'string' ? ns.startsWith('sim.') : /\bexpira_at < \$1/.test(text))) return `[sim] ${key}`;
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
/** The counts so far, copied (each { n, ms }), with the process clock. */
const snapshot = () => ({
  mono_us: Number(process.hrtime.bigint() / 1000n),
  counts: Object.fromEntries([...counts].map(([k, c]) => [k, { ...c }])),
});
if (dir) process.on('SIGUSR2', () => appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify(snapshot())}\n`));
module.exports = { snapshot };
