// PostgreSQL and Redis for the figures that use them (8, 9, 10, 17): a fresh
// schema, the CPU of the database's backends, its WAL and table counters;
// the bench's Redis.
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { cpuMs, ctxOf, log, NotApplicable } from './proc.mjs';

/** CPU (ms) used so far by every PostgreSQL server process on this machine (its backends do the store's work). */
export function postgresCpuMs() {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuMs(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

/** A fresh schema of the bench's PostgreSQL (PASARELA_BENCH_POSTGRES_URL), and the store URL that uses it. */
export async function postgresSchema() {
  const url = process.env.PASARELA_BENCH_POSTGRES_URL || process.env.PASARELA_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';
  let pg;
  try {
    pg = (await import('pg')).default;
  } catch {
    throw new NotApplicable('the pg package is not installed');
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
  } catch (err) {
    throw new NotApplicable(`no PostgreSQL at ${url.replace(/\/\/[^@/]*@/, '//')}: ${err.message}`);
  }
  const schema = `bench_${Date.now().toString(36)}`;
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.end();
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  const drop = async () => {
    if (process.env.PASARELA_BENCH_KEEP_SCHEMA) return log(`  kept schema ${schema}`);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
  };
  return { store: u.toString(), url, schema, drop };
}

/**
 * The database's write-ahead log position (cluster-wide: another writer on the same server adds to a
 * difference), and the schema's tables' row counters (inserts, updates, HOT updates): read after the
 * nodes stopped, when their backends have reported.
 */
export async function pgWal(url) {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
  } finally {
    await c.end();
  }
}
export async function pgWalSince(url, lsn) {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) AS b', [lsn])).rows[0].b);
  } finally {
    await c.end();
  }
}
export async function pgTableWrites(url, schema) {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await c.query(
      `SELECT relname AS t, n_tup_ins::int AS ins, n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot, n_tup_del::int AS del
       FROM pg_stat_user_tables WHERE schemaname = $1 AND (n_tup_ins + n_tup_upd + n_tup_del) > 0 ORDER BY relname`,
      [schema],
    );
    return rows;
  } finally {
    await c.end();
  }
}

/** The bench's Redis (PASARELA_BENCH_REDIS_URL, default the local one), or n/a when it does not answer a PING. */
export async function benchRedis() {
  const url = process.env.PASARELA_BENCH_REDIS_URL || 'redis://127.0.0.1:6379';
  const u = new URL(url);
  const answer = await new Promise((resolve) => {
    const sock = net.connect(Number(u.port || 6379), u.hostname || '127.0.0.1');
    const t = setTimeout(() => {
      sock.destroy();
      resolve('no answer in 2 s');
    }, 2000);
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.once('data', (d) => {
      clearTimeout(t);
      sock.end();
      // -NOAUTH: a Redis that wants the password the URL carries.
      resolve(/^(\+PONG|-NOAUTH)/.test(String(d)) ? true : String(d).trim());
    });
    sock.once('error', (e) => {
      clearTimeout(t);
      resolve(e.message);
    });
  });
  if (answer !== true) throw new NotApplicable(`no Redis at ${url.replace(/\/\/[^@/]*@/, '//')}: ${answer}`);
  return url;
}

/** Removes the keys a run left under its prefix (duplicate protection and auth records live up to a day). */
export async function dropRedisPrefix(url, prefix) {
  const Redis = (await import('ioredis')).default;
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/** A pipeline-speed `serve` node on PostgreSQL (no pacing, instant simulated receipts), its connections named `appName`. */
export function pgNodeFlags(store, appName, extra = []) {
  return ['--queue-gap-ms', '0-0', '--sim-delivery-ms', '1', '--sim-read-ms', '1', '--allow-private-urls', '--store', withAppName(store, appName), ...extra];
}

/** The store URL with an application_name, so the bench can find the backends of one node in pg_stat_activity. */
export function withAppName(store, name) {
  const u = new URL(store);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/**
 * The CPU of the PostgreSQL backends whose application_name starts with
 * `tag`: this figure's nodes only, because the database server may be
 * serving others meanwhile (postgresCpuMs counts every postgres process).
 * Sampled every 150-250 ms from pg_stat_activity; a backend keeps its last
 * reading after it ends, and one first seen after a snapshot counts from 0
 * (it was born after it). Each sample also counts, per node, the line leases
 * (`cola:` streams) held at that moment: a send holds one, so it shows which
 * nodes send.
 */
export async function pgWatcher(store, tag, pidOfNode, { leases = true } = {}) {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: withAppName(store, 'bench-watcher') });
  await client.connect();
  const cpu = new Map(); // backend pid -> { app, last }
  const holds = new Map(); // node pid -> samples holding a line lease
  let samples = 0;
  let busy = null;
  const sample = async () => {
    const { rows } = await client.query('SELECT pid, application_name AS app FROM pg_stat_activity WHERE starts_with(application_name, $1)', [tag]);
    for (const r of rows) if (!cpu.has(r.pid)) cpu.set(r.pid, { app: r.app, last: 0, vol: 0, invol: 0 });
    for (const [pid, b] of cpu) {
      try {
        b.last = cpuMs(pid);
        Object.assign(b, ctxOf(pid));
      } catch {
        // Ended: its last reading stands.
      }
    }
    samples += 1;
    if (!leases) return;
    const held = await client.query(
      "SELECT n.etiqueta AS label, count(*)::int AS n FROM leases l JOIN nodos n ON n.id = l.nodo WHERE l.stream LIKE 'cola:%' GROUP BY 1",
    );
    for (const r of held.rows) {
      const pid = Number(/pid (\d+)/.exec(r.label)?.[1]);
      holds.set(pid, (holds.get(pid) ?? 0) + r.n);
    }
  };
  const tick = () => (busy ??= sample().finally(() => (busy = null)));
  // 150-250 ms apart at random: a fixed period in step with the paced, round-robin requests would see the same node's sends every time.
  let timer;
  const loop = () => {
    if (timer === null) return;
    timer = setTimeout(
      () => {
        void tick().catch(() => {});
        loop();
      },
      150 + Math.random() * 100,
    );
  };
  loop();
  return {
    /** Per application_name, the CPU ms so far (after a fresh sample). */
    async snapshot() {
      await busy;
      await tick();
      const out = new Map();
      for (const [pid, b] of cpu) out.set(pid, { ...b });
      return out;
    },
    /** CPU ms between two snapshots, in total and per application_name. */
    delta(a, b) {
      const byApp = {};
      let total = 0;
      const ctx = { vol: 0, invol: 0 };
      for (const [pid, x] of b) {
        const d = x.last - (a.get(pid)?.last ?? 0);
        total += d;
        byApp[x.app] = (byApp[x.app] ?? 0) + d;
        ctx.vol += x.vol - (a.get(pid)?.vol ?? 0);
        ctx.invol += x.invol - (a.get(pid)?.invol ?? 0);
      }
      return { total, byApp, ctx, backends: b.size };
    },
    /** This schema's per-table counters (pg_stat_user_tables; a backend reports its own at the latest when it ends). */
    async tables() {
      await busy;
      const { rows } = await client.query(
        'SELECT relname, seq_scan, idx_scan, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = current_schema()',
      );
      return new Map(rows.map((r) => [r.relname, r]));
    },
    resetHolds() {
      holds.clear();
      samples = 0;
    },
    holds: () => ({ samples, per_node: pidOfNode.map((pid) => holds.get(pid) ?? 0) }),
    async close() {
      clearTimeout(timer);
      timer = null;
      await busy?.catch(() => {});
      await client.end();
    },
  };
}
