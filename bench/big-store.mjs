// The 1,000,000-message store of figure 3b (bench/run.mjs), cached under
// bench/.cache/ (gitignored) so that only the first run pays for it.
//
// Built the way a long-lived deployment would look, not through a fixture
// schema: `pasarela serve` starts once on an empty data directory (all
// migrations applied, as always), the bench client and its lines are created
// and linked through the API (the simulator keeps the sessions in the store,
// so they stay linked across restarts), serve stops, and the history is
// inserted straight into `mensajes` (and the balance ledger) with
// better-sqlite3, using only columns the current schema has. Then the
// directory is moved into the cache; each run copies it to a temp directory.
//
// The history (90 days, ending two hours before the build) sits mostly on the
// very lines the figure sends from: 60% on the bench client's lines, 40% on
// another client's. States are spread as old history has them: about 55%
// leido, 25% entregado, 10% enviado, 5% error, 5% pendiente; 30% of the sent
// ones went directo. Of the pendiente rows, 90% are queued messages waiting
// for a retry far in the future (a backlog the queue worker sees at every
// look but never sends during the run) and 10% are directo sends left
// pendiente (a crash mid-send). The line's queue-depth counter is set to
// match; the charts' rows past their kept windows are pruned, as the
// upkeep of a store served all along would have. Not seeded: the simulator's own idempotency memory (kv sim.sent) and
// the webhook outbox (no webhook is configured in this figure).
//
// The cache key is the row count, SEED_VERSION and a hash of the migrations
// in dist/: a schema change rebuilds the store.
import { createHash, randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const SEED_VERSION = 2;
const DAY = 86_400_000;
const DAYS = 90;
const BENCH_SHARE = 0.6;

// Deterministic pseudo-random numbers (mulberry32): every build makes the same mix.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function cacheKey(root, rows, lines) {
  const { MIGRATIONS } = await import(join(root, 'dist', 'store', 'sqlite', 'migrations.js'));
  const h = createHash('sha256')
    .update(JSON.stringify({ SEED_VERSION, rows, lines, m: MIGRATIONS.map((m) => [m.version, m.sql]) }))
    .digest('hex')
    .slice(0, 12);
  return `store-${rows}-${lines}l-${h}`;
}

/**
 * Returns { dir, meta, built } for a cached store of `rows` messages whose bench
 * client has `lines` linked lines; builds it first when missing (or `rebuild`).
 * `startServe(extra, dataDir)` and `setupClient(server, lines)` come from bench/lib/ (proc.mjs, http.mjs).
 */
export async function ensureBigStore({ root, cacheDir, rows, lines, rebuild, log, startServe, setupClient }) {
  const name = await cacheKey(root, rows, lines);
  const dir = join(cacheDir, name);
  if (!rebuild && existsSync(join(dir, 'meta.json'))) {
    return { dir, meta: JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')), built: false };
  }
  // One store at a time in the cache: older builds (another schema, another size) go.
  if (existsSync(cacheDir)) for (const d of readdirSync(cacheDir)) if (d.startsWith('store-')) rmSync(join(cacheDir, d), { recursive: true, force: true });
  const staging = join(cacheDir, `building-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const t0 = performance.now();
  log(`  building the ${rows.toLocaleString('en')}-message store in ${staging} (once; cached as ${name})...`);
  const s = await startServe(['--health-interval', '0'], staging);
  let bench;
  let other;
  try {
    bench = await setupClient(s, lines);
    other = await setupClient(s, 20);
  } finally {
    await s.stop();
  }
  const db = new Database(join(staging, 'pasarela.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const have = new Map(
    db
      .prepare('PRAGMA table_info(mensajes)')
      .all()
      .map((c) => [c.name, c]),
  );
  const end = Date.now() - 2 * 3_600_000;
  const start = end - DAYS * DAY;
  const rand = rng(0x9e3779b9);
  const recipient = (c, r) => `52${String(5500000000 + c * 1_000_000 + r * 37)}`;
  const skew = (n) => Math.min(n - 1, Math.floor(n * Math.pow(rand(), 2)));
  const TIPOS = ['texto', 'texto', 'texto', 'texto', 'texto', 'texto', 'imagen', 'documento', 'audio', 'video'];
  const row = (i) => {
    const created = Math.floor(start + (i * (end - start)) / rows);
    const mine = rand() < BENCH_SHARE;
    const cliente = mine ? bench.clienteId : other.clienteId;
    const celular = mine ? bench.lines[Math.floor(rand() * bench.lines.length)] : other.lines[skew(other.lines.length)];
    const destinatario = recipient(mine ? 0 : 1, skew(20_000));
    const tipo = TIPOS[Math.floor(rand() * TIPOS.length)];
    const x = rand();
    const estado = x < 0.05 ? 'pendiente' : x < 0.1 ? 'error' : x < 0.2 ? 'enviado' : x < 0.45 ? 'entregado' : 'leido';
    const modo = estado === 'pendiente' ? (rand() < 0.9 ? 'cola' : 'directo') : rand() < 0.3 ? 'directo' : 'cola';
    const sent = estado !== 'pendiente' && estado !== 'error';
    const msgId = randomUUID();
    const texto = tipo === 'texto' || rand() < 0.5 ? `Hola, su pedido ${i} está en camino. Gracias por su compra.` : null;
    const media = tipo === 'texto' ? null : JSON.stringify({ url: `https://cdn.example.com/f/${i}.bin` });
    const enviado = sent ? created + (modo === 'directo' ? 800 : 1000 + Math.floor(rand() * 600_000)) : null;
    const waiting = estado === 'pendiente' && modo === 'cola';
    return {
      msg_id: msgId,
      cliente_id: cliente,
      celular_id: celular,
      destinatario,
      tipo,
      modo,
      estado,
      texto,
      media,
      gateway_msg_id: sent ? `3EB0${msgId.replace(/-/g, '').slice(0, 20).toUpperCase()}` : null,
      error: estado === 'error' ? 'el número no tiene WhatsApp' : waiting ? 'session not connected' : null,
      cobrado: estado === 'error' ? 0 : 1,
      cargo: estado === 'error' ? null : 'global',
      payload: JSON.stringify({ texto: texto ?? undefined, url: media ? `https://cdn.example.com/f/${i}.bin` : undefined }),
      intentos: waiting ? 3 : sent || estado === 'error' ? 1 : 0,
      proximo_intento_at: waiting ? end + 365 * DAY : null,
      lease_until: null,
      expira_at: waiting ? end + 365 * DAY : modo === 'cola' ? created + DAY : null,
      created_at: created,
      enviado_at: enviado,
      // A sent message holds its slot in the line's caps from when it was sent (migration 8).
      cupo_at: enviado,
      entregado_at: estado === 'entregado' || estado === 'leido' ? enviado + 1000 : null,
      leido_at: estado === 'leido' ? enviado + 60_000 : null,
    };
  };
  const sample = row(0);
  const cols = Object.keys(sample).filter((k) => have.has(k));
  const missing = [...have.values()].filter((c) => c.notnull && c.dflt_value === null && !c.pk && !cols.includes(c.name)).map((c) => c.name);
  if (missing.length > 0) throw new Error(`mensajes has NOT NULL columns this seeder does not know: ${missing.join(', ')}`);
  const ins = db.prepare(`INSERT INTO mensajes (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`);
  const ledger = db.prepare(
    `INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor) VALUES (?, ?, NULL, -1, ?, ?, 'sistema')`,
  );
  const counts = {};
  let saldo = 1_000_000_000;
  const CHUNK = 100_000;
  for (let from = 0; from < rows; from += CHUNK) {
    db.transaction(() => {
      for (let i = from; i < Math.min(rows, from + CHUNK); i += 1) {
        const r = i === 0 ? sample : row(i);
        const args = {};
        for (const c of cols) args[c] = r[c];
        ins.run(args);
        if (r.cobrado) ledger.run(r.created_at, r.cliente_id, (saldo -= 1), `envio ${r.msg_id}`);
        const k = `${r.estado}/${r.modo}`;
        counts[k] = (counts[k] ?? 0) + 1;
      }
    })();
    log(`  ${Math.min(rows, from + CHUNK).toLocaleString('en')} rows (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  }
  if (
    have.has('pendientes') ||
    db
      .prepare('PRAGMA table_info(celulares)')
      .all()
      .some((c) => c.name === 'pendientes')
  ) {
    db.exec(
      `UPDATE celulares SET pendientes = (SELECT COUNT(*) FROM mensajes m WHERE m.celular_id = celulares.id AND m.estado = 'pendiente' AND m.modo = 'cola')`,
    );
  }
  // A schema that reads a message's changing state through side tables (D-74, migration 20) gets them filled from
  // the rows, as that migration fills them, so the backlog and the stranded direct sends are seen as on a real store.
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cola'").get()) {
    // Each queued message's next attempt beside its place (migration 29), when the schema keeps it there.
    const retry = db
      .prepare('PRAGMA table_info(cola)')
      .all()
      .some((c) => c.name === 'proximo_intento_at')
      ? ', proximo_intento_at'
      : '';
    db.exec(`
      INSERT INTO cola (msg_id, celular_id${retry}) SELECT msg_id, celular_id${retry} FROM mensajes WHERE estado = 'pendiente' AND modo = 'cola' ORDER BY rowid;
      INSERT INTO directos (msg_id, cupo_at) SELECT msg_id, cupo_at FROM mensajes WHERE estado = 'pendiente' AND modo = 'directo' AND cupo_at IS NOT NULL;
      INSERT INTO cupos (msg_id, celular_id, cupo_at) SELECT msg_id, celular_id, cupo_at FROM mensajes
        WHERE cupo_at > (SELECT MAX(cupo_at) FROM mensajes) - 2 * 86400000;
      INSERT INTO gateway_ids (gateway_msg_id, celular_id, msg_id) SELECT gateway_msg_id, celular_id, msg_id FROM mensajes WHERE gateway_msg_id IS NOT NULL;
    `);
  }
  // The charts' rows a deployment's upkeep would have pruned over those 90 days (core/charts/chart-samples.ts, every
  // 30 s): the inserts above wrote them all at once, and a store served for months has no such backlog to prune.
  const charts = await import(join(root, 'dist', 'core', 'charts', 'charts.js')).catch(() => null);
  if (charts?.CHART_MINUTES_KEPT_MS && charts?.CHART_KEPT_MS) {
    const before = end - charts.CHART_KEPT_MS;
    db.prepare('DELETE FROM conteos_lineas WHERE grano = 1 AND t < ?').run(Math.floor((end - charts.CHART_MINUTES_KEPT_MS) / 60_000));
    db.prepare('DELETE FROM conteos_lineas WHERE grano = 15 AND t < ?').run(Math.floor(before / 900_000));
    db.prepare('DELETE FROM conteos_horas WHERE hora < ?').run(Math.floor(before / 3_600_000));
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const meta = {
    rows,
    seed_version: SEED_VERSION,
    built_at: new Date().toISOString(),
    build_ms: Math.round(performance.now() - t0),
    db_bytes: statSync(join(staging, 'pasarela.db')).size,
    history: { from: new Date(start).toISOString(), to: new Date(end).toISOString() },
    by_estado_modo: counts,
    bench: { key: bench.key, clienteId: bench.clienteId, lines: bench.lines },
    other: { clienteId: other.clienteId, lines: other.lines.length },
  };
  writeFileSync(join(staging, 'meta.json'), `${JSON.stringify(meta, null, 2)}\n`);
  renameSync(staging, dir);
  log(`  built in ${(meta.build_ms / 1000).toFixed(0)} s, ${(meta.db_bytes / 1e6).toFixed(0)} MB`);
  return { dir, meta, built: true };
}

/** A private copy of the cached store for one run (the run writes to it). */
export function copyStore(dir, to) {
  cpSync(dir, to, { recursive: true });
  rmSync(join(to, 'meta.json'), { force: true });
}
