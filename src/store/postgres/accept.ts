import { type AcceptItem, acceptTurn, keyOf, type TurnRead } from '../../core/sending/accept-turn.js';
import type { SlotCount } from '../../core/sending/caps.js';
import { messageStatusData } from '../../core/events/event-data.js';
import { IDEM_PURGE_BATCH } from '../../core/sending/idempotency.js';
import type { AcceptedMensaje, AcceptOptions, AcceptResult, NewMensaje } from '../../core/ports/messages.js';
import type { MensajeRow } from '../../core/ports/model.js';
import * as recipe from '../../core/billing/recipes.js';
import { settle, Turns } from '../../core/queue/turns.js';
import { AppError } from '../../core/api/errors.js';
import { arrays, type Client, type Db, LOCK, row } from './db.js';
import { COLS, colsOf } from './messages.js';
import { acceptedRow } from '../accepted-row.js';
import { EVENT_ROW_COLS, eventRow } from './webhooks.js';

/**
 * MessagesStore.acceptMensaje in PostgreSQL: sends accepted in turns (group
 * commit, core/queue/turns.ts) of two statements over arrays, READ (or PEEK,
 * unlocked) and WRITE, core deciding each send between them
 * (core/sending/accept-turn.ts). Their locks, the unlocked path and failures:
 * docs/store-locks.md "Acceptance".
 */

/**
 * The locks, then what core decides on. Parameters: the lock's class, the
 * keys (`cliente_id:clave`), the clients, the lines; the keys as (client,
 * key, now); the slot windows as (send's index, line, since, now), one a window.
 */
const READ = `WITH k AS MATERIALIZED (
    SELECT pg_advisory_xact_lock($1::int, h) FROM (SELECT DISTINCT hashtext(x) AS h FROM unnest($2::text[]) x) s ORDER BY h),
  cli AS MATERIALIZED (
    SELECT id, saldo_global FROM clientes WHERE id = ANY($3::bigint[]) AND (SELECT COUNT(*) FROM k) >= 0 ORDER BY id FOR NO KEY UPDATE),
  cel AS MATERIALIZED (
    SELECT id, cliente_id, saldo_actual, pendientes FROM celulares WHERE id = ANY($4::bigint[]) AND (SELECT COUNT(*) FROM cli) >= 0
    ORDER BY id FOR NO KEY UPDATE)
  SELECT (SELECT json_agg(cli) FROM cli) AS clientes,
    (SELECT json_agg(cel) FROM cel) AS celulares,
    CASE WHEN (SELECT COUNT(*) FROM cel) >= 0 AND cardinality($5::bigint[]) > 0 THEN claves_al_dia($5::bigint[], $6::text[], $7::bigint[]) END AS ligadas,
    CASE WHEN (SELECT COUNT(*) FROM cel) >= 0 THEN (
      SELECT json_agg(json_build_object('i', w.i, 'k', cupos_al_dia(w.celular_id, ARRAY[w.since], w.now) -> 0) ORDER BY w.o)
      FROM unnest($8::int[], $9::bigint[], $10::bigint[], $11::bigint[]) WITH ORDINALITY w(i, celular_id, since, now, o)) END AS cupos`;

/**
 * READ's clients and lines without locks or a transaction: the unlocked path's read (D-83). Parameters: the clients, the lines.
 * The arrays through a subquery the planner keeps (OFFSET 0): a custom plan that sees their length costs less than the generic
 * one, so PostgreSQL planned every call again (D-149).
 */
export const PEEK = `SELECT (SELECT json_agg(c) FROM (SELECT id, saldo_global FROM (SELECT $1::bigint[] AS ids OFFSET 0) a, clientes WHERE id = ANY(a.ids)) c) AS clientes,
    (SELECT json_agg(c) FROM (SELECT id, cliente_id, saldo_actual, pendientes FROM (SELECT $2::bigint[] AS ids OFFSET 0) a, celulares WHERE id = ANY(a.ids)) c) AS celulares`;

const IDEM_COLS = 'cliente_id, clave, huella, msg_id, status, body, created_at, expira_at';
const MOV_COLS = recipe.MOVEMENT_COLUMNS.join(', ');

/**
 * Everything a turn's accepted sends write, gated on the guard `ok`.
 * Parameters: the clients' new balances (ids, values), the lines' (ids,
 * saldo_actual, queue delta), the ledger rows, the messages in arrival order,
 * each message's event data (msg_id, data), the key bindings, now and the
 * purge's size (JSON record sets for rows); then the guard's, the clients and
 * lines as read (ids, balances; ids, clients, balances, queue lengths); the
 * messages' count. Returns the messages written: none when the guard missed.
 */
const WRITE = `WITH gcli AS MATERIALIZED (
    SELECT id, saldo_global FROM clientes WHERE id = ANY($13::bigint[]) ORDER BY id FOR NO KEY UPDATE),
  gcel AS MATERIALIZED (
    SELECT id, cliente_id, saldo_actual, pendientes FROM celulares WHERE id = ANY($15::bigint[]) AND (SELECT COUNT(*) FROM gcli) >= 0
    ORDER BY id FOR NO KEY UPDATE),
  ok AS MATERIALIZED (SELECT
    (SELECT COUNT(*) FROM gcli JOIN unnest($13::bigint[], $14::bigint[]) r(id, saldo) USING (id) WHERE gcli.saldo_global = r.saldo)
      = cardinality($13::bigint[])
    AND (SELECT COUNT(*) FROM gcel JOIN unnest($15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[]) r(id, cliente_id, saldo, pendientes)
      USING (id) WHERE gcel.cliente_id = r.cliente_id AND gcel.saldo_actual = r.saldo AND gcel.pendientes = r.pendientes)
      = cardinality($15::bigint[]) AS held),
  bal AS (
    UPDATE clientes c SET saldo_global = v.saldo FROM unnest($1::bigint[], $2::bigint[]) v(id, saldo) WHERE c.id = v.id AND (SELECT held FROM ok)),
  cel AS (
    UPDATE celulares c SET saldo_actual = v.saldo, pendientes = c.pendientes + v.d
    FROM unnest($3::bigint[], $4::bigint[], $5::int[]) v(id, saldo, d) WHERE c.id = v.id AND (SELECT held FROM ok)),
  mov AS (INSERT INTO movimientos_saldo (${MOV_COLS}) SELECT ${MOV_COLS} FROM json_populate_recordset(NULL::movimientos_saldo, $6::json)
    WHERE (SELECT held FROM ok)),
  -- The counts rows the inserts' trigger will take, one message at a time: taken first, lines then quarters then hours, each in order,
  -- so the turn never holds a quarter while it waits for a line's row (a send's record takes the line's, then the quarter's).
  lineas AS MATERIALIZED (SELECT 1 FROM conteos_mensajes k JOIN (SELECT DISTINCT cliente_id, celular_id FROM json_populate_recordset(NULL::mensajes, $7::json) LIMIT $19) r
    USING (cliente_id, celular_id) WHERE k.estado = 'pendiente' AND (SELECT held FROM ok) ORDER BY k.cliente_id, k.celular_id FOR UPDATE OF k),
  cuartos AS MATERIALIZED (SELECT 1 FROM conteos_cuartos k JOIN (SELECT DISTINCT cliente_id, created_at / 900000 AS cuarto FROM json_populate_recordset(NULL::mensajes, $7::json) LIMIT $19) r
    USING (cliente_id, cuarto) WHERE k.estado = 'pendiente' AND (SELECT COUNT(*) FROM lineas) >= 0 ORDER BY k.cliente_id, k.cuarto FOR UPDATE OF k),
  horas AS MATERIALIZED (SELECT 1 FROM conteos_horas k JOIN (SELECT DISTINCT cliente_id, created_at / 3600000 AS hora FROM json_populate_recordset(NULL::mensajes, $7::json) LIMIT $19) r
    USING (hora, cliente_id) WHERE k.estado = 'pendiente' AND (SELECT COUNT(*) FROM cuartos) >= 0 ORDER BY k.hora, k.cliente_id FOR UPDATE OF k),
  msg AS (
    INSERT INTO mensajes (${COLS}) SELECT ${colsOf('r')} FROM json_populate_recordset(NULL::mensajes, $7::json) WITH ORDINALITY r
    WHERE (SELECT COUNT(*) FROM horas) >= 0 AND (SELECT held FROM ok) ORDER BY r.ordinality RETURNING ${COLS}, seq),
  -- Its access paths (state-paths.ts): it is pending, and a direct send holds its slot from now.
  pend AS (INSERT INTO mensajes_pendientes (seq, msg_id, celular_id, modo, cupo_at, vence_at, destinatario, proximo_intento_at, enviar_en)
    SELECT seq, msg_id, celular_id, modo, cupo_at, vigencia_hasta, destinatario, enviar_en, enviar_en FROM msg),
  slot AS (INSERT INTO cupos (seq, celular_id, cupo_at) SELECT seq, celular_id, cupo_at FROM msg WHERE cupo_at IS NOT NULL),
  ev AS (INSERT INTO eventos (${EVENT_ROW_COLS})
    SELECT ${eventRow('s.cliente_id', 's.celular_id', `'message.status'`, 'd.data', 's.created_at', 's.created_at')}
    FROM msg s JOIN unnest($8::text[], $9::text[]) d(msg_id, data) ON d.msg_id = s.msg_id ORDER BY s.seq),
  -- A key's row left expired is taken over (READ saw none live).
  idem AS (INSERT INTO idempotencia (${IDEM_COLS}) SELECT ${IDEM_COLS} FROM json_populate_recordset(NULL::idempotencia, $10::json)
    WHERE (SELECT held FROM ok)
    ON CONFLICT (cliente_id, clave) DO UPDATE SET huella = excluded.huella, msg_id = excluded.msg_id, status = excluded.status,
      body = excluded.body, created_at = excluded.created_at, expira_at = excluded.expira_at
    WHERE idempotencia.expira_at <= excluded.created_at RETURNING cliente_id, clave),
  -- Expired keys, a few, after the bindings and never waiting (SKIP LOCKED): two turns' purges and bindings cannot wait on each other.
  purge AS (DELETE FROM idempotencia WHERE (cliente_id, clave) IN (
    SELECT cliente_id, clave FROM idempotencia WHERE expira_at <= $11::bigint
      AND (cliente_id, clave) NOT IN (SELECT cliente_id, clave FROM idem) AND EXISTS (SELECT 1 FROM idem)
    LIMIT $12::int FOR UPDATE SKIP LOCKED))
  SELECT ${COLS}, seq FROM msg`;

/** READ's (or PEEK's) one row. */
interface ReadRow {
  clientes: Array<{ id: number; saldo_global: number }> | null;
  celulares: Array<{ id: number; cliente_id: number; saldo_actual: number; pendientes: number }> | null;
  ligadas?: Array<{ cliente_id: number; clave: string }> | null;
  cupos?: Array<{ i: number; k: SlotCount }> | null;
}

/** A turn's rows as read: core's input, and what the write's guard checks. */
interface Read {
  turn: TurnRead;
  /** Guard parameters: the clients' ids and balances, the lines' ids, clients, balances and queue lengths. */
  guard: unknown[];
}

const idsOf = (items: AcceptItem[]) => [[...new Set(items.map((i) => i.m.cliente_id))], [...new Set(items.map((i) => i.m.celular_id))]];

function readOf(r: ReadRow): Read {
  const clientes = r.clientes ?? [];
  const celulares = r.celulares ?? [];
  const cupos = new Map<number, SlotCount[]>();
  for (const { i, k } of r.cupos ?? []) cupos.set(i, [...(cupos.get(i) ?? []), k]);
  return {
    turn: {
      clientes: new Map(clientes.map((c) => [c.id, { saldo_global: c.saldo_global }])),
      celulares: new Map(celulares.map((c) => [c.id, { cliente_id: c.cliente_id, saldo_actual: c.saldo_actual, pendientes: c.pendientes }])),
      bound: new Set((r.ligadas ?? []).map((k) => keyOf(k.cliente_id, k.clave))),
      cupos,
    },
    guard: [...arrays(clientes, 2, (c) => [c.id, c.saldo_global]), ...arrays(celulares, 4, (c) => [c.id, c.cliente_id, c.saldo_actual, c.pendientes])],
  };
}

async function read(c: Client, items: AcceptItem[]): Promise<Read> {
  const keyed = items.filter((i) => i.opts.idem);
  // Each direct send's windows, in its claim's order.
  const windows = items.flatMap((it, i) => (it.opts.slot?.windows ?? []).map((ms) => ({ i, celular_id: it.m.celular_id, since: it.now - ms, now: it.now })));
  const r = await row<ReadRow>(c, READ, [
    LOCK.idempotencyKey,
    keyed.map((i) => keyOf(i.m.cliente_id, i.opts.idem!.clave)),
    ...idsOf(items),
    ...arrays(keyed, 3, (i) => [i.m.cliente_id, i.opts.idem!.clave, i.now]),
    ...arrays(windows, 4, (w) => [w.i, w.celular_id, w.since, w.now]),
  ]);
  return readOf(r!);
}

/** A turn decided: each send's answer, and WRITE's parameters (null when nothing is accepted). */
interface Plan {
  answers: AcceptResult[];
  params: unknown[] | null;
}

/** Core's verdicts on the turn's rows (`turn` is consumed) and what the accepted sends write. */
function plan(items: AcceptItem[], { turn, guard }: Read): Plan {
  const verdicts = acceptTurn(items, turn);
  const clientes = new Map<number, number>();
  const celulares = new Map<number, { saldo: number; d: number }>();
  const movements: Record<string, unknown>[] = [];
  const mensajes: MensajeRow[] = [];
  const data: string[] = [];
  const keys: Record<string, unknown>[] = [];
  const answers = verdicts.map((v, i): AcceptResult => {
    if (!v.ok) return v;
    const { m, opts, now } = items[i]!;
    const { paid } = v;
    if (paid.write?.balance.table === 'clientes') clientes.set(m.cliente_id, paid.saldoGlobal);
    const queued = recipe.queueDelta(m);
    if (queued || paid.write?.balance.table === 'celulares') {
      const line = celulares.get(m.celular_id);
      celulares.set(m.celular_id, { saldo: paid.saldoCelular, d: (line?.d ?? 0) + queued });
    }
    if (paid.write) {
      const values = recipe.movementValues(paid.write.movement, now);
      movements.push(Object.fromEntries(recipe.MOVEMENT_COLUMNS.map((k, j) => [k, values[j]])));
    }
    const mensaje = acceptedRow(m, v.cargo, opts.slot?.holdUntil ?? null, now);
    const accepted: AcceptedMensaje = { ok: true, cargo: v.cargo, saldo_celular: paid.saldoCelular, saldo_global: paid.saldoGlobal, mensaje };
    mensajes.push(mensaje);
    data.push(JSON.stringify(messageStatusData(mensaje, null, now)));
    if (opts.idem) {
      const a = opts.idem.answer(accepted);
      keys.push({
        cliente_id: m.cliente_id,
        clave: opts.idem.clave,
        huella: opts.idem.huella,
        msg_id: m.msg_id,
        status: a.status,
        body: a.body,
        created_at: now,
        expira_at: opts.idem.expira_at,
      });
    }
    return accepted;
  });
  if (mensajes.length === 0) return { answers, params: null };
  const lines = [...celulares];
  const params = [
    [...clientes.keys()],
    [...clientes.values()],
    ...arrays(lines, 3, ([id, l]) => [id, l.saldo, l.d]),
    JSON.stringify(movements),
    JSON.stringify(mensajes),
    mensajes.map((m) => m.msg_id),
    data,
    JSON.stringify(keys),
    Math.max(...items.map((i) => i.now)),
    IDEM_PURGE_BATCH,
    ...guard,
    mensajes.length,
  ];
  return { answers, params };
}

type Written = MensajeRow & { seq: number };

/** The answers with the rows as the write stored them (their seq and defaults). */
function withRows(answers: AcceptResult[], written: Written[]): AcceptResult[] {
  const byId = new Map(written.map((w) => [w.msg_id, w]));
  return answers.map((a) => (a.ok ? { ...a, mensaje: byId.get(a.mensaje.msg_id)! } : a));
}

/** No row for WRITE's guard to check: it holds. */
const UNGUARDED = [[], [], [], [], [], []];

/** A turn in the caller's transaction: READ, core's verdicts, WRITE, unguarded (READ's locks keep the rows as read). */
async function acceptLocked(c: Client, items: AcceptItem[]): Promise<AcceptResult[]> {
  const p = plan(items, { ...(await read(c, items)), guard: UNGUARDED });
  if (!p.params) return p.answers;
  const written = await c.query<Written>(WRITE, p.params);
  return withRows(p.answers, written.rows);
}

/** A batch of sends accepted in one transaction, as a turn takes them (for tests of the statements). */
export const acceptBatch = (db: Db, items: AcceptItem[]): Promise<AcceptResult[]> => db.tx((c) => acceptLocked(c, items));

/** A small turn without keys or caps, PEEK then WRITE autocommitted (D-83); null when it must go the locked path. */
async function acceptUnlocked(db: Db, items: AcceptItem[], seen: AcceptPaths): Promise<AcceptResult[] | null> {
  const [r] = await db.q<ReadRow>(PEEK, idsOf(items));
  const p = plan(items, readOf(r!));
  if (p.answers.some((a) => !a.ok)) {
    seen.refused++;
    return null;
  }
  const written = await db.q<Written>(WRITE, p.params!);
  if (written.length === 0) {
    seen.missed++;
    return null;
  }
  seen.unlocked++;
  return withRows(p.answers, written);
}

/**
 * The largest turn tried unlocked (D-83): a thin load's turns of one or two sends save two round trips each; a burst's
 * touch more lines, and figure 8a's (about 24 sends) missed the guard, costing both statements again, in over half of them.
 */
export const UNLOCKED_MAX = 4;

/** How the turns of one store were taken: a count per way, for tests and a look at a running node. */
export interface AcceptPaths {
  /** Written on the unlocked path. */
  unlocked: number;
  /** Unlocked, then on the locked path: a send was refused. */
  refused: number;
  /** Unlocked, then on the locked path: the guard missed. */
  missed: number;
}

/** A send only READ can decide: a key's binding and caps slots are rows the guard does not lock. */
const needsLocks = (i: AcceptItem) => i.opts.idem !== undefined || (i.opts.slot?.windows.length ?? 0) > 0;

/** Group commit for MessagesStore.acceptMensaje: every send in a turn, alone or with the others that arrived meanwhile. */
export function acceptTurns(db: Db, opts: { max: number; concurrent: number } = { max: 100, concurrent: 1 }) {
  const paths: AcceptPaths = { unlocked: 0, refused: 0, missed: 0 };
  const turns = new Turns<AcceptItem, AcceptResult>(async (items) => {
    try {
      const unlocked = items.length <= UNLOCKED_MAX && !items.some(needsLocks);
      const answers = (unlocked ? await acceptUnlocked(db, items, paths) : null) ?? (await db.tx((c) => acceptLocked(c, items)));
      return answers.map((value) => ({ status: 'fulfilled', value }));
    } catch (err) {
      // Each alone, in arrival order (docs/store-locks.md "Failures"): each line's sends keep their order.
      if (err instanceof AppError || items.length === 1) throw err;
      const out: Array<PromiseSettledResult<AcceptResult>> = [];
      for (const i of items) out.push(await settle(async () => (await db.tx((c) => acceptLocked(c, [i])))[0]!));
      return out;
    }
  }, opts);
  const acceptOne = (m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> => turns.add({ m, opts, now });
  return { acceptOne, paths };
}

export type AcceptTurns = ReturnType<typeof acceptTurns>;
