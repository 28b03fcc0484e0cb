#!/usr/bin/env node
// History pages on PostgreSQL at 1,000,000 messages, and the plans of the per-message statements there.
//
//   npm run build && node bench/historial-pg.mjs [--rows 1000000] [--runs 100] [--dist DIR] [--keep]
//
// The PostgreSQL companion of bench/historial.mjs (the same data shape and scenarios): a schema of its
// own on PASARELA_TEST_POSTGRES_URL (default the test database), migrated by opening the store, filled
// with one INSERT ... SELECT over generate_series (a fixture, not the send path; the count triggers off,
// the counts filled by GROUP BY as `pasarela migrate` does), VACUUM ANALYZE, then store.listMensajes
// timed for each scenario. `--dist` runs another build's store (a checkout of main, to compare schemas
// in the same hour). Then a few messages go through every per-message statement of the store with each
// statement's plan taken first (EXPLAIN with the same parameters): a sequential scan of mensajes, or of
// any table holding more than 10,000 rows, is reported. Writes bench/results/historial-pg.json.
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const HERE = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const ROWS = Number(opt('rows', 1_000_000));
const RUNS = Number(opt('runs', 100));
const DIST = resolve(opt('dist', join(HERE, '..', 'dist')));
const KEEP = args.includes('--keep');
const URL_ = process.env.PASARELA_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test';
const TARGET_P95_MS = 25;
const POR_PAGINA = 50;

const DAY = 86_400_000;
const DAYS = 90;
const END = Date.UTC(2026, 2, 1);
const START = END - DAYS * DAY;
const CLIENTS = 3;
const LINES = 20;
const RECIPIENTS = 20_000;

const { openPgStore } = await import(pathToFileURL(join(DIST, 'store/postgres/store.js')).href);
const { slotClaim } = await import(pathToFileURL(join(DIST, 'core/sending/caps.js')).href);

const celularId = (c, l) => c * LINES + l + 1;
const recipient = (c, r) => `52${String(5500000000 + c * 1_000_000 + r * 37)}`;

async function admin(sql) {
  const c = new pg.Client({ connectionString: URL_ });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/**
 * The same shape as bench/historial.mjs, drawn by PostgreSQL: shares 0.5/0.3/0.2, skewed lines and recipients, pending only
 * in the last day, and none of the third client's (a filter that matches nothing).
 */
async function fill(store) {
  const db = store.db;
  const t0 = performance.now();
  for (let c = 0; c < CLIENTS; c += 1) {
    await db.query(
      `INSERT INTO clientes (id, nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
       VALUES ($1, $2, $3, 'activo', 'medido', NULL, 0, 'x', $4, $4)`,
      [c + 1, `Cliente ${c + 1}`, `c${c + 1}@example.com`, START],
    );
    for (let l = 0; l < LINES; l += 1)
      await db.query(
        `INSERT INTO celulares (id, cliente_id, numero, estado, max_envios_por_minuto, max_envios_por_hora, hora_inicio_permitido,
           hora_fin_permitido, key_hash, created_at, updated_at) VALUES ($1, $2, $3, 'activo', 12, 500, '00:00', '23:59', 'x', $4, $4)`,
        [celularId(c, l), c + 1, `5255${String(10000000 + c * 100 + l)}`, START],
      );
  }
  await db.query("SELECT setval(pg_get_serial_sequence('clientes', 'id'), 100), setval(pg_get_serial_sequence('celulares', 'id'), 1000)");
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('ALTER TABLE mensajes DISABLE TRIGGER USER');
    await client.query('SELECT setseed(0.42)');
    await client.query(
      `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, media, gateway_msg_id, error,
         cobrado, cargo, payload, intentos, created_at, enviado_at, entregado_at, leido_at, cupo_at)
       SELECT id, cli + 1, cli * ${LINES} + lin + 1, '52' || (5500000000 + cli * 1000000 + rcp * 37)::text, tipo, modo, estado,
         'Hola, su pedido ' || i || ' está en camino. Gracias por su compra.', NULL,
         CASE WHEN estado IN ('enviado', 'entregado', 'leido') THEN 'gw-' || id END,
         CASE WHEN estado = 'error' THEN 'el número no tiene WhatsApp' END, 1, 'celular', '{"texto":"hola"}', 1, created,
         CASE WHEN estado IN ('enviado', 'entregado', 'leido') THEN created + 1500 END,
         CASE WHEN estado IN ('entregado', 'leido') THEN created + 4000 END,
         CASE WHEN estado = 'leido' THEN created + 60000 END,
         -- A send's slot is its send time; those of the last day are what the caps count.
         CASE WHEN estado IN ('enviado', 'entregado', 'leido') AND ${END} - created < ${DAY} THEN created + 1500 END
       FROM (
         SELECT i, created, to_hex(created) || '-' || lpad(to_hex(i), 6, '0') AS id,
           CASE WHEN r1 < 0.5 THEN 0 WHEN r1 < 0.8 THEN 1 ELSE 2 END AS cli,
           LEAST(${LINES - 1}, floor(${LINES} * power(r2, 1.8)))::int AS lin,
           LEAST(${RECIPIENTS - 1}, floor(${RECIPIENTS} * power(r3, 2.2)))::int AS rcp,
           CASE WHEN r4 < 0.6 THEN 'texto' WHEN r4 < 0.7 THEN 'imagen' WHEN r4 < 0.8 THEN 'documento' WHEN r4 < 0.9 THEN 'audio' ELSE 'video' END AS tipo,
           CASE WHEN r5 < 0.8 THEN 'cola' ELSE 'directo' END AS modo,
           CASE WHEN ${END} - created < ${DAY} AND r6 < 0.3 AND r1 < 0.8 THEN 'pendiente' WHEN r6 < 0.05 THEN 'error' WHEN r6 < 0.15 THEN 'enviado'
                WHEN r6 < 0.45 THEN 'entregado' ELSE 'leido' END AS estado
         FROM (SELECT i, (${START} + i * ${(END - START) / ROWS})::bigint AS created, random() r1, random() r2, random() r3, random() r4, random() r5, random() r6
               FROM generate_series(0::bigint, ${ROWS - 1}) i) g
       ) x`,
    );
    await client.query('ALTER TABLE mensajes ENABLE TRIGGER USER');
    await client.query(
      'INSERT INTO conteos_mensajes (cliente_id, celular_id, estado, n) SELECT cliente_id, celular_id, estado, COUNT(*) FROM mensajes GROUP BY 1, 2, 3',
    );
    // By estado too from migration 15 on (D-73); the schema of an earlier build has no such column.
    const byEstado = (await client.query("SELECT 1 FROM pg_attribute WHERE attrelid = 'conteos_cuartos'::regclass AND attname = 'estado'")).rowCount;
    await client.query(
      byEstado
        ? 'INSERT INTO conteos_cuartos (cliente_id, cuarto, estado, n) SELECT cliente_id, created_at / 900000, estado, COUNT(*) FROM mensajes GROUP BY 1, 2, 3'
        : 'INSERT INTO conteos_cuartos (cliente_id, cuarto, n) SELECT cliente_id, created_at / 900000, COUNT(*) FROM mensajes GROUP BY 1, 2',
    );
    // The narrow schema's side tables, from the rows (as its migration and `pasarela migrate` fill them).
    if ((await client.query("SELECT to_regclass('mensajes_pendientes') IS NOT NULL AS y")).rows[0].y) {
      await client.query(
        "INSERT INTO mensajes_pendientes (seq, msg_id, celular_id, modo, cupo_at) SELECT seq, msg_id, celular_id, modo, cupo_at FROM mensajes WHERE estado = 'pendiente'",
      );
      await client.query(
        'INSERT INTO ids_gateway (gateway_msg_id, celular_id, msg_id) SELECT gateway_msg_id, celular_id, msg_id FROM mensajes WHERE gateway_msg_id IS NOT NULL',
      );
      await client.query('INSERT INTO cupos (seq, celular_id, cupo_at) SELECT seq, celular_id, cupo_at FROM mensajes WHERE cupo_at IS NOT NULL');
    }
    await client.query(
      `WITH q AS (SELECT celular_id, COUNT(*) AS n FROM mensajes WHERE estado = 'pendiente' AND modo = 'cola' GROUP BY 1)
       UPDATE celulares l SET pendientes = q.n FROM q WHERE l.id = q.celular_id`,
    );
    await client.query('COMMIT');
  } finally {
    client.release();
  }
  await db.query('VACUUM ANALYZE');
  return performance.now() - t0;
}

let seed = 0x9e3779b9;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const skewed = (n, s) => Math.min(n - 1, Math.floor(n * Math.pow(rand(), s)));
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
const weekStart = () => END - 7 * DAY - Math.floor(rand() * (DAYS - 7)) * DAY;
const base = (c = 0) => ({ cliente_id: c + 1, page: 1, por_pagina: POR_PAGINA });
const busiestLine = celularId(0, 0);
const anyRecipient = () => recipient(0, skewed(RECIPIENTS, 2.2));

const SCENARIOS = [
  ['client only', () => base()],
  ['client only (each client in turn)', (i) => base(i % CLIENTS)],
  ['client + estado=leido (most rows)', () => ({ ...base(), estado: 'leido' })],
  ['client + estado=error (few rows)', () => ({ ...base(), estado: 'error' })],
  ['client + estado=pendiente (last day)', () => ({ ...base(), estado: 'pendiente' })],
  ['client + estado=pendiente (none: the third client)', () => ({ ...base(2), estado: 'pendiente' })],
  ['client + celular (busiest line)', () => ({ ...base(), celular_id: busiestLine })],
  ['client + celular (any line)', () => ({ ...base(), celular_id: celularId(0, Math.floor(rand() * LINES)) })],
  ['client + destinatario (most frequent)', () => ({ ...base(), destinatario: recipient(0, 0) })],
  ['client + destinatario (any)', () => ({ ...base(), destinatario: anyRecipient() })],
  [
    'client + date range (7 days)',
    () => {
      const d = weekStart();
      return { ...base(), desde: d, hasta: d + 7 * DAY };
    },
  ],
  ['client + celular + estado', () => ({ ...base(), celular_id: busiestLine, estado: pick(['leido', 'error', 'enviado']) })],
  ['client + celular (quiet line) + estado=error', () => ({ ...base(), celular_id: celularId(0, LINES - 1), estado: 'error' })],
  [
    'client + celular + 7 days',
    () => {
      const d = weekStart();
      return { ...base(), celular_id: busiestLine, desde: d, hasta: d + 7 * DAY };
    },
  ],
  ['client + celular + destinatario', () => ({ ...base(), celular_id: busiestLine, destinatario: anyRecipient() })],
  ['client + estado + destinatario', () => ({ ...base(), estado: 'leido', destinatario: anyRecipient() })],
  [
    'client + estado + 7 days',
    () => {
      const d = weekStart();
      return { ...base(), estado: 'error', desde: d, hasta: d + 7 * DAY };
    },
  ],
  ['client only, page 20', () => ({ ...base(), page: 20 })],
];

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  return { p50: q(0.5), p95: q(0.95), max: s[s.length - 1] };
}

/**
 * Every statement the store sends while `fn` runs is explained first with the same parameters (EXPLAIN
 * does not execute it). Installed on pg's Client before any connection is made: the store binds each
 * connection's query method when it connects (postgres/db.ts prepareOnce, which names each statement).
 */
let plans = null;
const orig = pg.Client.prototype.query;
pg.Client.prototype.query = function (q, values, cb) {
  const text = typeof q === 'string' ? q : q?.text;
  const params = typeof q === 'string' ? values : q?.values;
  if (plans === null || typeof text !== 'string' || !/^\s*(WITH|SELECT|UPDATE|INSERT|DELETE)\b/i.test(text)) return orig.call(this, q, values, cb);
  const into = plans;
  const explain = orig.call(this, `EXPLAIN ${text}`, Array.isArray(params) ? params : []).then(
    (r) => into.push({ sql: text.replace(/\s+/g, ' ').slice(0, 160), plan: r.rows.map((x) => x['QUERY PLAN']).join('\n') }),
    (err) => into.push({ sql: text.replace(/\s+/g, ' ').slice(0, 160), plan: `EXPLAIN failed: ${err.message}` }),
  );
  const run = () => orig.call(this, q, values, cb);
  const callback = typeof cb === 'function' ? cb : typeof values === 'function' && typeof q !== 'string' ? values : null;
  if (callback) {
    void explain.then(run);
    return undefined;
  }
  return explain.then(run);
};

async function explained(fn) {
  plans = [];
  try {
    await fn();
    return plans;
  } finally {
    plans = null;
  }
}

/** A few messages through every per-message statement: accept (queued, direct), heads, claim, send, receipts (one parked), retry, failure, recovery. */
async function lifecycle(store) {
  const now = END + 60_000;
  const c = await store.createCliente(
    { nombre: 'P', email: 'p@x.mx', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'h' },
    now,
  );
  const made = await store.insertCelular(
    {
      cliente_id: c.id,
      numero: '525599999999',
      nombre_interno: null,
      estado: 'activo',
      max_envios_por_minuto: 100,
      max_envios_por_hora: 1000,
      max_envios_por_dia: 10000,
      hora_inicio_permitido: '00:00',
      hora_fin_permitido: '23:59',
      key_hash: 'k'.repeat(64),
      gateway_token_hash: 'g'.repeat(64),
    },
    now,
  );
  const cel = made.celular;
  await store.changeBalance({ cliente_id: c.id, celular_id: null, monto: 100, motivo: 'recarga', actor: 'op' }, now);
  const caps = slotClaim(cel, now, 30_000);
  const msg = (i, modo) => ({
    msg_id: `bench-${randomBytes(6).toString('hex')}-${i}`,
    cliente_id: c.id,
    celular_id: cel.id,
    destinatario: '14155552671',
    tipo: 'texto',
    modo,
    texto: 'x',
    media: null,
    payload: { texto: 'x' },
    expira_at: null,
  });
  return explained(async () => {
    const q = [msg(1, 'cola'), msg(2, 'cola'), msg(3, 'cola')];
    for (const m of q) await store.acceptMensaje(m, { charge: true, maxPending: 1000 }, now);
    const d = msg(4, 'directo');
    await store.acceptMensaje(d, { charge: true, maxPending: null, slot: caps }, now);
    await store.queueHeads();
    await store.queueDepth();
    await store.claimQueued(q[0].msg_id, caps, now + 1);
    await store.receipt(cel.id, 'gw-bench-1', 'entregado', now + 2);
    await store.markSent(q[0].msg_id, 'gw-bench-1', now + 3);
    await store.receipt(cel.id, 'gw-bench-1', 'leido', now + 4);
    await store.getMensajeByGatewayId('gw-bench-1');
    await store.claimQueued(q[1].msg_id, caps, now + 5);
    await store.retryLater(q[1].msg_id, now + 10_000, 'rate-limited: bench');
    await store.claimQueued(q[2].msg_id, caps, now + 6);
    await store.markSent(q[2].msg_id, 'gw-bench-3', now + 7);
    await store.receipt(cel.id, 'gw-bench-3', 'error', now + 8, 'lost');
    await store.strandedDirect(now + 60_000, 10);
    await store.markSent(d.msg_id, 'gw-bench-4', now + 9);
    await store.failMensaje(q[1].msg_id, 'refused', 'rechazado', now + 11);
    await store.pendingFiles();
    await store.releaseLeases();
  });
}

async function main() {
  const schema = `bench_hist_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE SCHEMA ${schema}`);
  const store = await openPgStore(URL_, { schema, max: 4 });
  try {
    const version = await store.schemaVersion();
    process.stderr.write(`filling ${ROWS.toLocaleString('en')} messages (schema v${version}, ${DIST})...\n`);
    const fillMs = await fill(store);
    const size = (await store.db.one("SELECT pg_total_relation_size('mensajes') AS b, pg_relation_size('mensajes') AS h")) ?? {};
    const indexes = (await store.db.q("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'mensajes' ORDER BY 1", [schema])).map(
      (r) => r.indexname,
    );
    process.stderr.write(`filled in ${(fillMs / 1000).toFixed(1)} s; mensajes ${(Number(size.b) / 1e6).toFixed(0)} MB with ${indexes.length} indexes\n`);
    const results = [];
    for (const [name, make] of SCENARIOS) {
      for (let i = 0; i < 5; i += 1) await store.listMensajes(make(i));
      const ms = [];
      let totals = 0;
      for (let i = 0; i < RUNS; i += 1) {
        const f = make(i);
        const t = process.hrtime.bigint();
        const r = await store.listMensajes(f);
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
        totals += r.total;
      }
      const w = stats(ms);
      results.push({ scenario: name, mean_total: Math.round(totals / RUNS), ms: w, meets_target: w.p95 <= TARGET_P95_MS });
    }
    const f2 = (n) => n.toFixed(2).padStart(8);
    console.log(`\n${ROWS.toLocaleString('en')} messages on PostgreSQL (schema v${version}, ${indexes.length} indexes on mensajes); ${RUNS} runs each; ms\n`);
    console.log(`${'scenario'.padEnd(46)} ${'total'.padStart(8)}      p50      p95      max`);
    for (const r of results)
      console.log(
        `${r.scenario.padEnd(46)} ${String(r.mean_total).padStart(8)} ${f2(r.ms.p50)} ${f2(r.ms.p95)} ${f2(r.ms.max)}${r.meets_target ? '' : '  <-- over target'}`,
      );
    const worst = Math.max(...results.map((r) => r.ms.p95));
    console.log(`\nworst p95: ${worst.toFixed(2)} ms (target ${TARGET_P95_MS} ms): ${worst <= TARGET_P95_MS ? 'met' : 'MISSED'}`);

    const plans = await lifecycle(store);
    const big = new Set(
      (await store.db.q("SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = $1::regnamespace AND reltuples > 10000", [schema])).map(
        (r) => r.relname,
      ),
    );
    big.add('mensajes');
    const seqScans = plans.filter((p) => [...p.plan.matchAll(/Seq Scan on (\w+)/g)].some((m) => big.has(m[1])) || p.plan.startsWith('EXPLAIN failed'));
    console.log(`\n${plans.length} per-message statements explained; sequential scans of a big table (${[...big].join(', ')}): ${seqScans.length}`);
    for (const p of seqScans) console.log(`  ${p.sql}\n    ${p.plan.replace(/\n/g, '\n    ')}`);

    const out = {
      generated_at: new Date().toISOString(),
      dist: DIST,
      rows: ROWS,
      schema_version: version,
      indexes_on_mensajes: indexes,
      mensajes_bytes: Number(size.b),
      mensajes_heap_bytes: Number(size.h),
      fill_ms: Math.round(fillMs),
      runs: RUNS,
      target_p95_ms: TARGET_P95_MS,
      worst_p95_ms: worst,
      results,
      statements_explained: plans.length,
      seq_scans_of_big_tables: seqScans,
      plans,
    };
    const file = join(HERE, 'results', `historial-pg-v${version}.json`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${file}`);
  } finally {
    await store.close();
    if (KEEP) console.log(`kept schema ${schema}`);
    else await admin(`DROP SCHEMA ${schema} CASCADE`);
  }
}

await main();
