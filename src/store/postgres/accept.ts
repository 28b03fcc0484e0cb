import type { SlotCount } from '../../core/sending/caps.js';
import { messageStatusData } from '../../core/events/event-data.js';
import { IDEM_PURGE_BATCH } from '../../core/sending/idempotency.js';
import { acceptVerdict } from '../../core/billing/ledger.js';
import type { AcceptedMensaje, AcceptOptions, AcceptResult, NewMensaje } from '../../core/ports/messages.js';
import type { MensajeRow } from '../../core/ports/model.js';
import * as recipe from '../../core/billing/recipes.js';
import { balanceSet } from '../recipe-sql.js';
import { type Client, LOCK, row } from './db.js';
import { COLS, colsOf, slotCountsJson } from './messages.js';
import { EVENT_ROW_COLS, eventRow } from './webhooks.js';
import { enterPending, slotSync } from './state-paths.js';

/**
 * A send's acceptance in PostgreSQL in four round trips: BEGIN, one
 * statement that takes the locks and reads what the verdict needs, one that
 * writes everything (a data-modifying CTE), COMMIT. Core decides between the
 * two (`acceptVerdict`, `recipe.charge`), so a refusal writes nothing.
 *
 * Locks, in the order of postgres/messages.ts: the Idempotency-Key's advisory
 * lock, then the client's row (only when its balance may pay), then the
 * line's. One statement takes all three: each CTE's scan is gated on the one
 * before it, so it cannot lock its row before the earlier lock is held.
 *
 * Under READ COMMITTED a statement reads the snapshot of its start, which may
 * be older than a lock it waited for; a locked row is read at its newest
 * version, but rows another transaction added are not. So two reads of the
 * first statement may miss what a transaction that held the lock just
 * committed: the key's binding and the line's caps slots. The write
 * statement starts with the locks held, so it sees every commit of their
 * previous holders, and it writes nothing unless (a) the line holds no more
 * slots than the verdict counted (every slot taker holds the line's lock, so
 * none is added until we commit; fewer, freed meanwhile, cannot turn an
 * accept into a cap) and (b) the key's binding is inserted, which the
 * binding of another transaction prevents. Failing (a), the slots are counted
 * again (exact now) and the verdict asked again: two more round trips, only
 * when a send raced this one on a capped line. Failing (b), the send is the
 * key's repeat, as a read under the key's lock would have answered. A
 * refusal writes nothing, so it holds at the first statement's snapshot;
 * only a key bound since then outranks it, checked afresh then (one more
 * round trip, on refusals with a key only).
 */

/** What the first statement reads. */
interface Read {
  saldo_global: number;
  saldo_actual: number;
  pendientes: number;
  /** The key is bound (when one is given). */
  ligada?: boolean;
  /** Slots of each window (when a slot is asked). */
  cuentas?: SlotCount[];
}

/** A statement's parameters, numbered as they are named: `p(v, type)` is the placeholder of v. */
function params() {
  const values: unknown[] = [];
  const p = (v: unknown, type: string) => `$${values.push(v)}::${type}`;
  return { values, p };
}

const windowsSince = (opts: AcceptOptions, now: number) => (opts.slot?.windows ?? []).map((ms) => now - ms);

/** The locks, then the balances, the line's queue, the key and the slots. Null: no such line of this client. */
async function readAccept(c: Client, m: NewMensaje, opts: AcceptOptions, now: number): Promise<Read | null> {
  const { values, p } = params();
  const cli = p(m.cliente_id, 'bigint');
  const cel = p(m.celular_id, 'bigint');
  const ctes: string[] = [];
  const extra: string[] = [];
  let afterKey = '';
  if (opts.idem) {
    ctes.push(
      `k AS MATERIALIZED (SELECT pg_advisory_xact_lock(${p(LOCK.idempotencyKey, 'int')}, hashtext(${p(`${m.cliente_id}:${opts.idem.clave}`, 'text')})))`,
    );
    afterKey = ' AND EXISTS (SELECT 1 FROM k)';
    extra.push(
      `EXISTS (SELECT 1 FROM idempotencia WHERE cliente_id = ${cli} AND clave = ${p(opts.idem.clave, 'text')} AND expira_at > ${p(now, 'bigint')}) AS ligada`,
    );
  }
  ctes.push(`cli AS MATERIALIZED (SELECT saldo_global FROM clientes WHERE id = ${cli}${afterKey}${opts.charge ? ' FOR NO KEY UPDATE' : ''})`);
  ctes.push(
    `cel AS MATERIALIZED (SELECT saldo_actual, pendientes FROM celulares WHERE id = ${cel} AND cliente_id = ${cli} AND EXISTS (SELECT 1 FROM cli) FOR NO KEY UPDATE)`,
  );
  const since = windowsSince(opts, now);
  if (since.length > 0) extra.push(`${slotCountsJson(cel, p(since, 'bigint[]'), p(now, 'bigint'))} AS cuentas`);
  const sql = `WITH ${ctes.join(',\n  ')}
    SELECT cli.saldo_global, cel.saldo_actual, cel.pendientes${extra.map((e) => `, ${e}`).join('')} FROM cli, cel`;
  return row<Read>(c, sql, values);
}

/** The line's slots again, in a statement of their own: under the line's lock, this count is exact. */
async function recount(c: Client, m: NewMensaje, opts: AcceptOptions, now: number): Promise<SlotCount[]> {
  const { values, p } = params();
  const r = await row<{ cuentas: SlotCount[] }>(
    c,
    `SELECT ${slotCountsJson(p(m.celular_id, 'bigint'), p(windowsSince(opts, now), 'bigint[]'), p(now, 'bigint'))} AS cuentas`,
    values,
  );
  return r!.cuentas;
}

/** Whether the key is bound now (its lock held: no binding can appear after this read). */
async function keyBound(c: Client, clienteId: number, clave: string, now: number): Promise<boolean> {
  return (await row(c, 'SELECT 1 FROM idempotencia WHERE cliente_id = $1 AND clave = $2 AND expira_at > $3', [clienteId, clave, now])) !== null;
}

/** Values as a record of a table's type, columns by name: one parameter for a row of any width. */
const asRecord = (table: string, p: (v: unknown, type: string) => string, record: Record<string, unknown>) =>
  `json_populate_record(NULL::${table}, ${p(JSON.stringify(record), 'json')})`;

interface Written {
  /** The line held no more slots than counted. */
  go: boolean;
  /** The message, when everything was written. */
  mensaje: MensajeRow | null;
}

/**
 * Everything an acceptance writes, in one statement, each part gated on `ok`:
 * the slot guard held and (with a key) the key's binding was made. The
 * purge of expired keys runs after the binding (it reads its output) and
 * never waits (SKIP LOCKED), so two acceptances' purges and bindings cannot
 * wait on each other in a cycle.
 */
async function writeAccept(
  c: Client,
  m: NewMensaje,
  opts: AcceptOptions,
  now: number,
  counts: SlotCount[],
  paid: recipe.ChargeRecipe,
  accepted: AcceptedMensaje,
): Promise<Written> {
  const { values, p } = params();
  const mensaje = accepted.mensaje;
  const cli = p(m.cliente_id, 'bigint');
  const cel = p(m.celular_id, 'bigint');
  const ctes: string[] = [];
  const since = windowsSince(opts, now);
  ctes.push(
    since.length === 0
      ? 'go AS MATERIALIZED (SELECT 1)'
      : `go AS MATERIALIZED (SELECT 1 WHERE NOT EXISTS (
      SELECT 1 FROM unnest(${p(since, 'bigint[]')}, ${p(
        counts.map((k) => k.n),
        'bigint[]',
      )}) AS w(since, n)
      WHERE (SELECT COUNT(*) FROM cupos WHERE celular_id = ${cel} AND cupo_at > w.since) > w.n))`,
  );
  const idem = opts.idem;
  let key = '';
  if (idem) {
    const a = idem.answer(accepted);
    key = p(idem.clave, 'text');
    ctes.push(`idem AS (INSERT INTO idempotencia (cliente_id, clave, huella, msg_id, status, body, created_at, expira_at)
      SELECT ${cli}, ${key}, ${p(idem.huella, 'text')}, ${p(m.msg_id, 'text')}, ${p(a.status, 'int')}, ${p(a.body, 'text')}, ${p(now, 'bigint')}, ${p(idem.expira_at, 'bigint')} FROM go
      ON CONFLICT (cliente_id, clave) DO UPDATE SET huella = excluded.huella, msg_id = excluded.msg_id, status = excluded.status,
        body = excluded.body, created_at = excluded.created_at, expira_at = excluded.expira_at
      WHERE idempotencia.expira_at <= excluded.created_at RETURNING 1)`);
  }
  ctes.push(`ok AS MATERIALIZED (SELECT 1 FROM ${idem ? 'idem' : 'go'})`);
  const gate = ' AND EXISTS (SELECT 1 FROM ok)';
  const queued = recipe.queueDelta(m);
  const onLine = paid.write?.balance.table === 'celulares';
  // One statement for the line's counter and its balance (the line's balance is the recipe's value, or unchanged).
  if (queued || onLine) {
    ctes.push(
      `cel AS (UPDATE celulares SET pendientes = pendientes + ${p(queued, 'int')}, saldo_actual = ${p(paid.saldoCelular, 'bigint')} WHERE id = ${cel}${gate})`,
    );
  }
  if (paid.write) {
    const w = paid.write;
    if (!onLine) {
      const args = [p(w.saldo, 'bigint'), p(w.balance.id, 'bigint')];
      ctes.push(`bal AS (${balanceSet(w.balance, (i) => args[i - 1]!)}${gate})`);
    }
    const mv = recipe.movementValues(w.movement, now);
    const cols = recipe.MOVEMENT_COLUMNS.join(', ');
    ctes.push(
      `mov AS (INSERT INTO movimientos_saldo (${cols}) SELECT ${cols} FROM ${asRecord('movimientos_saldo', p, Object.fromEntries(recipe.MOVEMENT_COLUMNS.map((k, i) => [k, mv[i]])))} r, ok)`,
    );
  }
  ctes.push(`msg AS (INSERT INTO mensajes (${COLS}) SELECT ${colsOf('r')} FROM ${asRecord('mensajes', p, { ...mensaje })} r, ok RETURNING ${COLS}, seq)`);
  // Its access paths (state-paths.ts): it is pending, and a direct send holds its slot from now.
  ctes.push(`pend AS (${enterPending('msg')})`);
  if (mensaje.cupo_at !== null) ctes.push(`slot AS (${slotSync('msg', { kind: 'at', at: mensaje.cupo_at })})`);
  const data = p(JSON.stringify(messageStatusData(mensaje, null, now)), 'text');
  const at = p(now, 'bigint');
  ctes.push(`ev AS (INSERT INTO eventos (${EVENT_ROW_COLS}) SELECT ${eventRow(cli, cel, p('message.status', 'text'), data, at, at)} FROM msg)`);
  if (idem) {
    // Rows another transaction is removing are skipped, not waited for; this key's row is this statement's already.
    ctes.push(`purge AS (DELETE FROM idempotencia WHERE (cliente_id, clave) IN (
      SELECT cliente_id, clave FROM idempotencia WHERE expira_at <= ${at} AND NOT (cliente_id = ${cli} AND clave = ${key})
        AND EXISTS (SELECT 1 FROM idem) LIMIT ${p(IDEM_PURGE_BATCH, 'int')} FOR UPDATE SKIP LOCKED))`);
  }
  const r = await row<{ go: boolean } & Partial<MensajeRow>>(
    c,
    `WITH ${ctes.join(',\n  ')}
    SELECT EXISTS (SELECT 1 FROM go) AS go, ${colsOf('msg')} FROM (SELECT 1) one LEFT JOIN msg ON true`,
    values,
  );
  const { go, ...inserted } = r!;
  return { go, mensaje: inserted.msg_id == null ? null : (inserted as MensajeRow) };
}

/** The row an accepted message is inserted as, and answered with (its key's kept answer is built from it before the write). */
export function acceptedRow(m: NewMensaje, cargo: AcceptedMensaje['cargo'], opts: AcceptOptions, now: number): MensajeRow {
  return {
    msg_id: m.msg_id,
    cliente_id: m.cliente_id,
    celular_id: m.celular_id,
    destinatario: m.destinatario,
    tipo: m.tipo,
    modo: m.modo,
    estado: 'pendiente',
    texto: m.texto,
    media: m.media ? JSON.stringify(m.media) : null,
    gateway_msg_id: null,
    error: null,
    error_clase: null,
    cobrado: cargo ? 1 : 0,
    cargo,
    payload: JSON.stringify(m.payload),
    intentos: 0,
    proximo_intento_at: now,
    lease_until: null,
    cupo_at: opts.slot?.holdUntil ?? null,
    expira_at: m.expira_at,
    created_at: now,
    enviado_at: null,
    entregado_at: null,
    leido_at: null,
    reintento_de: m.reintento_de ?? null,
  };
}

/** MessagesStore.acceptMensaje inside the caller's transaction (see the top of this file). */
export async function accept(c: Client, m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> {
  const read = await readAccept(c, m, opts, now);
  // A key bound already is answered as a repeat, whatever else would refuse.
  if (read?.ligada) return { ok: false, reason: 'idempotencia' };
  let counts = read?.cuentas ?? [];
  for (let attempt = 1; ; attempt++) {
    const verdict = read
      ? acceptVerdict(
          {
            saldoCelular: read.saldo_actual,
            saldoGlobal: read.saldo_global,
            pendientes: read.pendientes,
            capHit: opts.slot && counts.length > 0 ? opts.slot.decide(counts) : null,
          },
          { charge: opts.charge, queued: m.modo === 'cola', maxPending: opts.maxPending },
        )
      : ({ ok: false, reason: 'celular' } as const);
    if (!verdict.ok) {
      // The read's snapshot may predate a binding made while this waited for the key's lock.
      if (opts.idem && (await keyBound(c, m.cliente_id, opts.idem.clave, now))) return { ok: false, reason: 'idempotencia' };
      return verdict;
    }
    const cargo = verdict.cargo;
    const paid = recipe.charge(m, cargo, { saldoCelular: read!.saldo_actual, saldoGlobal: read!.saldo_global });
    const planned: AcceptedMensaje = {
      ok: true,
      cargo,
      saldo_celular: paid.saldoCelular,
      saldo_global: paid.saldoGlobal,
      mensaje: acceptedRow(m, cargo, opts, now),
    };
    const w = await writeAccept(c, m, opts, now, counts, paid, planned);
    if (w.mensaje) return { ...planned, mensaje: w.mensaje };
    if (w.go) return { ok: false, reason: 'idempotencia' };
    // A slot taken by a transaction that held the line's lock before this one: counted now, it cannot change again.
    if (attempt > 1) throw new Error(`caps slots of line ${m.celular_id} changed under its lock`);
    counts = await recount(c, m, opts, now);
  }
}
