import { iso } from '../../core/time/clock.js';
import { AppError } from '../../core/api/errors.js';
import { MESSAGE_STATUS_FIELDS, type MessageStatusField } from '../../core/events/event-data.js';
import { PARKED_PER_LINE, parkedOrder, receiptSources, receiptStep } from '../../core/billing/ledger.js';
import * as recipe from '../../core/billing/recipes.js';
import { slotsForgottenBefore } from '../../core/sending/caps.js';
import { batched } from '../../core/queue/turns.js';
import type { MessagesOwn, ReceiptOutcome } from '../../core/ports/messages.js';
import type { CancelResult } from '../../core/ports/queue.js';
import type { ErrorClase, MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import { balanceAdd, slotSet } from '../recipe-sql.js';
import { arrays, type Client, type Db, LOCK, ph, row, rows } from './db.js';
import { COLS, colsOf, FIXED, type Fixed, writeMovement } from './messages.js';
import { slotSync } from './state-paths.js';
import { EVENT_ROW_COLS, eventRow } from './webhooks.js';

/**
 * A message's changes after acceptance, in PostgreSQL (D-138): the send's
 * record, a failure, a delivery or read receipt, a receipt parked and the
 * parked ones applied. Each is ONE named statement below that takes arrays,
 * one element per message: a single call is a batch of one through the same
 * text, and the group-commit turns (core/queue/turns.ts) only decide how
 * many go in one call. The locks they take and the parked-receipt protocol
 * (D-87) are in docs/store-locks.md.
 */

const SENT_SLOT = recipe.slotOn('sent', 0);
const FAIL_SLOT = recipe.slotOn('fail');

/** A `message.status` event's data from row `s` (core's one list of fields, in its order), a step's own values in `own`. */
const statusJson = (own: Partial<Record<MessageStatusField, string>>) =>
  `json_build_object(${MESSAGE_STATUS_FIELDS.map((f) => `'${f}', ${own[f] ?? `s.${f}`}`).join(', ')})::text`;

/** `message.status` rows into the log, one per row of `from` (its FROM and order); a delivery when the client subscribes. */
const statusEvents = (own: Partial<Record<MessageStatusField, string>>, at: string, from: string) =>
  `INSERT INTO eventos (${EVENT_ROW_COLS}) SELECT ${eventRow('s.cliente_id', 's.celular_id', `'message.status'`, statusJson(own), at, at)} ${from}`;

/** A batch's messages, then its counts rows, locked in the order one message's triggers take them (docs/store-locks.md). */
const SENT_LOCKS = `own AS MATERIALIZED (
    SELECT x.seq FROM mensajes x WHERE x.msg_id IN (SELECT msg_id FROM m) AND (SELECT COUNT(*) FROM line) >= 0 AND cardinality($1::text[]) > 1
    ORDER BY x.seq FOR NO KEY UPDATE),
  -- The counts rows of each message's old and new state, lines, quarters, then hours; one message's triggers take them in this order.
  -- (A batch of one skips these and \`own\`, so \`sent\` names \`line\` itself: its lock comes first whatever the batch.)
  lineas AS MATERIALIZED (
    SELECT 1 FROM conteos_mensajes k JOIN (SELECT DISTINCT cliente_id, celular_id FROM m) r USING (cliente_id, celular_id)
    WHERE k.estado IN ('pendiente', 'enviado') AND (SELECT COUNT(*) FROM own) >= 0 AND cardinality($1::text[]) > 1
    ORDER BY k.cliente_id, k.celular_id, k.estado = 'enviado' FOR UPDATE OF k),
  cuartos AS MATERIALIZED (
    SELECT 1 FROM conteos_cuartos k JOIN (SELECT DISTINCT cliente_id, created_at / 900000 AS cuarto FROM m) r USING (cliente_id, cuarto)
    WHERE k.estado IN ('pendiente', 'enviado') AND (SELECT COUNT(*) FROM lineas) >= 0 AND cardinality($1::text[]) > 1
    ORDER BY k.cliente_id, k.cuarto, k.estado = 'enviado' FOR UPDATE OF k),
  horas AS MATERIALIZED (
    SELECT 1 FROM conteos_horas k JOIN (SELECT DISTINCT cliente_id, created_at / 3600000 AS hora FROM m) r USING (hora, cliente_id)
    WHERE k.estado IN ('pendiente', 'enviado') AND (SELECT COUNT(*) FROM cuartos) >= 0 AND cardinality($1::text[]) > 1
    ORDER BY k.hora, k.cliente_id, k.estado = 'enviado' FOR UPDATE OF k),
`;

/**
 * Sends recorded. Parameters, one element per message: msg_ids, gateway ids,
 * nows, slot times, nows as ISO dates; then the gateway id lock's first key
 * and the time before which the lines' slots are forgotten
 * (core/sending/caps.ts). Returns the rows sent with their place (`orden`)
 * and the receipts parked for them (`acuses`, read after the line's lock).
 */
function sentStatement(batch: boolean): string {
  return `-- The arrays and the slots' bound through a CTE, as RECEIPT_ADVANCE: a custom plan that sees them costs less than the
  -- generic one, so PostgreSQL planned every call again (D-149).
  WITH a AS MATERIALIZED (SELECT $1::text[] AS a1, $2::text[] AS a2, $3::bigint[] AS a3, $4::bigint[] AS a4, $5::text[] AS a5, $7::bigint AS olvido),
  i AS MATERIALIZED (
    SELECT i.* FROM a, unnest(a1, a2, a3, a4, a5) WITH ORDINALITY AS i(msg_id, gid, now, slot, fecha, orden)),
  g AS MATERIALIZED (SELECT pg_advisory_xact_lock($6::int, h) FROM (SELECT DISTINCT hashtext(gid) AS h FROM i) s ORDER BY h),
  m AS MATERIALIZED (
    SELECT x.msg_id, x.cliente_id, x.celular_id, x.modo, x.created_at FROM mensajes x
    WHERE x.msg_id IN (SELECT msg_id FROM i) AND (SELECT COUNT(*) FROM g) >= 0),
  line AS MATERIALIZED (
    SELECT c.id FROM celulares c WHERE c.id IN (SELECT celular_id FROM m) ORDER BY c.id FOR NO KEY UPDATE),
${batch ? SENT_LOCKS : ''}  sent AS (
    UPDATE mensajes x SET estado = 'enviado', gateway_msg_id = i.gid, enviado_at = i.now, ${slotSet(SENT_SLOT, 'i.slot')}, error = NULL, intentos = x.intentos + 1
    FROM i WHERE x.msg_id = i.msg_id AND x.estado = 'pendiente' AND (SELECT COUNT(*) FROM line) >= 0${batch ? ' AND (SELECT COUNT(*) FROM horas) >= 0' : ''}
    RETURNING ${colsOf('x')}, x.seq, i.orden, i.fecha),
  -- Its side rows (migration 14): no longer pending, its slot from now, its gateway id; a few of each line's old slots go.
  pend AS (DELETE FROM mensajes_pendientes p USING sent s WHERE p.seq = s.seq),
  slot AS (${slotSync('sent', SENT_SLOT.cupo_at)}),
  gw AS (
    INSERT INTO ids_gateway (gateway_msg_id, celular_id, msg_id) SELECT gateway_msg_id, celular_id, msg_id FROM sent ON CONFLICT DO NOTHING),
  old AS (
    DELETE FROM cupos WHERE seq IN (
      SELECT f.seq FROM (SELECT DISTINCT celular_id FROM sent) l CROSS JOIN LATERAL (
        SELECT k.seq FROM cupos k WHERE k.celular_id = l.celular_id AND k.cupo_at < (SELECT olvido FROM a)
          AND k.seq NOT IN (SELECT seq FROM sent) LIMIT 16 FOR UPDATE SKIP LOCKED) f)),
  -- recipes.ts queueDelta: each queued message left its line's queue, never below zero.
  down AS (
    UPDATE celulares c SET pendientes = GREATEST(c.pendientes - d.n, 0)
    FROM (SELECT celular_id, COUNT(*) AS n FROM sent WHERE modo = 'cola' GROUP BY celular_id) d WHERE c.id = d.celular_id AND c.pendientes > 0),
  ev AS (${statusEvents({ estado_anterior: `'pendiente'`, fecha: 's.fecha' }, 's.enviado_at', 'FROM sent s ORDER BY s.orden')})
  SELECT ${COLS}, orden, acuses_al_dia(gateway_msg_id, celular_id) AS acuses FROM sent`;
}
export const MARK_SENT = sentStatement(true);
/** MARK_SENT for one send: without `own` and the counts rows' locks, which only a batch takes (D-149). */
const MARK_SENT_ONE = sentStatement(false);

/** A batch's counts rows, locked in the order one message's triggers take them (docs/store-locks.md). */
const RECEIPT_COUNT_LOCKS = `-- The counts rows of each moved message's old and new state, lines, quarters, then hours, each in the order of the states;
  -- one message's triggers take them in this order.
  lineas AS MATERIALIZED (
    SELECT 1 FROM conteos_mensajes k JOIN (SELECT DISTINCT cliente_id, celular_id FROM mv) x USING (cliente_id, celular_id)
    WHERE k.estado IN (SELECT estado FROM mv UNION SELECT nuevo FROM mv) AND cardinality($1::text[]) > 1
    ORDER BY k.cliente_id, k.celular_id, array_position(ARRAY['pendiente', 'enviado', 'entregado', 'leido', 'error'], k.estado) FOR UPDATE OF k),
  cuartos AS MATERIALIZED (
    SELECT 1 FROM conteos_cuartos k JOIN (SELECT DISTINCT cliente_id, created_at / 900000 AS cuarto FROM mv) x USING (cliente_id, cuarto)
    WHERE k.estado IN (SELECT estado FROM mv UNION SELECT nuevo FROM mv) AND (SELECT COUNT(*) FROM lineas) >= 0 AND cardinality($1::text[]) > 1
    ORDER BY k.cliente_id, k.cuarto, array_position(ARRAY['pendiente', 'enviado', 'entregado', 'leido', 'error'], k.estado) FOR UPDATE OF k),
  horas AS MATERIALIZED (
    SELECT 1 FROM conteos_horas k JOIN (SELECT DISTINCT cliente_id, created_at / 3600000 AS hora FROM mv) x USING (hora, cliente_id)
    WHERE k.estado IN (SELECT estado FROM mv UNION SELECT nuevo FROM mv) AND (SELECT COUNT(*) FROM cuartos) >= 0 AND cardinality($1::text[]) > 1
    ORDER BY k.hora, k.cliente_id, array_position(ARRAY['pendiente', 'enviado', 'entregado', 'leido', 'error'], k.estado) FOR UPDATE OF k),
`;

/**
 * Delivery and read receipts. Parameters, one element per receipt: gateway
 * ids, lines, receipts, nows, nows as ISO dates; then the receipts' sources
 * (ledger.ts receiptSources) as one element per step: the receipt's place,
 * the state it starts from, the step's state, the state before the step.
 * Returns a row per receipt whose line has a message of that id: its place
 * (`r_orden`), `hallado`, and the moved row (null when it moved nothing).
 */
function receiptStatement(batch: boolean): string {
  return `-- The arrays through a CTE: every call is then planned alike and the plan is kept (unnest over the
  -- parameters themselves was planned again on each call, for as much CPU as the statement).
  WITH a AS MATERIALIZED (SELECT $1::text[] AS a1, $2::bigint[] AS a2, $3::text[] AS a3, $4::bigint[] AS a4, $5::text[] AS a5,
      $6::bigint[] AS a6, $7::text[] AS a7, $8::text[] AS a8, $9::text[] AS a9),
  r AS MATERIALIZED (
    SELECT r.* FROM a, unnest(a1, a2, a3, a4, a5) WITH ORDINALITY AS r(gid, celular_id, estado, now, fecha, orden)),
  path AS MATERIALIZED (
    SELECT p.* FROM a, unnest(a6, a7, a8, a9) WITH ORDINALITY AS p(orden, desde, estado, anterior, paso)),
  f AS MATERIALIZED (
    SELECT r.orden, (SELECT g.msg_id FROM ids_gateway g WHERE g.gateway_msg_id = r.gid AND g.celular_id = r.celular_id LIMIT 1) AS msg_id FROM r),
  b AS MATERIALIZED (
    SELECT f.orden, m.msg_id, m.estado, m.entregado_at, m.leido_at, m.cliente_id, m.celular_id, m.created_at
    FROM f JOIN mensajes m ON m.msg_id = f.msg_id ORDER BY m.seq FOR UPDATE OF m),
  mv AS MATERIALIZED (
    SELECT b.*, r.estado AS nuevo, r.now, r.fecha FROM b JOIN r USING (orden)
    WHERE b.estado IN (SELECT p.desde FROM path p WHERE p.orden = b.orden)),
${batch ? RECEIPT_COUNT_LOCKS : ''}  moved AS (
    UPDATE mensajes x SET estado = v.nuevo,
      entregado_at = CASE WHEN EXISTS (SELECT 1 FROM path p WHERE p.orden = v.orden AND p.desde = v.estado AND p.estado = 'entregado')
        THEN v.now ELSE x.entregado_at END,
      leido_at = CASE WHEN EXISTS (SELECT 1 FROM path p WHERE p.orden = v.orden AND p.desde = v.estado AND p.estado = 'leido')
        THEN v.now ELSE x.leido_at END
    FROM mv v WHERE x.msg_id = v.msg_id${batch ? ' AND (SELECT COUNT(*) FROM horas) >= 0' : ''}
    RETURNING ${colsOf('x')}, v.estado AS antes_estado, v.entregado_at AS antes_entregado_at, v.leido_at AS antes_leido_at,
      v.orden AS u_orden, v.now AS u_now, v.fecha AS u_fecha),
  -- One event per step, in order (a read receipt on a sent message: delivered, then read).
  ev AS (${statusEvents(
    { estado: 'p.estado', estado_anterior: 'p.anterior', fecha: 's.u_fecha' },
    's.u_now',
    'FROM moved s JOIN path p ON p.orden = s.u_orden AND p.desde = s.antes_estado ORDER BY s.u_orden, p.paso',
  )})
  SELECT b.orden AS r_orden, b.msg_id AS hallado, u.* FROM b LEFT JOIN moved u ON u.u_orden = b.orden`;
}
export const RECEIPT_ADVANCE = receiptStatement(true);
/** RECEIPT_ADVANCE for one receipt: the same statement without the counts rows' locks, which only a batch takes (D-149). */
export const RECEIPT_ADVANCE_ONE = receiptStatement(false);

/**
 * Failures: each message from the state it is in (`desde`, which guards it)
 * to error; a cancel (`libre_at`, its time) only while no claim holds it (the
 * claim's own test, under the message's lock). Parameters, one element per
 * message: msg_ids, errors, classes, desde, nows, nows as ISO dates, libre_at
 * (null: not a cancel). A send that never went out gives its slot back; one
 * the network took keeps it (recipes.ts slotOn). The refund is the caller's.
 */
export const FAIL = `WITH i AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[])
      WITH ORDINALITY AS i(msg_id, error, clase, desde, now, fecha, libre_at, orden)),
  f AS (
    UPDATE mensajes x SET estado = 'error', error = i.error, error_clase = i.clase, ${slotSet(FAIL_SLOT, 'i.now')}, cobrado = 0, error_at = i.now
    FROM i WHERE x.msg_id = i.msg_id AND x.estado = i.desde
      AND (i.libre_at IS NULL OR (x.modo = 'cola' AND (x.lease_until IS NULL OR x.lease_until <= i.libre_at)))
    RETURNING ${colsOf('x')}, x.seq, i.desde, i.now, i.fecha, i.orden),
  pend AS (DELETE FROM mensajes_pendientes p USING f WHERE p.seq = f.seq),
  slot AS (${slotSync('f', FAIL_SLOT.cupo_at)}),
  -- recipes.ts queueDelta: a queued message that was pending left its line's queue, never below zero.
  down AS (
    UPDATE celulares c SET pendientes = GREATEST(c.pendientes - d.n, 0)
    FROM (SELECT celular_id, COUNT(*) AS n FROM f WHERE modo = 'cola' AND desde = 'pendiente' GROUP BY celular_id) d
    WHERE c.id = d.celular_id AND c.pendientes > 0),
  ev AS (${statusEvents({ estado_anterior: 's.desde', fecha: 's.fecha' }, 's.now', 'FROM f s ORDER BY s.orden')})
  SELECT ${COLS}, orden FROM f`;

/**
 * Receipts parked for gateway ids no message of their line has yet.
 * Parameters, one element per receipt (distinct gateway id and receipt):
 * gateway ids, lines, receipts, errors, nows; then the time before which
 * parked receipts are expired, and a line's bound (PARKED_PER_LINE). Each
 * line is locked first, its unexpired parked rows counted after the lock by
 * acuses_de_linea (migration 26: a VOLATILE function's own snapshot); a line
 * gone or full parks nothing. Returns the places (`orden`) parked.
 */
export const PARK = `WITH i AS MATERIALIZED (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS i(gid, celular_id, estado, error, at, orden)),
  line AS MATERIALIZED (SELECT c.id FROM celulares c WHERE c.id IN (SELECT celular_id FROM i) ORDER BY c.id FOR NO KEY UPDATE),
  held AS MATERIALIZED (SELECT id, acuses_de_linea(id, $6::bigint) AS n FROM line),
  -- A few expired rows nobody claimed go, skipping any another transaction holds.
  old AS (
    DELETE FROM acuses_pendientes WHERE (gateway_msg_id, estado) IN (
      SELECT gateway_msg_id, estado FROM acuses_pendientes WHERE at < $6::bigint AND (SELECT COUNT(*) FROM held) >= 0
        AND (gateway_msg_id, estado) NOT IN (SELECT gid, estado FROM i) LIMIT 100 FOR UPDATE SKIP LOCKED)),
  ok AS MATERIALIZED (
    SELECT i.* FROM (SELECT *, row_number() OVER (PARTITION BY celular_id ORDER BY orden) AS k FROM i) i JOIN held h ON h.id = i.celular_id
    WHERE h.n + i.k <= $7::int),
  ins AS (
    INSERT INTO acuses_pendientes (gateway_msg_id, estado, error, at, celular_id) SELECT gid, estado, error, at, celular_id FROM ok
    ON CONFLICT (gateway_msg_id, estado) DO UPDATE SET error = excluded.error, at = excluded.at, celular_id = excluded.celular_id)
  SELECT orden FROM ok`;

/** Parked receipts claimed by deleting them. Parameters, one element per receipt: gateway ids, lines, receipts. */
export const CLAIM_PARKED = `DELETE FROM acuses_pendientes a USING unnest($1::text[], $2::bigint[], $3::text[]) AS i(gid, celular_id, estado)
  WHERE a.gateway_msg_id = i.gid AND (a.celular_id = i.celular_id OR a.celular_id IS NULL) AND a.estado = i.estado
  RETURNING a.gateway_msg_id AS gid, i.celular_id, a.estado, a.error`;

/** A send to record. */
export interface SentItem {
  msgId: string;
  gid: string;
  now: number;
}
/** A send's row as recorded, with the receipts parked for it (read under its line's lock). */
export type Recorded = MensajeRow & { acuses: ReceiptEstado[] };

/** MARK_SENT over `items` (distinct msg_ids): each one's row as sent with its parked receipts, or null (not pending), in order. */
export async function recordSent(db: Db, items: SentItem[]): Promise<Array<Recorded | null>> {
  const sent = await db.q<Recorded & { orden: number }>(items.length > 1 ? MARK_SENT : MARK_SENT_ONE, [
    items.map((i) => i.msgId),
    items.map((i) => i.gid),
    items.map((i) => i.now),
    items.map((i) => i.now),
    items.map((i) => iso(i.now)),
    LOCK.gatewayId,
    // The earliest: no slot a window of any of them still counts is forgotten.
    slotsForgottenBefore(Math.min(...items.map((i) => i.now))),
  ]);
  const out: Array<Recorded | null> = items.map(() => null);
  for (const { orden, ...s } of sent) out[orden - 1] = s;
  return out;
}

/** A delivery or read receipt. */
export interface ReceiptItem {
  celularId: number;
  gid: string;
  estado: Exclude<ReceiptEstado, 'error'>;
  now: number;
}
/** What a receipt did to its line's message; 'absent' when the line has no message of that gateway id (yet). */
export type Applied = ReceiptOutcome | 'absent';

type Moved = MensajeRow & {
  r_orden: number;
  hallado: string;
  antes_estado: MensajeRow['estado'];
  antes_entregado_at: number | null;
  antes_leido_at: number | null;
  u_orden: number | null;
  u_now: number | null;
  u_fecha: string | null;
};

/** RECEIPT_ADVANCE over `items` (distinct gateway ids of a line), on the pool or in a transaction: each one's outcome, in order. */
export async function advance(q: Db | Client, items: ReceiptItem[]): Promise<Applied[]> {
  const steps: [number[], string[], string[], string[]] = [[], [], [], []];
  items.forEach((it, k) => {
    for (const s of receiptSources(it.estado)) {
      let at: string = s.from;
      for (const next of s.path) {
        steps[0].push(k + 1);
        steps[1].push(s.from);
        steps[2].push(next);
        steps[3].push(at);
        at = next;
      }
    }
  });
  const params = [
    items.map((i) => i.gid),
    items.map((i) => i.celularId),
    items.map((i) => i.estado),
    items.map((i) => i.now),
    items.map((i) => iso(i.now)),
    ...steps,
  ];
  const text = items.length > 1 ? RECEIPT_ADVANCE : RECEIPT_ADVANCE_ONE;
  const found = await rows<Moved>(q, text, params);
  const out: Applied[] = items.map(() => 'absent');
  for (const r of found) {
    const { r_orden, hallado: _h, antes_estado, antes_entregado_at, antes_leido_at, u_orden: _o, u_now: _n, u_fecha: _f, ...after } = r;
    out[r_orden - 1] =
      after.msg_id === null ? null : { before: { ...after, estado: antes_estado, entregado_at: antes_entregado_at, leido_at: antes_leido_at }, after };
  }
  return out;
}

/** The rows a failure moves money on, locked in order: the clients of those that paid, then the lines. Returns the lines that exist. */
async function lockForRefund(c: Client, fs: Array<Pick<Fixed, 'cargo' | 'cliente_id' | 'celular_id'>>): Promise<Set<number>> {
  const clients = [...new Set(fs.filter((f) => f.cargo !== null).map((f) => f.cliente_id))];
  // FOR NO KEY UPDATE leaves a line's foreign-key check on the client free to proceed.
  if (clients.length > 0) await c.query('SELECT 1 FROM clientes WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE', [clients]);
  const lines = [...new Set(fs.map((f) => f.celular_id))];
  const held = await rows<{ id: number }>(c, 'SELECT id FROM celulares WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE', [lines]);
  return new Set(held.map((l) => Number(l.id)));
}

/** A failure to write; `m.cobrado` is what it paid (only a failure changes it, and a failure meanwhile fails the guard). */
interface FailItem {
  m: Pick<MensajeRow, 'msg_id' | 'estado' | 'cobrado'>;
  error: string;
  clase: ErrorClase;
  now: number;
  lineExists: boolean;
  /** A cancel: only while no claim holds it at this time. */
  libreAt?: number;
}

/** FAIL over `items` (distinct messages) and their refunds; the caller holds lockForRefund's locks. Each one's row and refund, or null. */
async function failLocked(c: Client, items: FailItem[]): Promise<Array<{ after: MensajeRow; reembolso: number } | null>> {
  const failed = await rows<MensajeRow & { orden: number }>(
    c,
    FAIL,
    arrays(items, 7, (i) => [i.m.msg_id, i.error, i.clase, i.m.estado, i.now, iso(i.now), i.libreAt ?? null]),
  );
  const out: Array<{ after: MensajeRow; reembolso: number } | null> = items.map(() => null);
  for (const { orden, ...after } of failed.sort((a, b) => a.orden - b.orden)) {
    const it = items[orden - 1]!;
    const back = recipe.refund({ ...after, cobrado: it.m.cobrado }, after.cargo === 'celular' && it.lineExists);
    if (back) {
      // A deleted client has no balance left to refund to.
      const r = await row<{ saldo: number }>(c, balanceAdd(back.balance, ph), [back.monto, back.balance.id]);
      if (r) await writeMovement(c, back.movement(r.saldo), it.now);
    }
    out[orden - 1] = { after, reembolso: back?.monto ?? 0 };
  }
  return out;
}

/** failMensaje over `items` (distinct msg_ids), one transaction: each pending message ended in error with its refund, or null. */
export async function failPending(db: Db, items: Array<{ msgId: string; error: string; clase: ErrorClase; now: number }>): Promise<Array<MensajeRow | null>> {
  return db.tx(async (c) => {
    const fixed = await rows<Fixed & { cobrado: number }>(c, `SELECT ${FIXED}, cobrado FROM mensajes WHERE msg_id = ANY($1::text[])`, [
      items.map((i) => i.msgId),
    ]);
    if (fixed.length === 0) return items.map(() => null);
    const byId = new Map(fixed.map((f) => [f.msg_id, f]));
    const lines = await lockForRefund(c, fixed);
    const todo = items.filter((i) => byId.has(i.msgId));
    // Only a pending message fails here: one sent meanwhile stays sent and charged (the guard, under the message's lock).
    const done = await failLocked(
      c,
      todo.map((i) => {
        const f = byId.get(i.msgId)!;
        return { m: { ...f, estado: 'pendiente' }, error: i.error, clase: i.clase, now: i.now, lineExists: lines.has(Number(f.celular_id)) };
      }),
    );
    const after = new Map(todo.map((i, k) => [i.msgId, done[k]?.after ?? null]));
    return items.map((i) => after.get(i.msgId) ?? null);
  });
}

/** A failure the network reports for a sent message, in the caller's transaction holding its refund's locks. */
async function failSent(c: Client, celularId: number, gid: string, now: number, error: string | undefined, lineExists: boolean): Promise<ReceiptOutcome> {
  const before = await row<MensajeRow>(
    c,
    `SELECT ${COLS} FROM mensajes WHERE msg_id = (SELECT msg_id FROM ids_gateway WHERE gateway_msg_id = $1 AND celular_id = $2 LIMIT 1) FOR UPDATE`,
    [gid, celularId],
  );
  if (!before || receiptStep(before.estado, 'error') !== 'fail') return null;
  const [done] = await failLocked(c, [{ m: before, error: error ?? 'the network reported the message as failed', clase: 'fallido', now, lineExists }]);
  return done ? { before, after: done.after } : null;
}

/** The message of a line with a gateway id: what decides which rows its change locks. */
const FIXED_BY_GATEWAY = `SELECT ${FIXED} FROM mensajes WHERE msg_id = (SELECT msg_id FROM ids_gateway WHERE gateway_msg_id = $1 AND celular_id = $2 LIMIT 1)`;
const fixedByGateway = (q: Db | Client, gid: string, celularId: number) => row<Fixed>(q, FIXED_BY_GATEWAY, [gid, celularId]);

/** A failure receipt: its refund needs the client's and line's locks first, so a transaction. */
async function failByReceipt(db: Db, celularId: number, gid: string, now: number, error: string | undefined): Promise<Applied> {
  return db.tx(async (c): Promise<Applied> => {
    // Only the reporting line's message: another line's (a secret leaked from one instance) is not this receipt's to change.
    const f = await fixedByGateway(c, gid, celularId);
    if (!f) return 'absent';
    const lines = await lockForRefund(c, [f]);
    return failSent(c, celularId, gid, now, error, lines.has(Number(celularId)));
  });
}

/** PARK over `items` (distinct gateway id and receipt): whether each was parked (false: its line is gone or full). */
export async function park(db: Db, items: Array<{ celularId: number; gid: string; estado: ReceiptEstado; now: number; error?: string }>): Promise<boolean[]> {
  const parked = await db.q<{ orden: number }>(PARK, [
    ...arrays(items, 5, (i) => [i.gid, i.celularId, i.estado, i.error ?? null, i.now]),
    recipe.parkedExpiredBefore(Math.max(...items.map((i) => i.now))),
    PARKED_PER_LINE,
  ]);
  const ok = new Set(parked.map((p) => Number(p.orden)));
  return items.map((_, k) => ok.has(k + 1));
}

/**
 * The receipts parked for sends just recorded (read by MARK_SENT under their
 * lines' locks) claimed and applied, one transaction for all: failures
 * first, then deliveries, then reads (ledger.ts parkedOrder), each kind one
 * statement. Each message as they left it, in order.
 */
export async function applyParked(db: Db, sends: Array<{ sent: MensajeRow; parked: ReceiptEstado[]; now: number }>): Promise<MensajeRow[]> {
  const todo = sends.filter((s) => s.parked.length > 0);
  if (todo.length === 0) return sends.map((s) => s.sent);
  return db.tx(async (c) => {
    // A parked failure means a refund: its rows are locked before the parked rows are claimed.
    const failing = todo.filter((s) => s.parked.includes('error')).map((s) => s.sent);
    const lines = failing.length > 0 ? await lockForRefund(c, failing) : new Set<number>();
    // Claimed by deleting them: a receipt that saw the send after parking finds its row gone and leaves it to us.
    // Only those read by the record: one parked since then is its receipt's own to apply (it sees the send when it looks again).
    const wanted = todo.flatMap((s) => s.parked.map((estado) => ({ s: s.sent, estado })));
    const claimed = await rows<{ gid: string; celular_id: number; estado: ReceiptEstado; error: string | null }>(
      c,
      CLAIM_PARKED,
      arrays(wanted, 3, (w) => [w.s.gateway_msg_id, w.s.celular_id, w.estado]),
    );
    const sendOf = new Map(todo.map((s) => [`${s.sent.gateway_msg_id}:${s.sent.celular_id}`, s]));
    const ordered = parkedOrder(claimed);
    const fails = ordered.filter((p) => p.estado === 'error');
    for (const p of fails) {
      const s = sendOf.get(`${p.gid}:${p.celular_id}`)!;
      await failSent(c, s.sent.celular_id, p.gid, s.now, p.error ?? undefined, lines.has(Number(s.sent.celular_id)));
    }
    for (const estado of ['entregado', 'leido'] as const) {
      const its = ordered.filter((p) => p.estado === estado).map((p) => ({ p, s: sendOf.get(`${p.gid}:${p.celular_id}`)! }));
      if (its.length > 0)
        await advance(
          c,
          its.map(({ p, s }) => ({ celularId: s.sent.celular_id, gid: p.gid, estado, now: s.now })),
        );
    }
    const after = await rows<MensajeRow>(c, `SELECT ${COLS} FROM mensajes WHERE msg_id = ANY($1::text[])`, [todo.map((s) => s.sent.msg_id)]);
    const byId = new Map(after.map((m) => [m.msg_id, m]));
    return sends.map((s) => byId.get(s.sent.msg_id) ?? s.sent);
  });
}

/** Sends recorded (distinct msg_ids): MARK_SENT for all, then the parked receipts of those that had some. */
export async function markSent(db: Db, items: SentItem[]): Promise<Array<MensajeRow | null>> {
  const recorded = await recordSent(db, items);
  const sends = recorded.flatMap((r, k) => (r ? [{ sent: stripAcuses(r), parked: r.acuses, now: items[k]!.now }] : []));
  let after: MensajeRow[];
  try {
    after = await applyParked(db, sends);
  } catch (err) {
    if (err instanceof AppError || sends.length <= 1) throw err;
    // The records are committed: a rerun of the turn would find them sent and answer null for all. Each send's parked
    // receipts alone instead; one that still fails answers its row as sent, its receipts left parked (as a send alone's would).
    after = [];
    for (const x of sends) after.push(...(await applyParked(db, [x]).catch(() => [x.sent])));
  }
  const byId = new Map(after.map((m) => [m.msg_id, m]));
  return items.map((i) => byId.get(i.msgId) ?? null);
}

const stripAcuses = ({ acuses: _a, ...m }: Recorded): MensajeRow => m;

/**
 * QueueStore.cancelQueued: FAIL with the cancel's guard. A claim locks the
 * message and tests its lease in one statement (queue.ts), so whichever locks
 * the row second sees the other's write.
 */
export async function cancelQueued(db: Db, msgId: string, error: string, now: number): Promise<CancelResult> {
  return db.tx(async (c): Promise<CancelResult> => {
    const f = await row<Fixed & { cobrado: number }>(c, `SELECT ${FIXED}, cobrado FROM mensajes WHERE msg_id = $1`, [msgId]);
    if (!f) return { ok: false, reason: 'no_pendiente' };
    if (f.modo !== 'cola') return { ok: false, reason: 'directo' };
    const lines = await lockForRefund(c, [f]);
    const [done] = await failLocked(c, [
      { m: { ...f, estado: 'pendiente' }, error, clase: 'cancelado', now, lineExists: lines.has(Number(f.celular_id)), libreAt: now },
    ]);
    if (done) return { ok: true, mensaje: done.after, reembolso: done.reembolso };
    const left = await row<{ estado: string }>(c, 'SELECT estado FROM mensajes WHERE msg_id = $1', [msgId]);
    return { ok: false, reason: left?.estado === 'pendiente' ? 'enviando' : 'no_pendiente' };
  });
}

/**
 * QueueStore.expireDue's ending: FAIL with the cancel's guard at `now` and class `caducado`, in one transaction
 * holding the refunds' locks. Two nodes sweeping the same messages take the same locks in order; the second's
 * FAIL finds them no longer pending and ends none again.
 */
export async function expireQueued(db: Db, msgIds: string[], error: string, now: number): Promise<MensajeRow[]> {
  return db.tx(async (c) => {
    const fixed = await rows<Fixed & { cobrado: number }>(c, `SELECT ${FIXED}, cobrado FROM mensajes WHERE msg_id = ANY($1::text[]) AND modo = 'cola'`, [
      msgIds,
    ]);
    if (fixed.length === 0) return [];
    const lines = await lockForRefund(c, fixed);
    const done = await failLocked(
      c,
      fixed.map((f) => ({
        m: { ...f, estado: 'pendiente' as const },
        error,
        clase: 'caducado' as const,
        now,
        lineExists: lines.has(Number(f.celular_id)),
        libreAt: now,
      })),
    );
    return done.flatMap((d) => (d ? [d.after] : []));
  });
}

/** markSent, failMensaje and receipt over one pool. */
export function transitions(db: Db): Pick<MessagesOwn, 'markSent' | 'failMensaje' | 'receipt'> {
  const sendTurn = batched(
    (i: SentItem) => i.msgId,
    (items) => markSent(db, items),
  );
  const receiptTurn = batched(
    (i: ReceiptItem) => `${i.celularId}:${i.gid}`,
    (items) => advance(db, items),
  );
  /** This node's sends being recorded, by gateway id: waiting for a turn they hold no lock yet (see `receipt`). */
  const sending = new Map<string, Promise<void>>();
  return {
    markSent(msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
      const p = sendTurn({ msgId, gid, now });
      const settled = p.then(
        () => {},
        () => {},
      );
      sending.set(gid, settled);
      void settled.then(() => sending.get(gid) === settled && sending.delete(gid));
      return p;
    },
    async failMensaje(msgId: string, error: string, clase: ErrorClase, now: number): Promise<MensajeRow | null> {
      return (await failPending(db, [{ msgId, error, clase, now }]))[0]!;
    },
    async receipt(celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
      const apply = async (): Promise<Applied> =>
        estado === 'error' ? failByReceipt(db, celularId, gid, now, error) : (await advance(db, [{ celularId, gid, estado, now }]))[0]!;
      // This node's send of that id still being recorded: waited for first, so the first look finds the message.
      await sending.get(gid);
      let done = estado === 'error' ? await apply() : await receiptTurn({ celularId, gid, estado, now });
      if (done === 'absent') {
        // A send being recorded holds its id's lock to its commit: waited for, then looked for again (docs/store-locks.md).
        await sending.get(gid);
        await db.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK.gatewayId, gid]);
        done = await apply();
      }
      if (done !== 'absent') return done;
      if (!(await park(db, [{ celularId, gid, estado, now, error }]))[0]) return null;
      // Looked for again after the parked row committed: a send whose record held the line first is seen here.
      const f = await fixedByGateway(db, gid, celularId);
      if (!f) return 'parked';
      return db.tx(async (c): Promise<ReceiptOutcome> => {
        const lines = estado === 'error' ? await lockForRefund(c, [f]) : new Set<number>();
        const mine = await row(c, 'DELETE FROM acuses_pendientes WHERE gateway_msg_id = $1 AND estado = $2 AND celular_id = $3 RETURNING 1', [
          gid,
          estado,
          celularId,
        ]);
        // Gone: the send's record claimed it and applied it.
        if (!mine) return 'parked';
        if (estado === 'error') return failSent(c, celularId, gid, now, error, lines.has(Number(celularId)));
        const [r] = await advance(c, [{ celularId, gid, estado, now }]);
        return r === 'absent' ? null : r!;
      });
    },
  };
}
