#!/usr/bin/env node
// The charts' reads of figure 15 (core/charts/charts.ts `estadisticas`, as the panel's pages call it) on
// a store whose kept counts are shaped as figure 15's 1,000,000 messages (3 clients, 60 lines, 90
// days: the quarters of every day, the lines' minutes of two days and quarters of eight, each
// client's hours of eight where the schema has them) against one of 100 messages, timed in this
// process by CPU time (process.cpuUsage), not wall time, so a loaded machine skews it less.
// Counts rows are written straight into the tables (a fixture, not the send path).
//
//   npm run build && node bench/chart-reads.mjs [--dist DIR] [--runs 300]
//
// --dist another build's dist/ (its migrations and reads), to compare two builds in one hour.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const DIST = resolve(opt('dist', new URL('../dist', import.meta.url).pathname));
const RUNS = Number(opt('runs', 300));
const { openSqliteStore } = await import(join(DIST, 'store/sqlite/store.js'));
const { estadisticas } = await import(join(DIST, 'core/charts/charts.js'));

const DAY = 86_400_000;
const END = Date.UTC(2026, 2, 1);
const ESTADOS = ['pendiente', 'enviado', 'entregado', 'leido', 'error'];
let seed = 7;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;

function build(big) {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-chart-reads-'));
  const store = openSqliteStore(join(dir, 'p.db'));
  const db = store.db;
  const hasHours = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'conteos_horas'").get() !== undefined;
  db.transaction(() => {
    for (let c = 1; c <= 3; c += 1) {
      db.prepare(
        `INSERT INTO clientes (id, nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
         VALUES (?, ?, ?, 'activo', 'medido', NULL, 0, ?, 0, 0)`,
      ).run(c, `c${c}`, `c${c}@x.mx`, `k${c}`);
      for (let l = 0; l < 20; l += 1)
        db.prepare(
          `INSERT INTO celulares (id, cliente_id, numero, estado, max_envios_por_minuto, max_envios_por_hora, hora_inicio_permitido,
             hora_fin_permitido, key_hash, created_at, updated_at) VALUES (?, ?, ?, 'activo', 12, 500, '00:00', '23:59', ?, 0, 0)`,
        ).run((c - 1) * 20 + l + 1, c, `5255${10000000 + c * 100 + l}`, `x${c}-${l}`);
    }
    if (!big) {
      // 100 messages over 90 days, all the first client's: the triggers keep their counts.
      const ins = db.prepare(
        `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, intentos, created_at)
         VALUES (?, 1, ?, '525512345678', 'texto', 'cola', ?, 'x', 0, 0, ?)`,
      );
      for (let i = 0; i < 100; i += 1) ins.run(`m${i}`, 1 + (i % 20), ESTADOS[i % 5], END - 90 * DAY + Math.floor((i * 90 * DAY) / 100));
      return;
    }
    const cuarto = db.prepare('INSERT INTO conteos_cuartos (cliente_id, cuarto, estado, n) VALUES (?, ?, ?, ?)');
    const linea = db.prepare('INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING');
    const hora = hasHours
      ? db.prepare(
          'INSERT INTO conteos_horas (hora, cliente_id, estado, n) VALUES (?, ?, ?, ?) ON CONFLICT (hora, cliente_id, estado) DO UPDATE SET n = n + excluded.n',
        )
      : null;
    const q0 = (END - 90 * DAY) / 900_000;
    for (let q = q0; q < END / 900_000; q += 1) {
      const recent = q >= (END - 8 * DAY) / 900_000;
      for (let c = 1; c <= 3; c += 1)
        for (const e of ESTADOS) {
          const n = 1 + Math.floor(rand() * 20);
          cuarto.run(c, q, e, n);
          if (recent && hora) hora.run(Math.floor(q / 4), c, e, n);
        }
      if (recent) for (let k = 0; k < 60; k += 1) linea.run(1 + Math.floor(rand() * 60), 15, q, ESTADOS[k % 5], 1, 1);
    }
    for (let m = (END - 2 * DAY) / 60_000; m < END / 60_000; m += 1)
      for (let k = 0; k < 7; k += 1) linea.run(1 + Math.floor(rand() * 60), 1, m, ESTADOS[k % 5], 1, 1);
  })();
  return { store, dir };
}

const PAGES = [
  ['charts, last hour', {}],
  ['charts, 7 days', { rango: '7d' }],
  ['charts, one client, 24 h', { rango: '24h', cliente_id: 1 }],
  ["charts, a client's line, 7 days", { rango: '7d', cliente_id: 1, celular_id: 1 }],
];
const stores = { small: build(false), big: build(true) };
const operator = { kind: 'operator' };
const coreOf = (store) => ({ store, clock: { now: () => END - 60_000 } });
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const p = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
console.log(`dist ${DIST}; ${RUNS} runs a page and store, alternating; CPU us per read (p50 / p95), big over small`);
for (const [page, q] of PAGES) {
  const t = { small: [], big: [] };
  for (const k of ['small', 'big']) for (let i = 0; i < 20; i += 1) await estadisticas(coreOf(stores[k].store), operator, q);
  for (let i = 0; i < RUNS; i += 1) {
    for (const k of ['small', 'big']) {
      const c = cpuUs();
      await estadisticas(coreOf(stores[k].store), operator, q);
      t[k].push(cpuUs() - c);
    }
  }
  const r = (x) => `${p(x, 0.5).toFixed(0)} / ${p(x, 0.95).toFixed(0)}`;
  console.log(
    `${page.padEnd(32)} big ${r(t.big).padEnd(12)} small ${r(t.small).padEnd(12)} ratio p50 ${(p(t.big, 0.5) / p(t.small, 0.5)).toFixed(2)}, p95 ${(p(t.big, 0.95) / p(t.small, 0.95)).toFixed(2)}`,
  );
}
for (const k of ['small', 'big']) {
  await stores[k].store.close();
  rmSync(stores[k].dir, { recursive: true, force: true });
}
