// What the charts' counts (D-100, D-106: conteos_lineas and conteos_horas, kept by the message
// triggers) add to the message hot path, store-level: the same inserts and state changes
// (pendiente -> enviado -> entregado, one statement each per message, as the store's transitions
// do) timed three ways in alternating rounds, on SQLite and (when it answers) PostgreSQL:
//   none  the counts without the charts' part (SQLite: conteos_lineas_* dropped; PostgreSQL: the
//         function as the quarter counts by estado left it),
//   main  the charts' part as issue 36 built it (its migration's triggers / function),
//   now   this build's (the last migration that writes them).
//
//   npm run build && node bench/chart-triggers.mjs [--messages 20000] [--rounds 3] [--only sqlite|postgresql]
//
// Prints, per dialect and phase, the median us per message of each and the ratios to none.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openSqliteStore } from '../dist/store/sqlite/store.js';
import { openPgStore } from '../dist/store/postgres/store.js';
import { MIGRATIONS } from '../dist/store/sqlite/migrations.js';
import { PG_MIGRATIONS } from '../dist/store/postgres/migrations.js';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const N = opt('messages', 20_000);
const ROUNDS = opt('rounds', 3);
const PG_URL = process.env.PASARELA_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const T0 = Date.UTC(2026, 10, 23, 10);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const VARIANTS = ['none', 'main', 'now'];
const emptyOut = () => Object.fromEntries(VARIANTS.map((v) => [v, { insert: [], change: [], insertCpu: [], changeCpu: [] }]));
/** A process's CPU time (user + system) in ms, from /proc (clock ticks of 10 ms); null where /proc has no such process. */
const cpuMs = (pid) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return null;
  }
};

/** The CREATE TRIGGER conteos_lineas_* statements of a SQLite migration's text. */
const sqliteTriggersOf = (sql) => [...sql.matchAll(/CREATE TRIGGER conteos_lineas_\w+[\s\S]*?\bEND;/g)].map((m) => m[0]);
/** The counts' function of a PostgreSQL migration's text. */
const pgFunctionOf = (sql) => sql.slice(sql.indexOf('CREATE OR REPLACE FUNCTION conteos_suma()'), sql.indexOf('END $$;') + 'END $$;'.length);
const writes = (re) => (m) => re.test(m.sql);

async function seed(store) {
  const c = await store.createCliente(
    { nombre: 'b', email: 'b@x.mx', plan: 'ilimitado', estado: 'activo', max_celulares: null, saldo_global: 0, key_hash: 'kb' },
    1,
  );
  const cel = await store.insertCelular(
    {
      cliente_id: c.id,
      numero: '525500000001',
      nombre_interno: null,
      estado: 'activo',
      max_envios_por_minuto: 10,
      max_envios_por_hora: 100,
      max_envios_por_dia: null,
      hora_inicio_permitido: '00:00',
      hora_fin_permitido: '23:59',
      key_hash: 'k'.repeat(64),
      gateway_token_hash: 'g'.repeat(64),
    },
    1,
  );
  return { cliente: c.id, celular: cel.celular.id };
}

async function sqlite() {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-chart-triggers-'));
  const store = openSqliteStore(join(dir, 'b.db'));
  const db = store.db;
  const ids = await seed(store);
  const withLineas = MIGRATIONS.filter(writes(/CREATE TRIGGER conteos_lineas_insert/));
  const triggers = { none: [], main: sqliteTriggersOf(withLineas[0].sql), now: sqliteTriggersOf(withLineas.at(-1).sql) };
  const ins = db.prepare(
    `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, intentos, created_at)
     VALUES (?, ?, ?, '525512345678', 'texto', 'cola', 'pendiente', 'x', 0, 0, ?)`,
  );
  const move = db.prepare('UPDATE mensajes SET estado = ? WHERE msg_id = ?');
  const out = emptyOut();
  let k = 0;
  for (let r = 0; r < ROUNDS * VARIANTS.length; r += 1) {
    const v = VARIANTS[r % VARIANTS.length];
    for (const name of ['insert', 'estado', 'delete']) db.exec(`DROP TRIGGER IF EXISTS conteos_lineas_${name}`);
    for (const t of triggers[v]) db.exec(t);
    const base = k;
    let t = performance.now();
    db.transaction(() => {
      for (let i = 0; i < N; i += 1) ins.run(`m${k++}`, ids.cliente, ids.celular, T0 + i * 50);
    })();
    out[v].insert.push((performance.now() - t) / N);
    t = performance.now();
    db.transaction(() => {
      for (let i = base; i < k; i += 1) {
        move.run('enviado', `m${i}`);
        move.run('entregado', `m${i}`);
      }
    })();
    out[v].change.push((performance.now() - t) / (2 * N));
  }
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

async function postgres() {
  const schema = `bench_ct_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  try {
    await admin.connect();
  } catch {
    return null;
  }
  await admin.query(`CREATE SCHEMA ${schema}`);
  const store = await openPgStore(PG_URL, { schema, max: 2 });
  const ids = await seed(store);
  await admin.query(`SET search_path TO ${schema}`);
  // The database server's CPU for this session's statements: its backend's, read from /proc (same machine).
  const backend = (await admin.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const out = emptyOut();
  const fns = PG_MIGRATIONS.filter(writes(/FUNCTION conteos_suma\(\)/));
  const charted = fns.findIndex(writes(/conteos_lineas/));
  const fn = { none: pgFunctionOf(fns[charted - 1].sql), main: pgFunctionOf(fns[charted].sql), now: pgFunctionOf(fns.at(-1).sql) };
  let k = 0;
  try {
    for (let r = 0; r < ROUNDS * VARIANTS.length; r += 1) {
      const v = VARIANTS[r % VARIANTS.length];
      await admin.query(fn[v]);
      const base = k;
      // One statement per message, each its own transaction, as a node's transitions mostly are
      // (one long statement would pile every version of a count row into one transaction).
      let t = performance.now();
      let c = cpuMs(backend);
      for (let i = 0; i < N; i += 1) {
        await admin.query(
          `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, intentos, created_at)
           VALUES ($1, $2, $3, '525512345678', 'texto', 'cola', 'pendiente', 'x', 0, 0, $4)`,
          [`m${k++}`, ids.cliente, ids.celular, T0 + i * 50],
        );
      }
      out[v].insert.push((performance.now() - t) / N);
      if (c !== null) out[v].insertCpu.push((cpuMs(backend) - c) / N);
      t = performance.now();
      c = cpuMs(backend);
      for (let i = base; i < k; i += 1) {
        for (const e of ['enviado', 'entregado']) await admin.query('UPDATE mensajes SET estado = $1 WHERE msg_id = $2', [e, `m${i}`]);
      }
      out[v].change.push((performance.now() - t) / (2 * N));
      if (c !== null) out[v].changeCpu.push((cpuMs(backend) - c) / (2 * N));
    }
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
  return out;
}

const us = (x) => (x * 1000).toFixed(1);
const ONLY = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
for (const [name, run] of [
  ['SQLite', sqlite],
  ['PostgreSQL', postgres],
].filter(([n]) => !ONLY || n.toLowerCase() === ONLY)) {
  const r = await run();
  if (!r) {
    console.log(`${name}: not reachable, skipped`);
    continue;
  }
  for (const phase of ['insert', 'change', 'insertCpu', 'changeCpu']) {
    if (r.none[phase].length === 0) continue;
    const m = Object.fromEntries(VARIANTS.map((v) => [v, median(r[v][phase])]));
    console.log(
      `${name} ${phase.padEnd(9)} (${phase.endsWith('Cpu') ? "the backend's CPU" : 'wall'}): us/msg none ${us(m.none)}, main ${us(m.main)} (${(m.main / m.none).toFixed(2)}x), now ${us(m.now)} (${(m.now / m.none).toFixed(2)}x); ` +
        `rounds ${VARIANTS.map((v) => `${v} ${r[v][phase].map(us).join('/')}`).join(', ')}`,
    );
  }
}
