#!/usr/bin/env node
// History query benchmark (DESIGN §8): one page of GET /api/historial_listar.php
// with its total, on a SQLite store of 1,000,000 messages.
//
//   npm run build && node bench/historial.mjs [--rows 1000000] [--runs 200] [--keep] [--without-indexes-of VERSION]
//
// Builds a store in a temp dir (all migrations applied, as `serve` would),
// fills `mensajes` straight through store.db in one transaction (a fixture,
// not the send path), then times store.listMensajes for realistic first
// pages with their total, and the same page query without the COUNT as the
// same-run baseline. Prints a table; writes bench/results/historial.json.
// Target: p95 <= 25 ms for every filtered page with its total (the issue's figure 6).
// Then the panel (figure 14): the same store served by `serve` in-process, the
// history page and the webhook deliveries timed through the real app (inject
// with a signed-in operator session) on this store and on a 100-message one;
// p95 per page and the ratio go under `panel` in the same file. --skip-panel leaves it out.
// --without-indexes-of 3 drops the indexes migration 3 creates, to compare (nothing is written then).
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { openSqliteStore } from '../dist/store/sqlite/store.js';
import { MIGRATIONS } from '../dist/store/sqlite/migrations.js';
import { SERVE_DEFAULTS, startServer } from '../dist/server/serve.js';
import { ManualClock } from '../dist/core/time/clock.js';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const ROWS = opt('rows', 1_000_000);
const RUNS = opt('runs', 200);
const KEEP = args.includes('--keep');
const WITHOUT = opt('without-indexes-of', 0);
const PANEL = !args.includes('--skip-panel');
const PANEL_RUNS = opt('panel-runs', RUNS);
const SMALL_ROWS = 100;
/** The 1M page may take this many times the 100-message page's p95 (figure 14). */
const PANEL_TARGET_RATIO = 1.5;
/** One webhook delivery (a message.status event) for every this many messages. */
const MESSAGES_PER_DELIVERY = 4;
const TARGET_P95_MS = 25;
const POR_PAGINA = 50;

const DAY = 86_400_000;
const DAYS = 90;
const END = Date.UTC(2026, 2, 1);
const START = END - DAYS * DAY;
const CLIENTS = 3;
const LINES = 20;
// Uneven, as real accounts are: the largest client sends half of everything.
const CLIENT_SHARE = [0.5, 0.3, 0.2];
const RECIPIENTS_PER_CLIENT = 20_000;

// Deterministic pseudo-random numbers (mulberry32), so every run builds the same data.
let seed = 0x9e3779b9;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
/** Index in [0, n) with a Zipf-like skew: a few busy lines and frequent recipients, a long tail. */
const skewed = (n, s = 1.2) => Math.min(n - 1, Math.floor(n * Math.pow(rand(), 1 + s)));
const pickShare = (shares) => {
  let r = rand();
  for (let i = 0; i < shares.length; i += 1) if ((r -= shares[i]) < 0) return i;
  return shares.length - 1;
};

const clienteId = (c) => c + 1;
const celularId = (c, l) => c * LINES + l + 1;
const recipient = (c, r) => `52${String(5500000000 + c * 1_000_000 + r * 37)}`;
const TIPOS = ['texto', 'texto', 'texto', 'texto', 'texto', 'texto', 'imagen', 'documento', 'audio', 'video'];

/**
 * Fills `rows` messages evenly over [from, to), shared among the clients by
 * `shares`; `accounts: false` adds them to a store whose clients and lines
 * exist. `seedAt` restarts the random numbers, so two stores get the same rows.
 */
function fill(store, { rows = ROWS, shares = CLIENT_SHARE, from = START, to = END, accounts = true, seedAt } = {}) {
  if (seedAt !== undefined) seed = seedAt;
  const db = store.db;
  // The lines exist, so the data looks like a real store (history does not join them).
  const now = START;
  const insCliente = db.prepare(
    `INSERT INTO clientes (id, nombre, email, estado, plan, max_celulares, saldo_global, key_hash, created_at, updated_at)
     VALUES (?, ?, ?, 'activo', 'medido', NULL, 0, 'x', ?, ?)`,
  );
  const insCelular = db.prepare(
    `INSERT INTO celulares (id, cliente_id, numero, estado, max_envios_por_minuto, max_envios_por_hora, hora_inicio_permitido,
       hora_fin_permitido, key_hash, created_at, updated_at)
     VALUES (?, ?, ?, 'activo', 12, 500, '00:00', '23:59', 'x', ?, ?)`,
  );
  const ins = db.prepare(
    `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, media, gateway_msg_id, error,
       cobrado, cargo, payload, intentos, created_at, enviado_at, entregado_at, leido_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'celular', ?, 1, ?, ?, ?, ?)`,
  );
  const insEvento = db.prepare(
    `INSERT INTO eventos (cliente_id, celular_id, evento, data, fecha, entrega, intentos, proximo_intento_at, entregado_at, ultimo_status, ultima_duracion_ms)
     VALUES (?, ?, 'message.status', ?, ?, 'entregado', 1, ?, ?, 200, 40)`,
  );
  const t0 = performance.now();
  db.transaction(() => {
    for (let c = 0; accounts && c < CLIENTS; c += 1) {
      insCliente.run(clienteId(c), `Cliente ${c + 1}`, `c${c + 1}@example.com`, now, now);
      for (let l = 0; l < LINES; l += 1) insCelular.run(celularId(c, l), clienteId(c), `5255${String(10000000 + c * 100 + l)}`, now, now);
    }
    const step = (to - from) / rows;
    for (let i = 0; i < rows; i += 1) {
      // Arrival order is time order, as in production (rowid grows with created_at).
      const created = Math.floor(from + i * step);
      const c = pickShare(shares);
      const l = skewed(LINES, 0.8);
      const r = skewed(RECIPIENTS_PER_CLIENT);
      const tipo = TIPOS[Math.floor(rand() * TIPOS.length)];
      const recent = to - created < DAY;
      const x = rand();
      // Pending only in the last day; otherwise mostly read or delivered, a few errors.
      const estado = recent && x < 0.3 ? 'pendiente' : x < 0.05 ? 'error' : x < 0.15 ? 'enviado' : x < 0.45 ? 'entregado' : 'leido';
      const sent = estado !== 'pendiente' && estado !== 'error';
      const id = `${created.toString(36)}-${i.toString(36).padStart(6, '0')}`;
      const texto = tipo === 'texto' || rand() < 0.5 ? `Hola, su pedido ${i} está en camino. Gracias por su compra.` : null;
      const media =
        tipo === 'texto'
          ? null
          : JSON.stringify(rand() < 0.5 ? { url: `https://cdn.example.com/f/${i}.bin` } : { filename: `f${i}.pdf`, mime: 'application/pdf', bytes: 20000 + i });
      ins.run(
        id,
        clienteId(c),
        celularId(c, l),
        recipient(c, r),
        tipo,
        rand() < 0.8 ? 'cola' : 'directo',
        estado,
        texto,
        media,
        sent ? `gw-${id}` : null,
        estado === 'error' ? 'el número no tiene WhatsApp' : null,
        JSON.stringify({ texto: texto ?? undefined, url: media ? `https://cdn.example.com/f/${i}.bin` : undefined }),
        created,
        sent ? created + 1500 : null,
        estado === 'entregado' || estado === 'leido' ? created + 4000 : null,
        estado === 'leido' ? created + 60000 : null,
      );
      // The webhook deliveries the panel lists: a message.status event delivered at the first attempt.
      if (i % MESSAGES_PER_DELIVERY === 0) {
        insEvento.run(clienteId(c), celularId(c, l), JSON.stringify({ msg_id: id, estado }), created + 1500, created + 1500, created + 1540);
      }
    }
  })();
  return performance.now() - t0;
}

/** The page query of src/store/sqlite/history.ts without its COUNT: the same-run baseline. */
function pageOnly(db, f) {
  const where = ['cliente_id = @cliente_id'];
  if (f.celular_id !== undefined) where.push(f.destinatario !== undefined ? '+celular_id = @celular_id' : 'celular_id = @celular_id');
  if (f.estado !== undefined) where.push('estado = @estado');
  if (f.destinatario !== undefined) where.push('destinatario = @destinatario');
  if (f.desde !== undefined) where.push('created_at >= @desde');
  if (f.hasta !== undefined) where.push('created_at < @hasta');
  const sql = `SELECT * FROM mensajes WHERE ${where.join(' AND ')} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`;
  return { where: where.join(' AND '), sql, rows: db.prepare(sql).all({ ...f, offset: (f.page - 1) * f.por_pagina, limit: f.por_pagina }) };
}

const BIG = 0; // the client with half of all messages: the worst case for every filter
const busiestLine = celularId(BIG, 0);
const frequentRecipient = recipient(BIG, 0);
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
const weekStart = () => END - 7 * DAY - Math.floor(rand() * (DAYS - 7)) * DAY;
const base = (c = BIG) => ({ cliente_id: clienteId(c), page: 1, por_pagina: POR_PAGINA });

/** Each scenario makes the filter of one run; parameters vary from run to run. */
const SCENARIOS = [
  ['client only', () => base()],
  ['client only (each client in turn)', (i) => base(i % CLIENTS)],
  ['client + estado=leido (most rows)', () => ({ ...base(), estado: 'leido' })],
  ['client + estado=error (few rows)', () => ({ ...base(), estado: 'error' })],
  ['client + celular (busiest line)', () => ({ ...base(), celular_id: busiestLine })],
  ['client + celular (any line)', () => ({ ...base(), celular_id: celularId(BIG, Math.floor(rand() * LINES)) })],
  ['client + destinatario (most frequent)', () => ({ ...base(), destinatario: frequentRecipient })],
  ['client + destinatario (any)', () => ({ ...base(), destinatario: recipient(BIG, skewed(RECIPIENTS_PER_CLIENT)) })],
  [
    'client + date range (1 day)',
    () => {
      const d = weekStart();
      return { ...base(), desde: d, hasta: d + DAY };
    },
  ],
  [
    'client + date range (7 days)',
    () => {
      const d = weekStart();
      return { ...base(), desde: d, hasta: d + 7 * DAY };
    },
  ],
  ['client + date range (30 days)', () => ({ ...base(), desde: END - 30 * DAY, hasta: END })],
  ['client + celular + estado', () => ({ ...base(), celular_id: busiestLine, estado: pick(['leido', 'error', 'enviado']) })],
  [
    'client + celular + 7 days',
    () => {
      const d = weekStart();
      return { ...base(), celular_id: busiestLine, desde: d, hasta: d + 7 * DAY };
    },
  ],
  ['client + celular + destinatario', () => ({ ...base(), celular_id: busiestLine, destinatario: recipient(BIG, skewed(RECIPIENTS_PER_CLIENT)) })],
  [
    'client + celular + estado + destinatario',
    () => ({ ...base(), celular_id: busiestLine, estado: 'leido', destinatario: recipient(BIG, skewed(RECIPIENTS_PER_CLIENT)) }),
  ],
  ['client + estado + destinatario', () => ({ ...base(), estado: 'leido', destinatario: recipient(BIG, skewed(RECIPIENTS_PER_CLIENT)) })],
  [
    'client + estado + 7 days',
    () => {
      const d = weekStart();
      return { ...base(), estado: 'error', desde: d, hasta: d + 7 * DAY };
    },
  ],
  ['client only, page 20', () => ({ ...base(), page: 20 })],
];

const ms = (ns) => Number(ns) / 1e6;
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  return { p50: q(0.5), p95: q(0.95), max: s[s.length - 1] };
}

const PANEL_TOKEN = 'bench-panel-operator-token-0123456789abcdef';
/** The pages figure 14 times, all of the busiest client (an operator session acts for it). */
const PANEL_PAGES = [
  ['history page', `/panel/c/${clienteId(BIG)}/historial`],
  ['history page, estado=error', `/panel/c/${clienteId(BIG)}/historial?estado=error`],
  ['history page, one line', `/panel/c/${clienteId(BIG)}/historial?celular_id=${busiestLine}`],
  ['history page, destinatario', `/panel/c/${clienteId(BIG)}/historial?destinatario=${frequentRecipient}`],
  ['webhook page (deliveries)', `/panel/c/${clienteId(BIG)}/webhook`],
  ['deliveries fragment (polled)', `/panel/c/${clienteId(BIG)}/webhook/entregas`],
];

/**
 * The pages figure 15 times (the operator's overview and charts, a message's
 * page), served at the fixture's last minute so their windows hold its
 * newest messages. A page marked optional that answers 404 (the message page,
 * built on another branch) is skipped with a note.
 */
const CHART_PAGES = [
  ['overview', '/panel/'],
  ['charts, last hour', '/panel/graficas'],
  ['charts, 7 days', '/panel/graficas?rango=7d'],
  ['charts, one client, 24 h', `/panel/graficas?rango=24h&cliente_id=${clienteId(BIG)}`],
  ["charts, a client's line, 7 days", `/panel/c/${clienteId(BIG)}/graficas?rango=7d&celular_id=${busiestLine}`],
  ['message page', `/panel/c/${clienteId(BIG)}/mensajes/{msg_id}`, true],
];

/** Serves the store in `dir` with `serve` in-process (no pruning, so the fixture's old events stay), signed in as the operator. */
async function servePanel(dir, at) {
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  const s = await startServer({
    ...SERVE_DEFAULTS,
    port: 0,
    host: '127.0.0.1',
    dataDir: dir,
    logLevel: 'error',
    logStream: quiet,
    adminToken: PANEL_TOKEN,
    eventPruneIntervalMs: 0,
    inboxPurgeIntervalMs: 0,
    ...(at === undefined ? {} : { clock: new ManualClock(at), background: 'inline' }),
  });
  // The start's chart pass (samples, then pruning chart rows past their keeping) is done before any timing.
  await s.charts.run();
  const login = await s.app.inject({
    method: 'POST',
    url: '/panel/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `credencial=${encodeURIComponent(PANEL_TOKEN)}`,
  });
  const session = login.cookies.find((c) => c.name === 'pasarela_panel');
  if (login.statusCode !== 303 || !session) throw new Error(`panel sign-in: ${login.statusCode} ${login.payload.slice(0, 300)}`);
  // The newest message of the busiest client, for a message's page.
  const newest = await s.core.store.listMensajes({ cliente_id: clienteId(BIG), page: 1, por_pagina: 1, sinTotal: true });
  return { s, cookie: `pasarela_panel=${session.value}`, msgId: newest.rows[0]?.msg_id ?? 'none' };
}

/**
 * Times each panel page through the app (inject: server time, no socket) on
 * the stores in `dirs`, all served at once and asked in turn, request by
 * request (the order alternating): a store timed after another would meet
 * another heap and another moment of a shared machine, and at 1-5 ms a p95 is
 * that much noise. One result list per store. `at`: the servers' clock (a
 * manual one, background inline), else the system's.
 *
 * A request that a garbage collection paused is left out of the p95 and
 * counted apart (`gc_paused`). The collector is the process's, not the
 * store's: a scavenge (3-5 ms here, one every 30-odd requests) falls on
 * whichever request crosses the young generation's limit, and the requests
 * alternate in a fixed cycle, so it can fall on one store's requests again
 * and again for a whole page (seen: 13 of 200 on the 1M store, 0 on the other).
 */
async function timePanel(dirs, pages = PANEL_PAGES, at = undefined) {
  const served = [];
  const collections = [];
  const gc = new PerformanceObserver((list) => collections.push(...list.getEntries()));
  gc.observe({ entryTypes: ['gc'] });
  try {
    for (const dir of dirs) served.push(await servePanel(dir, at));
    const outs = served.map(() => []);
    for (const [page, pattern, optional] of pages) {
      const gets = served.map(({ s, cookie, msgId }) => {
        const url = pattern.replace('{msg_id}', msgId);
        return {
          url,
          get: async () => {
            const r = await s.app.inject({ method: 'GET', url, headers: { cookie } });
            if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.payload.slice(0, 300)}`);
            return r;
          },
          probe: () => s.app.inject({ method: 'GET', url, headers: { cookie } }),
        };
      });
      if (optional && (await Promise.all(gets.map((g) => g.probe()))).some((r) => r.statusCode === 404)) {
        process.stderr.write(`${page} answers 404 on this build: skipped\n`);
        gets.forEach((g, k) => outs[k].push({ page, url: g.url, skipped: 'answers 404 on this build' }));
        continue;
      }
      for (let i = 0; i < 5; i += 1) for (const g of gets) await g.get();
      const samples = gets.map(() => []);
      const rows = gets.map(() => 0);
      for (let i = 0; i < PANEL_RUNS; i += 1) {
        for (let j = 0; j < gets.length; j += 1) {
          const k = i % 2 === 0 ? j : gets.length - 1 - j;
          const t = performance.now();
          const r = await gets[k].get();
          samples[k].push([t, performance.now()]);
          rows[k] = (r.payload.match(/<tr>/g) ?? []).length - 1;
        }
      }
      const paused = await pausedBy(collections);
      gets.forEach((g, k) => {
        const all = samples[k].map(([t0, t1]) => t1 - t0);
        const kept = samples[k].filter(([t0, t1]) => !paused(t0, t1)).map(([t0, t1]) => t1 - t0);
        // Every request too (`ms_all`): a store whose pages allocate more would show it in `gc_paused` and there.
        const ms = kept.length > 0 ? stats(kept) : stats(all);
        outs[k].push({ page, url: g.url, runs: PANEL_RUNS, gc_paused: PANEL_RUNS - kept.length, rows_shown: Math.max(0, rows[k]), ms, ms_all: stats(all) });
      });
    }
    return outs;
  } finally {
    gc.disconnect();
    for (const { s } of served) await s.close();
  }
}

/** Whether a collection in `entries` overlapped [t0, t1] (performance.now() times); awaits the observer's queued entries first. */
async function pausedBy(entries) {
  await new Promise((resolve) => setTimeout(resolve, 0));
  return (t0, t1) => entries.some((e) => e.startTime < t1 && e.startTime + e.duration > t0);
}

/** Figure 14: each panel page on a 100-message store and on the big one; the ratio of their p95. */
async function panelFigure(bigDir) {
  const smallDir = mkdtempSync(join(tmpdir(), 'pasarela-bench-small-'));
  const chartsSmallDir = mkdtempSync(join(tmpdir(), 'pasarela-bench-small-charts-'));
  const chartsBigDir = mkdtempSync(join(tmpdir(), 'pasarela-bench-big-charts-'));
  try {
    const small = openSqliteStore(join(smallDir, 'pasarela.db'));
    // All of them the busiest client's, so its first pages are full on both stores.
    fill(small, { rows: SMALL_ROWS, shares: [1, 0, 0] });
    await small.close();
    // Figure 15 asks what history costs a chart: both of its stores hold the same 100 messages in the
    // last day, so every window draws the same bars; the big one holds 1,000,000 more before the last
    // week (what a window holds is another question: a full week is timed alone, on the big store).
    const RECENT = { rows: SMALL_ROWS, shares: [1, 0, 0], from: END - DAY, accounts: false, seedAt: 15 };
    const smallCharts = openSqliteStore(join(chartsSmallDir, 'pasarela.db'));
    fill(smallCharts, { rows: 0 });
    fill(smallCharts, RECENT);
    await smallCharts.close();
    process.stderr.write(`figure 15: filling ${ROWS.toLocaleString('en')} messages before the last week...\n`);
    const bigCharts = openSqliteStore(join(chartsBigDir, 'pasarela.db'));
    fill(bigCharts, { to: END - 8 * DAY });
    fill(bigCharts, RECENT);
    await bigCharts.close();
    process.stderr.write(`overview, charts and message pages (figure 15) on ${SMALL_ROWS} and ${ROWS.toLocaleString('en')} + ${SMALL_ROWS} messages...\n`);
    const [chartsSmall, chartsBig] = await timePanel([chartsSmallDir, chartsBigDir], CHART_PAGES, END - 60_000);
    // A week of full bars, every hour of the 90-day store's: what the fullest window costs (no ratio).
    // Before figure 14: served on the system's clock, its start prunes the fixture's chart rows (months old by then).
    const [fullWeek] = await timePanel(
      [bigDir],
      CHART_PAGES.filter(([, u]) => u.includes('rango=7d')),
      END - 60_000,
    );
    process.stderr.write(`panel pages on ${SMALL_ROWS} and ${ROWS.toLocaleString('en')} messages, in turn...\n`);
    const [onSmall, onBig] = await timePanel([smallDir, bigDir]);
    const chartPages = chartsBig.map((b, i) => {
      const sm = chartsSmall[i];
      if (b.skipped || sm.skipped) return { page: b.page, url: b.url, skipped: b.skipped ?? sm.skipped };
      return {
        page: b.page,
        url: b.url,
        small: { rows_shown: sm.rows_shown, gc_paused: sm.gc_paused, ms: sm.ms, ms_all: sm.ms_all },
        big: { rows_shown: b.rows_shown, gc_paused: b.gc_paused, ms: b.ms, ms_all: b.ms_all },
        ratio_p95: b.ms.p95 / sm.ms.p95,
      };
    });
    const timed = chartPages.filter((p) => !p.skipped);
    const worstChart = timed.reduce((a, b) => (b.ratio_p95 > a.ratio_p95 ? b : a));
    const full_week = fullWeek.map((p) => ({ page: p.page, url: p.url, rows_shown: p.rows_shown, ms: p.ms }));
    const charts = { worst_ratio: worstChart.ratio_p95, worst_page: worstChart.page, target_ratio: PANEL_TARGET_RATIO, pages: chartPages, full_week };
    const pages = onBig.map((b, i) => ({
      page: b.page,
      url: b.url,
      small: { rows_shown: onSmall[i].rows_shown, gc_paused: onSmall[i].gc_paused, ms: onSmall[i].ms, ms_all: onSmall[i].ms_all },
      big: { rows_shown: b.rows_shown, gc_paused: b.gc_paused, ms: b.ms, ms_all: b.ms_all },
      ratio_p95: b.ms.p95 / onSmall[i].ms.p95,
      // The same page: as many rows rendered on both stores (a filter that matches 2 of 100 messages renders less, whatever the store).
      same_rows: b.rows_shown === onSmall[i].rows_shown,
    }));
    const comparable = pages.filter((p) => p.same_rows);
    const worst = (comparable.length > 0 ? comparable : pages).reduce((a, b) => (b.ratio_p95 > a.ratio_p95 ? b : a));
    return {
      small_rows: SMALL_ROWS,
      rows: ROWS,
      deliveries: Math.ceil(ROWS / MESSAGES_PER_DELIVERY),
      runs: PANEL_RUNS,
      target_ratio: PANEL_TARGET_RATIO,
      worst_ratio: worst.ratio_p95,
      worst_page: worst.page,
      pages,
      charts,
    };
  } finally {
    rmSync(smallDir, { recursive: true, force: true });
    rmSync(chartsSmallDir, { recursive: true, force: true });
    rmSync(chartsBigDir, { recursive: true, force: true });
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-bench-'));
  // serve's file name: the panel phase serves this same store.
  const file = join(dir, 'pasarela.db');
  const store = openSqliteStore(file);
  let closed = false;
  try {
    const schemaVersion = store.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get().v;
    const dropped = [...(MIGRATIONS.find((m) => m.version === WITHOUT)?.sql.matchAll(/CREATE INDEX (\w+)/g) ?? [])].map((m) => m[1]);
    for (const name of dropped) store.db.exec(`DROP INDEX ${name}`);
    if (dropped.length > 0) process.stderr.write(`without ${dropped.join(', ')}\n`);
    process.stderr.write(`filling ${ROWS.toLocaleString('en')} messages (schema v${schemaVersion})...\n`);
    const fillMs = fill(store);
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    const dbBytes = statSync(file).size;
    process.stderr.write(
      `filled in ${(fillMs / 1000).toFixed(1)} s (${Math.round(ROWS / (fillMs / 1000)).toLocaleString('en')} rows/s), ${(dbBytes / 1e6).toFixed(0)} MB\n`,
    );

    const results = [];
    for (const [name, make] of SCENARIOS) {
      // Warm up, then alternate the two measurements so both see the same cache.
      for (let i = 0; i < 5; i += 1) {
        const f = make(i);
        await store.listMensajes(f);
        pageOnly(store.db, f);
      }
      const withTotal = [];
      const pageOnlyMs = [];
      let totals = 0;
      let plan = { count: '', page: '' };
      for (let i = 0; i < RUNS; i += 1) {
        const f = make(i);
        let t = process.hrtime.bigint();
        const r = await store.listMensajes(f);
        withTotal.push(ms(process.hrtime.bigint() - t));
        totals += r.total;
        t = process.hrtime.bigint();
        const p = pageOnly(store.db, f);
        pageOnlyMs.push(ms(process.hrtime.bigint() - t));
        if (r.rows.length !== p.rows.length) throw new Error(`${name}: page sizes differ`);
        if (i === 0) {
          const params = { ...f, offset: 0, limit: POR_PAGINA };
          const explain = (sql) =>
            store.db
              .prepare(`EXPLAIN QUERY PLAN ${sql}`)
              .all(params)
              .map((x) => x.detail)
              .join('; ');
          plan = { count: explain(`SELECT COUNT(*) FROM mensajes WHERE ${p.where}`), page: explain(p.sql) };
        }
      }
      const w = stats(withTotal);
      const b = stats(pageOnlyMs);
      results.push({
        scenario: name,
        runs: RUNS,
        mean_total: Math.round(totals / RUNS),
        with_total_ms: w,
        page_only_ms: b,
        plan,
        meets_target: w.p95 <= TARGET_P95_MS,
      });
    }

    const f2 = (n) => n.toFixed(2).padStart(7);
    const lines = [
      `${'scenario'.padEnd(40)} ${'total'.padStart(8)} | page+total  p50     p95     max | page only  p50     p95     max`,
      ...results.map(
        (r) =>
          `${r.scenario.padEnd(40)} ${String(r.mean_total).padStart(8)} |         ${f2(r.with_total_ms.p50)} ${f2(r.with_total_ms.p95)} ${f2(r.with_total_ms.max)} |        ${f2(r.page_only_ms.p50)} ${f2(r.page_only_ms.p95)} ${f2(r.page_only_ms.max)}${r.meets_target ? '' : '  <-- over target'}`,
      ),
    ];
    console.log(`\n${ROWS.toLocaleString('en')} messages, ${CLIENTS} clients x ${LINES} lines, ${DAYS} days; ${RUNS} runs each; ms\n`);
    console.log(lines.join('\n'));
    console.log('\nplans (COUNT | page):');
    for (const r of results) console.log(`  ${r.scenario}: ${r.plan.count} | ${r.plan.page}`);
    const worst = Math.max(...results.map((r) => r.with_total_ms.p95));
    console.log(`\nworst p95 with total: ${worst.toFixed(2)} ms (target ${TARGET_P95_MS} ms): ${worst <= TARGET_P95_MS ? 'met' : 'MISSED'}`);

    let panel = null;
    if (PANEL && dropped.length === 0) {
      // The fixture's pendiente messages are ended first, so the served store's queue worker sits idle while pages are timed.
      store.db.prepare("UPDATE mensajes SET estado = 'error', error = 'bench fixture' WHERE estado = 'pendiente'").run();
      await store.close();
      closed = true;
      panel = await panelFigure(dir);
      const f = (n) => n.toFixed(2).padStart(7);
      console.log(`\npanel pages (figure 14), server time through the app, ms; ${SMALL_ROWS} vs ${ROWS.toLocaleString('en')} messages:`);
      const big = `${ROWS >= 1e6 ? `${ROWS / 1e6}M` : ROWS} msgs`;
      console.log(`${'page'.padEnd(32)} | ${`${SMALL_ROWS} msgs`.padEnd(9)} rows     p50     p95 | ${big.padEnd(9)} rows     p50     p95 | ratio p95`);
      for (const p of panel.pages) {
        console.log(
          `${p.page.padEnd(32)} | ${''.padEnd(9)} ${String(p.small.rows_shown).padStart(4)} ${f(p.small.ms.p50)} ${f(p.small.ms.p95)} | ${''.padEnd(9)} ${String(p.big.rows_shown).padStart(4)} ${f(p.big.ms.p50)} ${f(p.big.ms.p95)} | ${p.ratio_p95.toFixed(2)}${p.same_rows ? '' : ' (fewer rows on the small store)'}`,
        );
      }
      console.log(`worst ratio, pages showing as many rows on both: ${panel.worst_ratio.toFixed(2)} (${panel.worst_page}); target <= ${PANEL_TARGET_RATIO}`);
      console.log(
        `\noverview, charts, message page (figure 15), served at the fixture's last minute, ms (rows: table rows drawn); ${SMALL_ROWS} messages in the last day, alone and after ${ROWS.toLocaleString('en')} older ones:`,
      );
      for (const p of panel.charts.pages) {
        console.log(
          p.skipped
            ? `${p.page.padEnd(32)} | skipped: ${p.skipped}`
            : `${p.page.padEnd(32)} | ${String(p.small.rows_shown).padStart(4)} ${f(p.small.ms.p50)} ${f(p.small.ms.p95)} | ${String(p.big.rows_shown).padStart(4)} ${f(p.big.ms.p50)} ${f(p.big.ms.p95)} | ${p.ratio_p95.toFixed(2)}`,
        );
      }
      console.log(`worst ratio: ${panel.charts.worst_ratio.toFixed(2)} (${panel.charts.worst_page}); target <= ${PANEL_TARGET_RATIO}`);
      console.log('a week of full bars (the 90-day store, every hour sent in):');
      for (const p of panel.charts.full_week) console.log(`${p.page.padEnd(32)} | ${String(p.rows_shown).padStart(4)} ${f(p.ms.p50)} ${f(p.ms.p95)}`);
    }

    const out = {
      generated_at: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: cpus().length,
      rows: ROWS,
      clients: CLIENTS,
      lines_per_client: LINES,
      days: DAYS,
      por_pagina: POR_PAGINA,
      runs: RUNS,
      schema_version: schemaVersion,
      migrations: MIGRATIONS.map((m) => `${m.version}: ${m.name}`),
      fill_ms: Math.round(fillMs),
      db_bytes: dbBytes,
      target_p95_ms: TARGET_P95_MS,
      worst_p95_ms: worst,
      results,
      panel,
    };
    if (dropped.length > 0) return;
    const outFile = join(dirname(fileURLToPath(import.meta.url)), 'results', 'historial.json');
    mkdirSync(dirname(outFile), { recursive: true });
    writeFileSync(outFile, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${outFile}`);
  } finally {
    if (!closed) await store.close();
    if (KEEP) console.log(`kept ${file}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

await main();
