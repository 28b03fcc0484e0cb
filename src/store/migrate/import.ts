import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { Client, Queryable } from '../postgres/db.js';
import { copyIntoMedios, mediosRef } from '../postgres/media.js';
import { EVENT_PREFIX_KV } from '../../core/events/event-log.js';
import { slotsForgottenBefore } from '../../core/sending/caps.js';
import { CHART_KEPT_MS, CHART_MINUTES_KEPT_MS } from '../../core/charts/charts.js';
import { FILL_STATE_PATHS } from '../postgres/state-paths.js';

/**
 * Loading an SQLite store's rows into an empty PostgreSQL store, inside the
 * caller's transaction: every table in batches (memory stays bounded by a
 * batch, whatever the history holds), ids kept as they are (keys embed them),
 * the history counts filled by GROUP BY afterwards, and every identity
 * sequence set past the highest id SQLite ever gave.
 */

/** The tables copied, parents first (celulares refers to clientes and gateway_servidores). */
export const COPIED = [
  'clientes',
  'gateway_servidores',
  'celulares',
  // Pools of lines, their members, their lines seen down (D-173..D-175).
  'grupos',
  'grupo_celulares',
  'lineas_caidas',
  'auditoria',
  'movimientos_saldo',
  'mensajes',
  'webhooks',
  // The event log, deliveries included (D-69); its ids are the source's, with the source's prefix (kv).
  'eventos',
  'webhook_intentos',
  'acuses_pendientes',
  'entrantes_vistos',
  'kv',
  'idempotencia',
  'recibidos',
  // The engine's sealed state (D-116): it opens on the new store with the same key file.
  'motor_auth',
] as const;

/** Kept from mensajes and recibidos by triggers on both stores: counted again from the rows, never copied. */
export const DERIVED = ['conteos_mensajes', 'conteos_cuartos', 'conteos_lineas', 'conteos_horas', 'conteos_recibidos', 'conteos_recibidos_cuartos'] as const;

/** PostgreSQL's side tables of the messages' changing state (state-paths.ts), filled from mensajes by recount. */
export const STATE_PATHS = ['mensajes_pendientes', 'cupos', 'ids_gateway'] as const;

/** Each store's own bookkeeping. */
const OWN = new Set(['schema_migrations', 'sqlite_sequence']);

/**
 * Known and never copied: a `webhook listen` lease belongs to the process
 * that renews it against the old server; its listener registers again.
 * The charts' samples (D-101) were the old server's nodes' readings. The
 * lines' failure counts (salud_fallos, D-169) are an hour's window: it starts again.
 */
export const LEFT_BEHIND = ['webhook_escuchas', 'muestras', 'salud_fallos'] as const;

/** The triggers that keep the counts on every insert (one upsert per row), off while loading: table and trigger. */
const COUNT_TRIGGERS = [
  ['mensajes', 'conteos_insert'],
  ['recibidos', 'conteos_recibidos_insert'],
] as const;

/** Rows per INSERT: one array parameter per column, so the statement is the same for every batch. */
const BATCH = 5000;

interface Column {
  name: string;
  /** The PostgreSQL type of the array parameter (int8, int4, text, bool). */
  udt: string;
  /** What is read from SQLite: the same column, or the rowid for PostgreSQL's arrival order. */
  source: string;
}

/** Tables of the SQLite store this copy does not know: refused rather than silently left behind. */
export function unknownTables(src: Database.Database): string[] {
  const known = new Set<string>([...COPIED, ...DERIVED, ...OWN, ...LEFT_BEHIND]);
  return (src.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string }>)
    .map((r) => r.name)
    .filter((n) => !known.has(n));
}

/**
 * Columns to copy, matched by name. PostgreSQL's `seq` of a table SQLite
 * orders by rowid takes the rowid; a column only one side has, and that
 * PostgreSQL cannot default, means the two schemas have drifted apart.
 */
async function columnsOf(c: Client, src: Database.Database, table: string): Promise<Column[]> {
  const lite = new Set((src.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((r) => r.name));
  const pg = (
    await c.query(
      `SELECT column_name AS name, udt_name AS udt, (column_default IS NOT NULL OR is_identity = 'YES') AS defaulted
       FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
      [table],
    )
  ).rows as Array<{ name: string; udt: string; defaulted: boolean }>;
  const cols: Column[] = [];
  for (const p of pg) {
    if (lite.has(p.name)) cols.push({ name: p.name, udt: p.udt, source: p.name });
    else if (p.name === 'seq') cols.push({ name: p.name, udt: p.udt, source: 'rowid' });
    else if (!p.defaulted) throw new Error(`PostgreSQL's ${table}.${p.name} has no SQLite column to fill it`);
  }
  for (const name of lite) {
    if (!pg.some((p) => p.name === name)) throw new Error(`SQLite's ${table}.${name} has no PostgreSQL column to go to`);
  }
  return cols;
}

/** SQLite keeps flags as 0/1; a BOOLEAN column (the webhook's activo) takes true/false. */
function converter(udt: string): (v: unknown) => unknown {
  return udt === 'bool' ? (v) => (v === null ? null : v !== 0) : (v) => v;
}

/** A value the copy would change (a text SQLite holds as bytes that are not UTF-8, or with a NUL PostgreSQL cannot hold): nothing is committed. */
export class AlteredValue extends Error {}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Refuses a text the copy would alter. better-sqlite3 hands invalid UTF-8 over
 * with U+FFFD in place of each bad byte, so a text holding U+FFFD has its
 * stored bytes read again and checked; a real U+FFFD passes.
 */
function checkText(src: Database.Database, table: string, column: string, rowid: number, v: string): void {
  if (v.includes('\0')) throw new AlteredValue(`${table}.${column} of row ${rowid} holds a NUL character, which PostgreSQL text cannot hold`);
  if (!v.includes('\ufffd')) return;
  const raw = (src.prepare(`SELECT CAST(${column} AS BLOB) AS b FROM ${table} WHERE rowid = ?`).get(rowid) as { b: Buffer | null }).b;
  try {
    if (raw) UTF8.decode(raw);
  } catch {
    throw new AlteredValue(
      `${table}.${column} of row ${rowid} is not valid UTF-8 in SQLite (hex ${raw!.subarray(0, 32).toString('hex')}…): the copy would change it`,
    );
  }
}

/** Copies one table in rowid order, a batch per statement; returns the rows copied. */
export async function copyTable(c: Client, src: Database.Database, table: string): Promise<number> {
  const cols = await columnsOf(c, src, table);
  const read = src.prepare(`SELECT rowid, ${cols.map((k) => k.source).join(', ')} FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT ${BATCH}`).raw(true);
  const insert = `INSERT INTO ${table} (${cols.map((k) => k.name).join(', ')})
    SELECT * FROM unnest(${cols.map((k, i) => `$${i + 1}::${k.udt}[]`).join(', ')})`;
  const convert = cols.map((k) => converter(k.udt));
  let after = 0;
  let copied = 0;
  // One batch in flight while the next is read: PostgreSQL and this process work at the same time.
  let inFlight: Promise<unknown> = Promise.resolve();
  try {
    for (;;) {
      const batch = read.all(after) as unknown[][];
      if (batch.length === 0) break;
      for (const r of batch) {
        for (let i = 0; i < cols.length; i++) {
          const v = r[i + 1];
          if (typeof v === 'string') checkText(src, table, cols[i]!.source, r[0] as number, v);
        }
      }
      const arrays = cols.map((_, i) => batch.map((r) => convert[i]!(r[i + 1])));
      after = batch[batch.length - 1]![0] as number;
      copied += batch.length;
      await inFlight;
      inFlight = c.query(insert, arrays);
    }
  } finally {
    await inFlight;
  }
  return copied;
}

/**
 * The rows a migrated store holds before any use: the event-id prefix its
 * migration chose. The source's takes its place, so every event id (and
 * each attempt's reference to one) stays what it was.
 */
const OWN_ROW = `ns = '${EVENT_PREFIX_KV.ns}' AND key = '${EVENT_PREFIX_KV.key}'`;

/** Loads every table with the per-row count trigger off; the counts are filled once the rows are in. */
export async function loadAll(c: Client, src: Database.Database, onTable: (table: string, rows: number, ms: number) => void): Promise<void> {
  for (const [table, trigger] of COUNT_TRIGGERS) await c.query(`ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`);
  await c.query(`DELETE FROM kv WHERE ${OWN_ROW}`);
  for (const table of COPIED) {
    const t0 = performance.now();
    onTable(table, await copyTable(c, src, table), performance.now() - t0);
  }
  for (const [table, trigger] of COUNT_TRIGGERS) await c.query(`ALTER TABLE ${table} ENABLE TRIGGER ${trigger}`);
}

export interface Recount {
  conteos_mensajes: number;
  conteos_cuartos: number;
  conteos_lineas: number;
  conteos_horas: number;
  conteos_recibidos: number;
  conteos_recibidos_cuartos: number;
  /** Lines whose queue count SQLite kept differently from their pending rows (expected 0). */
  pendientes_corregidos: number;
}

/**
 * The history and inbox counts with one GROUP BY each, as SQLite's
 * migrations 9 and 15 filled them; and each line's queue count from its pending queued rows, which is
 * what the copied one must be anyway. The side tables of the messages' changing state
 * (state-paths.ts: pending messages, slots still counted at `now`, gateway ids) are filled too.
 */
export async function recount(c: Client, now: number): Promise<Recount> {
  for (const sql of FILL_STATE_PATHS) await c.query(sql, sql.includes('$1') ? [slotsForgottenBefore(now)] : []);
  const m = await c.query(
    `INSERT INTO conteos_mensajes (cliente_id, celular_id, estado, n)
     SELECT cliente_id, celular_id, estado, COUNT(*) FROM mensajes GROUP BY cliente_id, celular_id, estado`,
  );
  const q = await c.query(
    `INSERT INTO conteos_cuartos (cliente_id, cuarto, estado, n)
     SELECT cliente_id, created_at / 900000, estado, COUNT(*) FROM mensajes GROUP BY cliente_id, created_at / 900000, estado`,
  );
  // The charts' counts (D-100) of the windows they are kept for (core/charts/charts.ts), before `now`.
  const l = await c.query(
    `INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
     SELECT celular_id, g.grano, created_at / (g.grano * 60000), estado, COUNT(*), MIN(cliente_id)
     FROM mensajes CROSS JOIN (VALUES (1, $1::bigint), (15, $2::bigint)) g(grano, desde)
     WHERE created_at >= g.desde GROUP BY celular_id, g.grano, created_at / (g.grano * 60000), estado`,
    [now - CHART_MINUTES_KEPT_MS, now - CHART_KEPT_MS],
  );
  // Each client's hours (D-106), summed from the quarters just counted, whole hours of the kept window.
  const h = await c.query(
    `INSERT INTO conteos_horas (hora, cliente_id, estado, n)
     SELECT cuarto / 4, cliente_id, estado, SUM(n) FROM conteos_cuartos WHERE cuarto >= $1 GROUP BY cuarto / 4, cliente_id, estado`,
    [Math.floor((now - CHART_KEPT_MS) / 3_600_000) * 4],
  );
  const r = await c.query(
    `INSERT INTO conteos_recibidos (cliente_id, celular_id, n)
     SELECT cliente_id, celular_id, COUNT(*) FROM recibidos GROUP BY cliente_id, celular_id`,
  );
  const rq = await c.query(
    `INSERT INTO conteos_recibidos_cuartos (cliente_id, celular_id, cuarto, n)
     SELECT cliente_id, celular_id, created_at / 900000, COUNT(*) FROM recibidos GROUP BY cliente_id, celular_id, created_at / 900000`,
  );
  const p = await c.query(
    `WITH q AS (SELECT celular_id, COUNT(*) AS n FROM mensajes_pendientes WHERE modo = 'cola' GROUP BY celular_id)
     UPDATE celulares l SET pendientes = COALESCE(q.n, 0) FROM celulares x LEFT JOIN q ON q.celular_id = x.id
     WHERE l.id = x.id AND l.pendientes <> COALESCE(q.n, 0)`,
  );
  return {
    conteos_mensajes: m.rowCount ?? 0,
    conteos_cuartos: q.rowCount ?? 0,
    conteos_lineas: l.rowCount ?? 0,
    conteos_horas: h.rowCount ?? 0,
    conteos_recibidos: r.rowCount ?? 0,
    conteos_recibidos_cuartos: rq.rowCount ?? 0,
    pendientes_corregidos: p.rowCount ?? 0,
  };
}

/**
 * Every identity sequence past the highest id in its table and past the
 * highest SQLite ever gave (`sqlite_sequence`: AUTOINCREMENT never reuses a
 * deleted line's id, so an old key can never name a new line here either).
 */
export async function advanceSequences(c: Client, src: Database.Database): Promise<void> {
  const given = new Map((src.prepare('SELECT name, seq FROM sqlite_sequence').all() as Array<{ name: string; seq: number }>).map((r) => [r.name, r.seq]));
  const identities = (
    await c.query(
      `SELECT table_name AS t, column_name AS col FROM information_schema.columns
       WHERE table_schema = current_schema() AND is_identity = 'YES' AND table_name = ANY($1)`,
      [[...COPIED]],
    )
  ).rows as Array<{ t: string; col: string }>;
  for (const { t, col } of identities) {
    const max = ((await c.query(`SELECT MAX(${col}) AS m FROM ${t}`)).rows[0] as { m: number | null }).m ?? 0;
    const high = Math.max(max, given.get(t) ?? 0);
    if (high > 0) await c.query('SELECT setval(pg_get_serial_sequence($1, $2), $3)', [t, col, high]);
  }
}

/** Tables of the target that already hold rows: pasarela data the copy would mix with. */
export async function occupied(c: Queryable): Promise<string[]> {
  const full: string[] = [];
  for (const t of [...COPIED, ...DERIVED]) {
    // The store's own prefix is no data of anyone's.
    const others = t === 'kv' ? `kv WHERE NOT (${OWN_ROW})` : t;
    if ((await c.query(`SELECT 1 FROM ${others} LIMIT 1`)).rowCount) full.push(t);
  }
  return full;
}

/** `--replace`: empties every pasarela table of the target, in the copy's transaction. */
export async function emptyAll(c: Client): Promise<void> {
  // The store's own leases, queued media bytes and listeners go with the rows they belonged to.
  await c.query(`TRUNCATE ${[...COPIED, ...DERIVED, ...STATE_PATHS, ...LEFT_BEHIND, 'leases', 'medios'].join(', ')} RESTART IDENTITY`);
}

/**
 * The bytes of queued media messages, read from the source's local files
 * into `medios` in the copy's transaction, and the payload pointed at them:
 * any node of the new store can send them. Pending direct sends keep their
 * path: they are stranded and resolved without being sent. A file missing
 * here leaves its message to end as a send with a missing file would.
 */
export async function importQueuedMedia(c: Client, now: number): Promise<{ copied: number; missing: number }> {
  const { rows } = await c.query(
    // The pending side table is filled by recount, which runs first.
    `SELECT m.msg_id, m.payload::jsonb ->> 'file' AS file FROM mensajes_pendientes p JOIN mensajes m ON m.msg_id = p.msg_id
     WHERE p.modo = 'cola' AND m.payload::jsonb ->> 'file' IS NOT NULL`,
  );
  let copied = 0;
  let missing = 0;
  for (const r of rows as Array<{ msg_id: string; file: string }>) {
    if (!existsSync(r.file)) {
      missing += 1;
      continue;
    }
    try {
      await copyIntoMedios(c, r.msg_id, r.file, now);
    } catch (err) {
      // Gone since it was seen (a serve still running on the source ended its send): as missing.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      missing += 1;
      continue;
    }
    await c.query("UPDATE mensajes SET payload = jsonb_set(payload::jsonb, '{file}', to_jsonb($2::text))::text WHERE msg_id = $1", [
      r.msg_id,
      mediosRef(r.msg_id),
    ]);
    copied += 1;
  }
  return { copied, missing };
}
