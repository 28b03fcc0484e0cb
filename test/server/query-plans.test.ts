import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { linkedLine, type Line } from './send-helpers.js';
import { startReceiver, type Receiver } from './webhook-helpers.js';
import { walkQueuePaths, walkReadPaths, walkSendPaths } from './plans-walk.js';

/**
 * Cost flat in history: every statement the service runs on a request or a
 * message (auth, accept, caps, dedupe, claim, send, receipts, journal, outbox,
 * deliveries, listeners, history, inbox) is served by an index. The test records every SQL text
 * the store prepares while a store holding many rows serves all of those
 * paths, then fails on any plan that scans a table. A statement allowed to
 * scan says why below, so a new one cannot slip in silently.
 */

/** Statements that may scan: run at start-up or by the operator, or reading a queue's head in rowid order. */
const ALLOWED: Array<{ sql: RegExp; why: string }> = [
  {
    sql: /FROM grupos WHERE conmutacion_s IS NOT NULL/,
    why: 'once per health pass: the pools with a failover wait, read whole through their partial index (D-175)',
  },
  {
    sql: /^SELECT COUNT\(\*\) AS n FROM celulares WHERE frenado = 1$/,
    why: 'metrics: braked lines, a scan of the partial index celulares_frenados (only braked lines)',
  },
  {
    sql: /^SELECT seq FROM eventos WHERE fecha >= \? ORDER BY seq LIMIT 1$/,
    why: "the event log's prune: from the log's head in rowid order to the first event young enough, past only what it removes (and pending deliveries older than the cut)",
  },
  { sql: /json_extract\(payload, '\$\.file'\)/, why: 'start-up only: which temp files pending messages still need' },
  { sql: /^SELECT \* FROM clientes ORDER BY id$/, why: 'operator: list every client' },
  { sql: /^SELECT version FROM schema_migrations|^SELECT MAX\(version\)/, why: 'start-up: a handful of rows' },
  {
    sql: /^UPDATE mensajes SET lease_until = NULL, cupo_at = NULL WHERE/,
    why: 'start-up: releases claims of the messages in the queue table (pending queued ones only)',
  },
  {
    sql: /^UPDATE eventos SET reclamo = NULL, reclamo_hasta = NULL WHERE reclamo_hasta IS NOT NULL$/,
    why: "start-up: releases the webhook deliveries' claims through the partial index of claimed deliveries",
  },
  {
    sql: /^SELECT cliente_id, MIN\(proximo_intento_at\) AS next_at FROM eventos WHERE entrega = 'pendiente' GROUP BY cliente_id$/,
    why: 'at start and every webhook poll: when each client next has a delivery due, from the partial index of pending deliveries (the backlog, never the history)',
  },
  {
    sql: /^SELECT COUNT\(\*\) AS n FROM cola$/,
    why: "metrics, at most once per cache period: the queue's depth, counted in the queue table (pending queued messages, never the history)",
  },
  {
    sql: /^SELECT COUNT\(\*\) AS pending, COALESCE\(SUM\(proximo_intento_at <= \?\), 0\) AS due FROM eventos WHERE entrega = 'pendiente'$/,
    why: 'metrics, at most once per cache period: the outbox backlog, counted in the partial index of pending deliveries',
  },
  {
    sql: /^SELECT estado, last_status, COUNT\(\*\) AS n FROM celulares GROUP BY estado, last_status$/,
    why: 'metrics, at most once per cache period: lines by estado and session, a row per phone line (never a message)',
  },
];

const prepared = new Set<string>();
// eslint-disable-next-line @typescript-eslint/unbound-method -- the original, kept to restore the prototype and always called with .call(db)
const realPrepare = Database.prototype.prepare;
let s: TestServer;
let receiver: Receiver;
let a: Line;
let b: Line;

beforeAll(async () => {
  Database.prototype.prepare = function (this: Database.Database, sql: string) {
    prepared.add(sql.replace(/\s+/g, ' ').trim());
    return realPrepare.call(this, sql);
  } as typeof Database.prototype.prepare;
  receiver = await startReceiver(200);
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 }, simDeliveryMs: 10, simReadMs: 20 });
  a = await linkedLine(s, { saldo: 1000 });
  b = await linkedLine(s, { saldo: 1000 });
  seedHistory((s.core.store as SqliteStore).db, [a, b]);
});
afterAll(async () => {
  Database.prototype.prepare = realPrepare;
  await s?.stop();
  await receiver?.close();
});

/** 30,000 old messages over both lines in every state and mode, with their ledger rows and parked receipts; 10,000 old incoming ones. */
function seedHistory(db: Database.Database, lines: Line[]): void {
  const inbox = db.prepare(
    `INSERT INTO recibidos (cliente_id, celular_id, de, tipo, texto, media, gateway_msg_id, fecha, created_at)
     VALUES (?, ?, ?, 'texto', 'viejo', NULL, ?, ?, ?)`,
  );
  const since = Date.now() - 80 * 86_400_000;
  db.transaction(() => {
    for (let i = 0; i < 10_000; i++) {
      const line = lines[i % lines.length]!;
      const t = since + i * 600;
      inbox.run(line.clienteId, line.celularId, `5255${String(20_000_000 + (i % 700))}`, `IN${i}`, t - 1000, t);
    }
  })();
  const estados = ['enviado', 'entregado', 'leido', 'error', 'pendiente'];
  const insert = db.prepare(
    `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, cobrado, intentos, created_at, enviado_at, cupo_at, gateway_msg_id)
     VALUES (?, ?, ?, ?, 'texto', ?, ?, 'viejo', 1, 1, ?, ?, ?, ?)`,
  );
  const mov = db.prepare(
    "INSERT INTO movimientos_saldo (fecha, cliente_id, celular_id, monto, saldo_resultante, motivo, actor) VALUES (?, ?, ?, -1, 0, 'envio ' || ?, 'sistema')",
  );
  const start = Date.now() - 90 * 86_400_000;
  db.transaction(() => {
    for (let i = 0; i < 30_000; i++) {
      const line = lines[i % lines.length]!;
      const estado = estados[i % estados.length]!;
      const t = start + i * 200;
      const sent = estado === 'pendiente' || estado === 'error' ? null : t + 50;
      insert.run(
        `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        line.clienteId,
        line.celularId,
        `5255${String(10_000_000 + (i % 5000))}`,
        // Old history holds no queued message still pending; a direct one left pending by a crash, perhaps.
        i % 3 === 0 || estado === 'pendiente' ? 'directo' : 'cola',
        estado,
        t,
        sent,
        sent,
        sent === null ? null : `OLD${i}`,
      );
      mov.run(t, line.clienteId, line.celularId, `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    }
  })();
}

/** 20,000 Idempotency-Keys bound over the last two days, half of them expired: the purge and the look-ups must not scan them. */
async function seedKeys(db: Database.Database, line: Line): Promise<void> {
  const insert = db.prepare(
    `INSERT INTO idempotencia (cliente_id, clave, huella, msg_id, status, body, created_at, expira_at)
     VALUES (?, ?, 'h', ?, 200, '{}', ?, ?)`,
  );
  const start = Date.now() - 2 * 86_400_000;
  db.transaction(() => {
    for (let i = 0; i < 20_000; i++) {
      const t = start + i * 8_640;
      insert.run(line.clienteId + (i % 3), `viejo-${i}`, `00000000-0000-4000-9000-${String(i).padStart(12, '0')}`, t, t + 86_400_000);
    }
  })();
}

it('serves every per-request and per-message path with an index, on a store with 30,000 messages', async () => {
  await api(s.url, 'POST', '/api/webhook.php', { key: a.clientKey, json: { url: `${receiver.url}/hooks`, secret: 'plan-secret-0123456789abcdef' } });
  await seedKeys((s.core.store as SqliteStore).db, a);
  const sent = await walkSendPaths(s, a, b);
  await walkReadPaths(s, a, b, receiver, sent, { waitMs: 15_000 });
  await walkQueuePaths(s, a, b);

  const db = (s.core.store as SqliteStore).db;
  const scans: string[] = [];
  // The statements of the inbox's count triggers run inside every insert and purge, never prepared on their own: each, with NEW and OLD as parameters.
  const triggers = (
    realPrepare.call(db, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'recibidos'") as Database.Statement
  ).all() as Array<{ sql: string }>;
  expect(triggers).toHaveLength(2);
  for (const t of triggers) {
    const body = /\bBEGIN\b([\s\S]*)\bEND\s*$/.exec(t.sql)![1]!;
    for (const statement of body
      .split(';')
      .map((x) => x.trim())
      .filter(Boolean))
      prepared.add(statement.replace(/\b(NEW|OLD)\.\w+/g, '?').replace(/\s+/g, ' '));
  }
  for (const sql of prepared) {
    if (!/^(SELECT|INSERT|UPDATE|DELETE|WITH)/i.test(sql) || ALLOWED.some((x) => x.sql.test(sql))) continue;
    const names = [...new Set(sql.match(/[@:$][A-Za-z_]\w*/g) ?? [])].map((n) => n.slice(1));
    const positional = (sql.match(/\?/g) ?? []).length;
    const plan = realPrepare.call(db, `EXPLAIN QUERY PLAN ${sql}`);
    const params: unknown[] = names.length > 0 ? [Object.fromEntries(names.map((n) => [n, null]))] : Array<null>(positional).fill(null);
    const rows = (plan.all.bind(plan) as (...p: unknown[]) => Array<{ detail: string }>)(...params);
    for (const r of rows) {
      // A scan of a table (or of a whole index of it); CTE and subquery scans name no table of ours, nor does json_each (a
      // statement's own list parameter, as the deliveries a claim skips). cola_lineas holds a row per line with a queue (D-180).
      const m = /^SCAN (\w+)/.exec(r.detail);
      if (m && !/^(lineas|CONSTANT|json_each|cola_lineas$)/.test(m[1]!)) scans.push(`${r.detail}  <-  ${sql}`);
      // An audit page filtered by client or action reads the index that leads with them (never the whole trail's ids).
      for (const col of ['cliente_id', 'accion']) {
        if (/^SEARCH auditoria /.test(r.detail) && new RegExp(`\\b${col} = `).test(sql) && !r.detail.includes(`${col}=?`))
          scans.push(`${r.detail}  <-  ${sql}`);
      }
      if (/auditoria/.test(sql) && /TEMP B-TREE/.test(r.detail)) scans.push(`${r.detail}  <-  ${sql}`);
      // A recipient's older queued messages are one seek of each half of the recipient index, never a read of the line's queue (D-181, D-186).
      if (/ o\.destinatario = /.test(sql) && /^SEARCH o /.test(r.detail) && !/cola_destino(_programados)? \(celular_id=\? AND destinatario=\?/.test(r.detail))
        scans.push(`${r.detail}  <-  ${sql}`);
      // An inbox page is read in its order from its index, never sorted (a deep page would sort the whole range).
      if (/recibidos/.test(sql) && /TEMP B-TREE/.test(r.detail)) scans.push(`${r.detail}  <-  ${sql}`);
      // An inbox total is read from the kept counts; only a sender's (one conversation) is counted over its rows.
      if (/^SELECT COUNT\(\*\) AS total FROM recibidos/.test(sql) && !/\bde = /.test(sql)) scans.push(`a total counted over the inbox's rows  <-  ${sql}`);
      // A ledger page is read in its order from its index, never sorted; a month's consumption reads each line's range of its dates.
      if (/movimientos_saldo/.test(sql) && /TEMP B-TREE/.test(r.detail)) scans.push(`${r.detail}  <-  ${sql}`);
      if (
        /^SEARCH m USING/.test(r.detail) &&
        /FROM celulares c LEFT JOIN mensajes m/.test(sql) &&
        !r.detail.includes('celular_id=? AND created_at>? AND created_at<?')
      )
        scans.push(`${r.detail}  <-  ${sql}`);
      // And through the index of all its filters: one of the client alone would read all of the client's days.
      for (const col of ['celular_id', 'de']) {
        if (/^SEARCH recibidos /.test(r.detail) && new RegExp(`\\b${col} = `).test(sql) && !r.detail.includes(`${col}=?`))
          scans.push(`${r.detail}  <-  ${sql}`);
      }
    }
  }
  expect(prepared.size).toBeGreaterThan(40);
  // The key's look-up, binding, purge, answer and release all ran.
  expect([...prepared].filter((x) => /idempotencia/.test(x) && !/^INSERT INTO idempotencia .* VALUES \(\?, \?, 'h'/.test(x))).toHaveLength(6);
  // Every inbox statement ran: the insert, the total and the page of each of the 8 filter combinations above, the purge.
  // Totals: kept per line (client, line) and per line and quarter hour (client, line, with dates), counted for a sender;
  // and the 5 statements of the count triggers.
  const inbox = [...prepared].filter((x) => /recibidos/.test(x) && !/^INSERT INTO recibidos .* VALUES \(\?, \?, \?, 'texto', 'viejo'/.test(x));
  expect(inbox).toHaveLength(1 + 2 * 8 + 1 + 5);
  expect(inbox.filter((x) => /^SELECT .* FROM conteos_recibidos /.test(x))).toHaveLength(2);
  expect(inbox.filter((x) => /^SELECT .* FROM conteos_recibidos_cuartos /.test(x))).toHaveLength(2);
  // Every ledger statement ran: the page and its bounded total for each index's filters, the export's keyset pages.
  const ledger = [...prepared].filter((x) => /FROM movimientos_saldo INDEXED BY/.test(x));
  expect(new Set(ledger.map((x) => /INDEXED BY (\w+)/.exec(x)![1]))).toEqual(
    new Set(['movimientos_cliente_fecha', 'movimientos_celular_fecha', 'movimientos_reembolsos', 'movimientos_manuales']),
  );
  expect(ledger.some((x) => /\(fecha, id\) < /.test(x))).toBe(true);
  expect(scans).toEqual([]);
  // A message's story reads its ledger rows and deliveries through the indexes by its id, not the client's (which would read its history).
  const story = (re: RegExp, index: string) => {
    const sql = [...prepared].find((x) => re.test(x));
    expect(sql, String(re)).toBeDefined();
    const plan = realPrepare.call(db, `EXPLAIN QUERY PLAN ${sql}`);
    const detail = (plan.all.bind(plan) as (...p: unknown[]) => Array<{ detail: string }>)(...Array<null>((sql!.match(/\?/g) ?? []).length).fill(null));
    expect(detail.map((d) => d.detail).join(' | ')).toMatch(new RegExp(`^SEARCH \\w+ USING INDEX ${index} `));
  };
  story(/FROM movimientos_saldo WHERE motivo IN/, 'movimientos_motivo');
  story(/FROM eventos INDEXED BY eventos_mensaje/, 'eventos_mensaje');
  story(/FROM webhook_intentos WHERE entrega_id = \? ORDER BY n LIMIT/, 'webhook_intentos_entrega');
});
