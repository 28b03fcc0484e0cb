#!/usr/bin/env node
// The scheduled-send scan's cost (issue 40, D-163): the queue worker's look and
// the send of what it finds, per message sent, with 1,000,000 scheduled
// messages waiting for their time (due in a week, spread over the lines, each to
// its own recipient) against an empty store. The store's queue path alone, no
// HTTP: each round accepts DUE queued messages on 50 lines, then drains them as
// the worker does (queueLook, claimQueued, markSent) until a look finds nothing
// due. A third SQLite store holds 1,000,000 messages already sent instead: the same depth of history without
// a backlog, so the backlog's own cost shows apart from the history's. The figure is the empty store's cost per message over the backlog's
// (target >= 0.9: the look follows the lines and the due messages, not the
// backlog). SQLite always; PostgreSQL with --postgres (a fresh schema). Figure 20 of bench/run.mjs.
//
// SQLite's three stores run in a process each (`--one-process`: all in this one, the first method).
//
//   npm run build && node bench/schedule-scan.mjs [--backlog 1000000] [--postgres] [--one-process]
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? def : Number(process.argv[i + 1]);
};
const BACKLOG = arg('--backlog', 1_000_000);
const LINES = 50;
const DUE = 500;
const ROUNDS = 15;
const WEEK = 7 * 86_400_000;

const { openSqliteStore } = await import(join(ROOT, 'dist/store/sqlite/store.js'));
const { slotClaim } = await import(join(ROOT, 'dist/core/sending/caps.js'));

async function setup(store) {
  const cli = await store.createCliente(
    { nombre: 'Bench', email: 'b@example.com', plan: 'medido', estado: 'activo', max_celulares: null, saldo_global: 1e12, key_hash: 'h' },
    1000,
  );
  const lines = [];
  for (let j = 0; j < LINES; j++) {
    const r = await store.insertCelular(
      {
        cliente_id: cli.id,
        numero: `5255${10_000_000 + j}`,
        nombre_interno: null,
        estado: 'activo',
        max_envios_por_minuto: 100000,
        max_envios_por_hora: 1000000,
        max_envios_por_dia: 10000000,
        hora_inicio_permitido: '00:00',
        hora_fin_permitido: '23:59',
        key_hash: 'k'.repeat(64),
        gateway_token_hash: String(j).padEnd(64, 'g'),
      },
      1000,
    );
    lines.push(r.celular);
  }
  return { cli, lines };
}

/**
 * The WAL of the bulk write checkpointed and truncated, as a serving store's checkpointer leaves it: otherwise every
 * read of the filled store looks its pages up in a WAL of hundreds of megabytes and the empty store's in none.
 */
function settle(db) {
  db.pragma('wal_checkpoint(TRUNCATE)');
}

/** `n` scheduled messages due at `at`, written straight to the store's tables (as many accepts would, faster). */
function sqliteBacklog(db, cli, lines, n, now, at) {
  db.exec('BEGIN');
  const ins = db.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?)
     INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, media, cobrado, cargo, payload, intentos,
       proximo_intento_at, expira_at, cupo_at, created_at, reintento_de, enviar_en)
     SELECT 'p-' || i, ?, ? + (i % ?), '5255' || (30000000 + i), 'texto', 'cola', 'pendiente', 'recordatorio', NULL, 1, 'global',
       '{"texto":"recordatorio"}', 0, ?, ? + 3600000, NULL, ?, NULL, ? FROM k`,
  );
  ins.run(n, cli.id, lines[0].id, LINES, at, at, now, at);
  db.prepare(
    `INSERT INTO cola (msg_id, celular_id, destinatario, proximo_intento_at, enviar_en)
     SELECT msg_id, celular_id, destinatario, enviar_en, enviar_en FROM mensajes WHERE msg_id LIKE 'p-%' ORDER BY rowid`,
  ).run();
  db.prepare('UPDATE celulares SET pendientes = pendientes + ? WHERE id = ?').run(n / LINES, lines[0].id);
  db.exec('COMMIT');
  settle(db);
}

/** `n` messages sent a day ago, out of the queue: the same history depth without a scheduled backlog (SQLite's third store). */
function sqliteHistory(db, cli, lines, n, now) {
  db.exec('BEGIN');
  db.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?)
     INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, media, cobrado, cargo, payload, intentos,
       expira_at, created_at, enviado_at, gateway_msg_id)
     SELECT 'h-' || i, ?, ? + (i % ?), '5255' || (30000000 + i), 'texto', 'cola', 'enviado', 'recordatorio', NULL, 1, 'global',
       '{"texto":"recordatorio"}', 1, ? - 82800000, ? - 86400000, ? - 86400000, 'G-h-' || i FROM k`,
  ).run(n, cli.id, lines[0].id, LINES, now, now, now);
  db.exec('COMMIT');
  settle(db);
}

async function pgBacklog(store, cli, lines, n, now, at) {
  // The history's count triggers off for the load (a superuser's bench database): the look reads none of them.
  await store.db.tx(async (c) => {
    await c.query('SET LOCAL session_replication_role = replica');
    await c.query(
      `WITH m AS (INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, cargo, payload, intentos,
       proximo_intento_at, expira_at, created_at, enviar_en)
     SELECT 'p-' || i, $1, $2 + (i % $3), '5255' || (30000000 + i), 'texto', 'cola', 'pendiente', 'recordatorio', 1, 'global',
       '{"texto":"recordatorio"}', 0, $4::bigint, $4::bigint + 3600000, $5::bigint, $4::bigint FROM generate_series(0, $6 - 1) i RETURNING seq, msg_id, celular_id, destinatario, enviar_en)
     INSERT INTO mensajes_pendientes (seq, msg_id, celular_id, modo, destinatario, proximo_intento_at, enviar_en)
     SELECT seq, msg_id, celular_id, 'cola', destinatario, enviar_en, enviar_en FROM m`,
      [cli.id, lines[0].id, LINES, at, now, n],
    );
  });
  await store.db.q('ANALYZE mensajes_pendientes');
}

/** One round: DUE accepted now, then drained as the worker does; the drain's cost (ms: CPU for SQLite, wall for PostgreSQL) per message. */
async function round(store, cli, lines, now, tag, wall) {
  const accept = [];
  for (let i = 0; i < DUE; i++) {
    const celular_id = lines[i % LINES].id;
    const msg_id = `${tag}-${i}`;
    accept.push(
      store.acceptMensaje(
        {
          msg_id,
          cliente_id: cli.id,
          celular_id,
          destinatario: `5255${20_000_000 + i}`,
          tipo: 'texto',
          modo: 'cola',
          texto: 'su código es 123456',
          media: null,
          payload: { texto: 'su código es 123456' },
          expira_at: now + 3_600_000,
        },
        { charge: true, maxPending: null },
        now,
      ),
    );
  }
  await Promise.all(accept);
  const byId = new Map(lines.map((l) => [l.id, l]));
  const t0 = wall ? performance.now() : process.cpuUsage();
  let sent = 0;
  let lookMs = 0;
  for (;;) {
    const l0 = wall ? performance.now() : process.cpuUsage();
    const look = await store.queueLook(now);
    if (wall) lookMs += performance.now() - l0;
    else {
      const u = process.cpuUsage(l0);
      lookMs += (u.user + u.system) / 1000;
    }
    if (look.due.length === 0) break;
    await Promise.all(
      look.due.map(async (m) => {
        const r = await store.claimQueued(m.msg_id, slotClaim(byId.get(m.celular_id), now, 60_000), now, false, 'bench');
        if (!r.ok) throw new Error(`claim ${m.msg_id}: ${JSON.stringify(r)}`);
        await store.markSent(m.msg_id, `G-${m.msg_id}`, now);
        sent += 1;
      }),
    );
  }
  if (sent !== DUE) throw new Error(`drained ${sent} of ${DUE}`);
  const look = lookMs / sent;
  if (wall) return { all: (performance.now() - t0) / sent, look };
  const u = process.cpuUsage(t0);
  return { all: (u.user + u.system) / 1000 / sent, look };
}

async function measure(label, open, backlog, wall, history) {
  // The stores open at once and their rounds alternate, so a change in the machine's load falls on them alike.
  const stores = {};
  const now = Date.UTC(2026, 3, 1, 12);
  const fill = {
    backlog: (st, c, l) => backlog(st, c, l, BACKLOG, now, now + WEEK),
    ...(history ? { history: (st, c, l) => history(st, c, l, BACKLOG, now) } : {}),
  };
  for (const name of ['empty', ...Object.keys(fill)]) {
    const { store, close } = await open(name);
    const { cli, lines } = await setup(store);
    if (fill[name]) {
      const t = performance.now();
      await fill[name](store, cli, lines);
      console.error(`${label}: ${BACKLOG} ${name === 'history' ? 'sent' : 'scheduled'} messages written in ${Math.round(performance.now() - t)} ms`);
    }
    stores[name] = { store, close, cli, lines, costs: [] };
  }
  const names = Object.keys(stores);
  for (let r = 0; r < ROUNDS; r++)
    for (const name of r % 2 ? [...names].reverse() : names) {
      const s = stores[name];
      s.costs.push(await round(s.store, s.cli, s.lines, now + r * 1000, `${name}-${r}`, wall));
    }
  for (const s of Object.values(stores)) await s.close();
  return summarize(label, Object.fromEntries(Object.entries(stores).map(([name, s]) => [name, s.costs])), wall);
}

/** Each store's median round; the figure's line and numbers. */
function summarize(label, costs, wall) {
  const out = {};
  const median = (xs) => [...xs].sort((a, b) => a - b)[ROUNDS >> 1];
  for (const [name, cs] of Object.entries(costs)) out[name] = { all: median(cs.map((c) => c.all)), look: median(cs.map((c) => c.look)) };
  const ratio = out.empty.all / out.backlog.all;
  const lookRatio = out.empty.look / out.backlog.look;
  const us = (ms) => (ms * 1000).toFixed(0);
  console.log(
    `${label}: the look ${us(out.empty.look)} µs a message sent on an empty store, ${us(out.backlog.look)} µs with ${BACKLOG} scheduled waiting: ` +
      `ratio ${lookRatio.toFixed(2)}; the whole send path (look, claim, record) ${us(out.empty.all)} and ${us(out.backlog.all)} µs: ratio ` +
      `${ratio.toFixed(2)} (target >= 0.9; median of ${ROUNDS} rounds of ${DUE}; ${wall ? 'wall' : 'process CPU'})` +
      (out.history
        ? `; with ${BACKLOG} sent instead (history, no backlog) ${us(out.history.all)} µs: ratio ${(out.history.all / out.backlog.all).toFixed(2)}`
        : ''),
  );
  return {
    empty_us: out.empty.all * 1000,
    backlog_us: out.backlog.all * 1000,
    ratio,
    look_empty_us: out.empty.look * 1000,
    look_backlog_us: out.backlog.look * 1000,
    look_ratio: lookRatio,
    // The same depth of history, sent and out of the queue: what the scheduled backlog itself costs the drain.
    ...(out.history ? { history_us: out.history.all * 1000, ratio_to_history: out.history.all / out.backlog.all } : {}),
  };
}

/**
 * SQLite: each store in a process of its own, as a server has it (three stores in one process shared its CPU caches,
 * page caches and garbage collector, which charged the biggest store for the others: 0.82-0.86 in one process, 0.99
 * apart in the same hour); their rounds still alternate, so the machine's load falls on them alike.
 */
async function measureApart(dir) {
  const names = ['empty', 'backlog', 'history'];
  const kids = {};
  for (const name of names) {
    const kid = fork(fileURLToPath(import.meta.url), ['--store-child', name, '--dir', dir, '--backlog', String(BACKLOG)]);
    const [m] = await once(kid, 'message');
    if (m.filled_ms !== undefined) console.error(`SQLite: ${BACKLOG} ${name === 'history' ? 'sent' : 'scheduled'} messages written in ${m.filled_ms} ms`);
    kids[name] = { kid, costs: [] };
  }
  try {
    for (let r = 0; r < ROUNDS; r++)
      for (const name of r % 2 ? [...names].reverse() : names) {
        kids[name].kid.send({ round: r });
        const [m] = await once(kids[name].kid, 'message');
        kids[name].costs.push(m.cost);
      }
  } finally {
    for (const { kid } of Object.values(kids)) kid.kill();
  }
  return summarize('SQLite', Object.fromEntries(names.map((n) => [n, kids[n].costs])), false);
}

/** A store's own process: fills it, then runs each round it is sent, answering the round's cost. */
async function storeChild(name, dir) {
  const store = openSqliteStore(join(dir, `${name}.db`));
  const { cli, lines } = await setup(store);
  const now = Date.UTC(2026, 3, 1, 12);
  const t = performance.now();
  if (name === 'backlog') sqliteBacklog(store.db, cli, lines, BACKLOG, now, now + WEEK);
  if (name === 'history') sqliteHistory(store.db, cli, lines, BACKLOG, now);
  process.send(name === 'empty' ? {} : { filled_ms: Math.round(performance.now() - t) });
  process.on('message', async (m) => process.send({ cost: await round(store, cli, lines, now + m.round * 1000, `${name}-${m.round}`, false) }));
}

if (process.argv.includes('--store-child')) {
  await storeChild(process.argv[process.argv.indexOf('--store-child') + 1], process.argv[process.argv.indexOf('--dir') + 1]);
} else {
  await main();
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-schedule-scan-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const results = {
    sqlite: !process.argv.includes('--one-process')
      ? await measureApart(dir)
      : await measure(
          'SQLite',
          async (name) => {
            const store = openSqliteStore(join(dir, `${name}.db`));
            return { store, close: async () => store.close?.() };
          },
          async (store, cli, lines, n, now, at) => sqliteBacklog(store.db, cli, lines, n, now, at),
          false,
          async (store, cli, lines, n, now) => sqliteHistory(store.db, cli, lines, n, now),
        ),
  };
  if (process.argv.includes('--postgres')) {
    const { openPgStore } = await import(join(ROOT, 'dist/store/postgres/store.js'));
    const { postgresSchema } = await import('./lib/postgres.mjs');
    results.postgres = await measure(
      'PostgreSQL',
      async () => {
        const schema = await postgresSchema();
        const store = await openPgStore(schema.store);
        return {
          store,
          close: async () => {
            await store.close?.();
            await schema.drop?.();
          },
        };
      },
      pgBacklog,
      true,
    );
  }
  console.log(JSON.stringify(results));
}
