import { acceptTurn, keyOf, type TurnItem, type TurnRead } from '../../core/sending/accept-turn.js';
import { messageStatusData } from '../../core/events/event-data.js';
import { IDEM_PURGE_BATCH } from '../../core/sending/idempotency.js';
import type { AcceptedMensaje, AcceptOptions, AcceptResult, NewMensaje } from '../../core/ports/messages.js';
import type { MensajeRow } from '../../core/ports/model.js';
import * as recipe from '../../core/billing/recipes.js';
import { settle, Turns } from '../../core/queue/turns.js';
import { AppError } from '../../core/api/errors.js';
import { accept, acceptedRow } from './accept.js';
import { type Client, type Db, LOCK, rows } from './db.js';
import { COLS, colsOf } from './messages.js';
import { enterPending } from './state-paths.js';
import { EVENT_ROW_COLS, eventRow } from './webhooks.js';

/**
 * Queued sends accepted together (group commit, core/queue/turns.ts): the sends
 * that arrive while a turn commits go in the next one, in four round trips
 * whatever their number: BEGIN, one statement that takes every lock and
 * reads the balances, queues and keys, one that writes every message,
 * charge, ledger row, event and key binding (unnest and JSON record sets),
 * COMMIT. Core decides each send in order (core/sending/accept-turn.ts).
 *
 * Locks, in the order of a single acceptance (accept.ts), each kind in
 * ascending order so two turns cannot wait on each other in a cycle: the
 * keys' advisory locks, then the clients' rows, then the lines'. Each CTE's
 * scan is gated on the whole of the one before it (a count, which reads it
 * all). The locked rows are read at their newest version; the keys'
 * bindings are not (the statement's snapshot may predate a binding its
 * lock's previous holder committed), so the write binds each key only where
 * none is live and counts the bindings it made: one short means such a
 * race, and the turn is rolled back and each send taken alone (accept.ts
 * sees the binding then).
 *
 * A direct send takes a caps slot at acceptance, counted against its line's
 * recent sends: it keeps the single path, as does every send of a turn that
 * failed (each then in a transaction of its own, so one bad send fails only
 * itself).
 *
 * A small turn without keys (UNLOCKED_MAX) first tries two round trips and
 * no transaction (D-83): an unlocked read of the same rows, core's verdicts
 * on it, then the write statement with a guard in front that locks those
 * rows in the same order and writes only if each still holds what was read.
 * A locked row is re-read at its newest version, so the guard is exact; the
 * turn's writes depend on nothing else read (the keys, which are read from
 * other rows, keep the locked path). A turn in which any send is refused, or
 * whose guard missed (another node's acceptance, a send recorded, a top-up
 * changed a row), is taken again on the locked path: an unlocked read
 * answers no refusal.
 */

const LOCK_AND_READ = `WITH k AS MATERIALIZED (
    SELECT pg_advisory_xact_lock($1::int, h) FROM (SELECT DISTINCT hashtext(x) AS h FROM unnest($2::text[]) x) s ORDER BY h),
  cli AS MATERIALIZED (
    SELECT id, saldo_global FROM clientes WHERE id = ANY($3::bigint[]) AND (SELECT COUNT(*) FROM k) >= 0 ORDER BY id FOR NO KEY UPDATE),
  cel AS MATERIALIZED (
    SELECT id, cliente_id, saldo_actual, pendientes FROM celulares WHERE id = ANY($4::bigint[]) AND (SELECT COUNT(*) FROM cli) >= 0
    ORDER BY id FOR NO KEY UPDATE)
  SELECT 'cliente' AS t, id, NULL::bigint AS cliente_id, saldo_global AS saldo, NULL::int AS pendientes, NULL::text AS clave FROM cli
  UNION ALL SELECT 'celular', id, cliente_id, saldo_actual, pendientes, NULL FROM cel
  UNION ALL SELECT 'clave', NULL, i.cliente_id, NULL, NULL, i.clave FROM idempotencia i
    JOIN unnest($5::bigint[], $6::text[], $7::bigint[]) u(cliente_id, clave, now) ON i.cliente_id = u.cliente_id AND i.clave = u.clave
    WHERE i.expira_at > u.now`;

/** The turn's rows as the locked read reads them, but unlocked and outside any transaction (the unlocked path). */
const READ_UNLOCKED = `SELECT 'cliente' AS t, id, NULL::bigint AS cliente_id, saldo_global AS saldo, NULL::bigint AS pendientes FROM clientes
    WHERE id = ANY($1::bigint[])
  UNION ALL SELECT 'celular', id, cliente_id, saldo_actual, pendientes FROM celulares WHERE id = ANY($2::bigint[])`;

/**
 * The write's guard, a CTE `ok` (one boolean) every write is gated on. On the
 * locked path the rows are locked already: true. On the unlocked path it
 * locks the clients then the lines, each ascending (LOCK_AND_READ's order),
 * and holds when each locked row (at its newest version) still has the
 * values read: parameters $13-$18, the clients' ids and balances, the lines'
 * ids, clients, balances and queue lengths, as read.
 */
const HELD = 'ok AS (SELECT true AS held)';
const GUARD = `gcli AS MATERIALIZED (
    SELECT id, saldo_global FROM clientes WHERE id = ANY($13::bigint[]) ORDER BY id FOR NO KEY UPDATE),
  gcel AS MATERIALIZED (
    SELECT id, cliente_id, saldo_actual, pendientes FROM celulares WHERE id = ANY($15::bigint[]) AND (SELECT COUNT(*) FROM gcli) >= 0
    ORDER BY id FOR NO KEY UPDATE),
  ok AS MATERIALIZED (SELECT
    (SELECT COUNT(*) FROM gcli JOIN unnest($13::bigint[], $14::bigint[]) r(id, saldo) USING (id) WHERE gcli.saldo_global = r.saldo)
      = cardinality($13::bigint[])
    AND (SELECT COUNT(*) FROM gcel JOIN unnest($15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[]) r(id, cliente_id, saldo, pendientes)
      USING (id) WHERE gcel.cliente_id = r.cliente_id AND gcel.saldo_actual = r.saldo AND gcel.pendientes = r.pendientes)
      = cardinality($15::bigint[]) AS held)`;

const IDEM_COLS = 'cliente_id, clave, huella, msg_id, status, body, created_at, expira_at';
const MOV_COLS = recipe.MOVEMENT_COLUMNS.join(', ');

/**
 * Everything the turn's accepted sends write. Parameters: the clients'
 * global balances (ids, values), the lines' (ids, saldo_actual, queue
 * delta), the ledger rows, the messages (in arrival order), each message's
 * event data, the key bindings (JSON record sets), now and the purge's size.
 * The purge of expired keys runs only when keys were bound, after them, and
 * never waits (see accept.ts). Nothing is written unless `ok` (HELD or
 * GUARD) holds; the statement returns the messages it wrote.
 */
const written = new Map<string, string>();
// Built on first use: messages.ts, which gives the columns, imports this module.
const writeSql = (guard: string) => {
  let sql = written.get(guard);
  if (!sql) written.set(guard, (sql = writeText(guard)));
  return sql;
};
const writeText = (guard: string) => `WITH ${guard},
  bal AS (
    UPDATE clientes c SET saldo_global = v.saldo FROM unnest($1::bigint[], $2::bigint[]) v(id, saldo) WHERE c.id = v.id AND (SELECT held FROM ok)),
  cel AS (
    UPDATE celulares c SET saldo_actual = v.saldo, pendientes = c.pendientes + v.d
    FROM unnest($3::bigint[], $4::bigint[], $5::int[]) v(id, saldo, d) WHERE c.id = v.id AND (SELECT held FROM ok)),
  mov AS (INSERT INTO movimientos_saldo (${MOV_COLS}) SELECT ${MOV_COLS} FROM json_populate_recordset(NULL::movimientos_saldo, $6::json)
    WHERE (SELECT held FROM ok)),
  -- The counts rows the inserts' trigger will take, one message at a time: taken first, lines then quarters then hours, each in order,
  -- so the turn never holds a quarter while it waits for a line's row (a send's record takes the line's, then the quarter's).
  -- After the guard: its locks come first, as on the locked path.
  lineas AS MATERIALIZED (SELECT 1 FROM conteos_mensajes k JOIN (SELECT DISTINCT cliente_id, celular_id FROM json_populate_recordset(NULL::mensajes, $7::json)) r
    USING (cliente_id, celular_id) WHERE k.estado = 'pendiente' AND (SELECT held FROM ok) ORDER BY k.cliente_id, k.celular_id FOR UPDATE OF k),
  cuartos AS MATERIALIZED (SELECT 1 FROM conteos_cuartos k JOIN (SELECT DISTINCT cliente_id, created_at / 900000 AS cuarto FROM json_populate_recordset(NULL::mensajes, $7::json)) r
    USING (cliente_id, cuarto) WHERE k.estado = 'pendiente' AND (SELECT COUNT(*) FROM lineas) >= 0 ORDER BY k.cliente_id, k.cuarto FOR UPDATE OF k),
  horas AS MATERIALIZED (SELECT 1 FROM conteos_horas k JOIN (SELECT DISTINCT cliente_id, created_at / 3600000 AS hora FROM json_populate_recordset(NULL::mensajes, $7::json)) r
    USING (hora, cliente_id) WHERE k.estado = 'pendiente' AND (SELECT COUNT(*) FROM cuartos) >= 0 ORDER BY k.hora, k.cliente_id FOR UPDATE OF k),
  msg AS (
    INSERT INTO mensajes (${COLS}) SELECT ${colsOf('r')} FROM json_populate_recordset(NULL::mensajes, $7::json) WITH ORDINALITY r
    WHERE (SELECT COUNT(*) FROM horas) >= 0 AND (SELECT held FROM ok) ORDER BY r.ordinality RETURNING ${COLS}, seq),
  pend AS (${enterPending('msg')}),
  ev AS (INSERT INTO eventos (${EVENT_ROW_COLS})
    SELECT ${eventRow('s.cliente_id', 's.celular_id', `'message.status'`, 'd.data', 's.created_at', 's.created_at')}
    FROM msg s JOIN unnest($8::text[], $9::text[]) d(msg_id, data) ON d.msg_id = s.msg_id ORDER BY s.seq),
  idem AS (INSERT INTO idempotencia (${IDEM_COLS}) SELECT ${IDEM_COLS} FROM json_populate_recordset(NULL::idempotencia, $10::json)
    ON CONFLICT (cliente_id, clave) DO UPDATE SET huella = excluded.huella, msg_id = excluded.msg_id, status = excluded.status,
      body = excluded.body, created_at = excluded.created_at, expira_at = excluded.expira_at
    WHERE idempotencia.expira_at <= excluded.created_at RETURNING cliente_id, clave),
  purge AS (DELETE FROM idempotencia WHERE (cliente_id, clave) IN (
    SELECT cliente_id, clave FROM idempotencia WHERE expira_at <= $11::bigint
      AND (cliente_id, clave) NOT IN (SELECT cliente_id, clave FROM idem) AND EXISTS (SELECT 1 FROM idem)
    LIMIT $12::int FOR UPDATE SKIP LOCKED))
  SELECT ${COLS}, (SELECT COUNT(*) FROM idem) AS ligadas FROM msg`;

/** One send of a turn, with the time it arrived at. */
interface Pending extends TurnItem {
  now: number;
}

/** What the lock-and-read statement returns (the unlocked read: its clients and lines). */
interface LockedRow {
  t: 'cliente' | 'celular' | 'clave';
  id: number;
  cliente_id: number;
  saldo: number;
  pendientes: number;
  clave: string;
}

const idsOf = (items: Pending[]) => [[...new Set(items.map((i) => i.m.cliente_id))], [...new Set(items.map((i) => i.m.celular_id))]];

function turnRead(found: LockedRow[]): TurnRead {
  const read: TurnRead = { clientes: new Map(), celulares: new Map(), bound: new Set() };
  for (const r of found) {
    if (r.t === 'cliente') read.clientes.set(r.id, { saldo_global: r.saldo });
    else if (r.t === 'celular') read.celulares.set(r.id, { cliente_id: r.cliente_id, saldo_actual: r.saldo, pendientes: r.pendientes });
    else read.bound.add(keyOf(r.cliente_id, r.clave));
  }
  return read;
}

async function readTurn(c: Client, items: Pending[]): Promise<TurnRead> {
  const keyed = items.filter((i) => i.opts.idem);
  return turnRead(
    await rows<LockedRow>(c, LOCK_AND_READ, [
      LOCK.idempotencyKey,
      keyed.map((i) => keyOf(i.m.cliente_id, i.opts.idem!.clave)),
      ...idsOf(items),
      keyed.map((i) => i.m.cliente_id),
      keyed.map((i) => i.opts.idem!.clave),
      keyed.map((i) => i.now),
    ]),
  );
}

/**
 * A refused send whose key another transaction bound while the turn waited
 * for the key's lock is a repeat, as the single path answers it: read again
 * now that the locks are held (one more round trip, only for refused sends
 * with a key). A refusal writes nothing, so the others stand.
 */
async function refusalsOfBoundKeys(c: Client, items: Pending[], answers: AcceptResult[]): Promise<void> {
  const refused = items.flatMap((it, i) => (!answers[i]!.ok && answers[i]!.reason !== 'idempotencia' && it.opts.idem ? [i] : []));
  if (refused.length === 0) return;
  const bound = await rows<{ cliente_id: number; clave: string }>(
    c,
    `SELECT i.cliente_id, i.clave FROM idempotencia i
     JOIN unnest($1::bigint[], $2::text[], $3::bigint[]) u(cliente_id, clave, now) ON i.cliente_id = u.cliente_id AND i.clave = u.clave
     WHERE i.expira_at > u.now`,
    [refused.map((i) => items[i]!.m.cliente_id), refused.map((i) => items[i]!.opts.idem!.clave), refused.map((i) => items[i]!.now)],
  );
  const keys = new Set(bound.map((b) => keyOf(b.cliente_id, b.clave)));
  for (const i of refused) if (keys.has(keyOf(items[i]!.m.cliente_id, items[i]!.opts.idem!.clave))) answers[i] = { ok: false, reason: 'idempotencia' };
}

/** A key bound by another transaction between the turn's read and its lock: the turn is taken again, each send alone. */
class KeyRace extends Error {}

/** A turn decided: each send's answer, and the write statement's first twelve parameters (none when nothing is accepted). */
interface Plan {
  answers: AcceptResult[];
  /** The accepted sends' messages, in arrival order. */
  mensajes: MensajeRow[];
  /** Key bindings the write must make. */
  keys: number;
  params: unknown[];
}

/** Core's verdicts on `read` (which it consumes) and what the accepted sends write. */
function planTurn(items: Pending[], read: TurnRead): Plan {
  const verdicts = acceptTurn(items, read);
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
    const mensaje = acceptedRow(m, v.cargo, opts, now);
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
  const lines = [...celulares];
  const params = [
    [...clientes.keys()],
    [...clientes.values()],
    lines.map(([id]) => id),
    lines.map(([, l]) => l.saldo),
    lines.map(([, l]) => l.d),
    JSON.stringify(movements),
    JSON.stringify(mensajes),
    mensajes.map((m) => m.msg_id),
    data,
    JSON.stringify(keys),
    Math.max(...items.map((i) => i.now)),
    IDEM_PURGE_BATCH,
  ];
  return { answers, mensajes, keys: keys.length, params };
}

type Written = MensajeRow & { ligadas: number };

/** The answers with the rows as the write stored them (their seq and defaults). */
function withRows(answers: AcceptResult[], written: Written[]): AcceptResult[] {
  const byId = new Map(written.map(({ ligadas: _, ...w }) => [w.msg_id, w]));
  return answers.map((a) => (a.ok ? { ...a, mensaje: byId.get(a.mensaje.msg_id)! } : a));
}

/** One turn in the caller's transaction: every send decided, the accepted ones written in one statement. */
async function acceptAll(c: Client, items: Pending[]): Promise<AcceptResult[]> {
  const plan = planTurn(items, await readTurn(c, items));
  await refusalsOfBoundKeys(c, items, plan.answers);
  if (plan.mensajes.length === 0) return plan.answers;
  const written = await rows<Written>(c, writeSql(HELD), plan.params);
  if ((written[0]?.ligadas ?? 0) < plan.keys) throw new KeyRace('an Idempotency-Key was bound meanwhile');
  return withRows(plan.answers, written);
}

/**
 * A turn without keys in two autocommitted statements (D-83): the unlocked
 * read, core's verdicts, the guarded write. Null when it must be taken on
 * the locked path: a send was refused (decided on an unlocked read), or the
 * guard missed (nothing was written).
 */
async function acceptUnlocked(db: Db, items: Pending[], seen: AcceptPaths): Promise<AcceptResult[] | null> {
  const read = turnRead(await db.q<LockedRow>(READ_UNLOCKED, idsOf(items)));
  // What the guard checks: the rows as read, before core's verdicts move them.
  const clientes = [...read.clientes];
  const celulares = [...read.celulares];
  const guard = [
    clientes.map(([id]) => id),
    clientes.map(([, c]) => c.saldo_global),
    celulares.map(([id]) => id),
    celulares.map(([, c]) => c.cliente_id),
    celulares.map(([, c]) => c.saldo_actual),
    celulares.map(([, c]) => c.pendientes),
  ];
  const plan = planTurn(items, read);
  if (plan.answers.some((a) => !a.ok)) {
    seen.refused++;
    return null;
  }
  const written = await db.q<Written>(writeSql(GUARD), [...plan.params, ...guard]);
  if (written.length === 0) {
    seen.missed++;
    return null;
  }
  seen.unlocked++;
  return withRows(plan.answers, written);
}

/**
 * The largest turn tried unlocked. A thin load's turns hold one send or two,
 * and save two round trips each; a burst's turns share the locked path's
 * four among many sends, and the more lines a turn touches the likelier a
 * concurrent send record changes one between its read and its write (a miss
 * costs both statements again): figure 8a, turns of about 24 sends, missed
 * in over half its turns in one run (D-83).
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

/** Group commit for MessagesStore.acceptMensaje: a direct send (which takes a caps slot) alone, queued sends in turns. */
export function acceptTurns(db: Db, opts: { max: number; concurrent: number } = { max: 100, concurrent: 1 }) {
  const paths: AcceptPaths = { unlocked: 0, refused: 0, missed: 0 };
  const turns = new Turns<Pending, AcceptResult>(async (items) => {
    try {
      const unlocked = items.length <= UNLOCKED_MAX && items.every((i) => !i.opts.idem);
      const answers = (unlocked ? await acceptUnlocked(db, items, paths) : null) ?? (await db.tx((c) => acceptAll(c, items)));
      return answers.map((value) => ({ status: 'fulfilled', value }));
    } catch (err) {
      // A store that cannot be written fails every send at once; otherwise one bad send must not fail the others: each alone.
      if (err instanceof AppError || (items.length === 1 && !(err instanceof KeyRace))) throw err;
      // In arrival order, one after another: each line's sends keep their order, and the first of two on a key wins.
      const out: Array<PromiseSettledResult<AcceptResult>> = [];
      for (const i of items) out.push(await settle(() => db.tx((c) => accept(c, i.m, i.opts, i.now))));
      return out;
    }
  }, opts);
  const acceptOne = (m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> =>
    opts.slot ? db.tx((c) => accept(c, m, opts, now)) : turns.add({ m, opts, now });
  return { acceptOne, paths };
}

export type AcceptTurns = ReturnType<typeof acceptTurns>;
