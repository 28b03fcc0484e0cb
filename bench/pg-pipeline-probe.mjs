#!/usr/bin/env node
// Figure 8b's PostgreSQL pipeline alone (figure 2's flags, a fresh schema), watched from outside: every
// 20 ms what the database's client backends are doing (idle, or the statement and what it waits on), and
// every 0.5 s the messages by estado and the deliveries by entrega, so a stage that lags (the outbox
// behind the messages, say) shows as its backlog growing. Extra arguments go to serve.
//
//   npm run build && node bench/pg-pipeline-probe.mjs [-- serve flags]
import { join } from 'node:path';
import pg from 'pg';
import { HERE } from './lib/options.mjs';
import { startChild, stopQuietly } from './lib/proc.mjs';
import { postgresSchema } from './lib/postgres.mjs';
import { measurePipeline } from './figures/pipeline.mjs';

const extra = process.argv.includes('--') ? process.argv.slice(process.argv.indexOf('--') + 1) : [];
const receiver = await startChild(join(HERE, 'receiver.mjs'), []);
const schema = await postgresSchema();
const c = new pg.Client({ connectionString: schema.url });
await c.connect();
const ACTIVITY = `SELECT state, wait_event_type, wait_event, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS q FROM pg_stat_activity
  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()`;
const BACKLOG = `SELECT (SELECT json_object_agg(estado, n) FROM (SELECT estado, count(*) n FROM ${schema.schema}.mensajes GROUP BY 1) a) AS mensajes,
  (SELECT json_object_agg(entrega, n) FROM (SELECT coalesce(entrega, '-') AS entrega, count(*) n FROM ${schema.schema}.eventos GROUP BY 1) b) AS entregas`;
const states = new Map();
let samples = 0;
let stop = false;
const sampler = (async () => {
  const t0 = performance.now();
  while (!stop) {
    const r = await c.query(ACTIVITY);
    samples++;
    for (const x of r.rows) {
      const k = `${x.state} ${x.wait_event_type ?? '-'}:${x.wait_event ?? '-'} ${x.state === 'active' ? x.q : ''}`;
      states.set(k, (states.get(k) ?? 0) + 1);
    }
    // The tables exist once serve has migrated the schema.
    if (samples % 25 === 0) {
      const b = await c.query(BACKLOG).catch(() => null);
      if (b) console.log(`${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s ${JSON.stringify(b.rows[0])}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
})();
try {
  const r = await measurePipeline(receiver, ['--store', schema.store, ...extra], null, true);
  const n = r.st.messages_done;
  console.log(
    `${r.perS.toFixed(0)} msgs/s to leido with webhooks (${n} done); node ${(r.cpu / n).toFixed(3)} ms/msg, PostgreSQL ${(r.pgCpu / n).toFixed(3)} ms/msg, ${r.counts.round_trips} round trips/msg`,
  );
} finally {
  stop = true;
  await sampler;
  console.log(`client backends, mean count per sample (${samples} samples):`);
  for (const [k, n] of [...states].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${(n / samples).toFixed(2).padStart(6)} ${k}`);
  await c.end();
  await schema.drop();
  await stopQuietly(receiver);
}
