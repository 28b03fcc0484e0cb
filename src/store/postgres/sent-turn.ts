import { iso } from '../../core/time/clock.js';
import { slotsForgottenBefore } from '../../core/sending/caps.js';
import { AppError } from '../../core/api/errors.js';
import type { MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import type { Recorded } from './transitions.js';
import * as recipe from '../../core/billing/recipes.js';
import { Turns, settle } from '../../core/queue/turns.js';
import { slotSet } from '../recipe-sql.js';
import { type Db, LOCK } from './db.js';
import { COLS, colsOf } from './messages.js';
import { forgetSlotsOfLines, leavePending, mapGateway, slotSync } from './state-paths.js';
import { fieldOf, statusData } from './status-sql.js';
import { eventInsertOf } from './webhooks.js';

/**
 * Sends recorded together (group commit, core/queue/turns.ts): the markSent calls
 * that arrive while one runs go in the next turn, one autocommitted
 * statement over arrays for all of them, which returns each message's
 * parked receipts too, read after it holds the message's line (the
 * parked-receipt protocol at the top of transitions.ts, D-87). A message
 * with parked receipts has them applied in a transaction of its own, as a
 * send recorded alone has.
 *
 * The statement does what markSentSql does for each message, and takes its
 * locks in the same order, each kind in ascending order so that turns and
 * single statements cannot wait on each other in a cycle: the gateway ids'
 * advisory locks (by hash), the messages' lines (a queued message's counter
 * goes down by as many as the turn has on each line; every message's parked
 * receipts are read under its line's lock), the messages (by seq), then the
 * counts rows the trigger will take one message at a time: taken first,
 * lines then quarters, each in order, and a message's old state before its
 * new one, as one message's trigger takes them. Each CTE's scan is gated on
 * the whole of the one before it (a count, which reads it all).
 *
 * A turn whose statement fails for any reason but the store itself takes
 * each message alone, in arrival order. A message named twice in a turn
 * (two nodes' recoveries racing) goes alone after the turn, so the first
 * call records it and the second finds it sent, as one after another would.
 */

const SLOT = recipe.slotOn('sent', 0);

/**
 * Parameters: msg_ids, gateway ids, nows, slot times, nows as ISO dates (one
 * element per message, in arrival order), the gateway id lock's first key,
 * the time before which the lines' slots are forgotten (core/sending/caps.ts).
 * Returns the rows sent, each with its place in the turn (`orden`) and the
 * receipts parked for it (`acuses`, read per row of `sent`: after every lock).
 */
let sql = '';
// Built on first use: messages.ts, which gives the columns, imports transitions.ts, which imports this module.
const markSentTurnSql = () =>
  (sql ||= `WITH i AS MATERIALIZED (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[]) WITH ORDINALITY AS i(msg_id, gid, now, slot, fecha, orden)),
  g AS MATERIALIZED (SELECT pg_advisory_xact_lock($6::int, h) FROM (SELECT DISTINCT hashtext(gid) AS h FROM i) s ORDER BY h),
  m AS MATERIALIZED (
    SELECT x.msg_id, x.cliente_id, x.celular_id, x.modo, x.created_at FROM mensajes x
    WHERE x.msg_id IN (SELECT msg_id FROM i) AND (SELECT COUNT(*) FROM g) >= 0),
  line AS MATERIALIZED (
    SELECT c.id FROM celulares c WHERE c.id IN (SELECT celular_id FROM m) ORDER BY c.id FOR NO KEY UPDATE),
  own AS MATERIALIZED (
    SELECT x.seq FROM mensajes x WHERE x.msg_id IN (SELECT msg_id FROM m) AND (SELECT COUNT(*) FROM line) >= 0 ORDER BY x.seq FOR NO KEY UPDATE),
  -- The counts rows of each message's old and new state (the counts' trigger), lines, quarters, then hours (D-106).
  lineas AS MATERIALIZED (
    SELECT 1 FROM conteos_mensajes k JOIN (SELECT DISTINCT cliente_id, celular_id FROM m) r USING (cliente_id, celular_id)
    WHERE k.estado IN ('pendiente', 'enviado') AND (SELECT COUNT(*) FROM own) >= 0
    ORDER BY k.cliente_id, k.celular_id, k.estado = 'enviado' FOR UPDATE OF k),
  cuartos AS MATERIALIZED (
    SELECT 1 FROM conteos_cuartos k JOIN (SELECT DISTINCT cliente_id, created_at / 900000 AS cuarto FROM m) r USING (cliente_id, cuarto)
    WHERE k.estado IN ('pendiente', 'enviado') AND (SELECT COUNT(*) FROM lineas) >= 0
    ORDER BY k.cliente_id, k.cuarto, k.estado = 'enviado' FOR UPDATE OF k),
  horas AS MATERIALIZED (
    SELECT 1 FROM conteos_horas k JOIN (SELECT DISTINCT cliente_id, created_at / 3600000 AS hora FROM m) r USING (hora, cliente_id)
    WHERE k.estado IN ('pendiente', 'enviado') AND (SELECT COUNT(*) FROM cuartos) >= 0
    ORDER BY k.hora, k.cliente_id, k.estado = 'enviado' FOR UPDATE OF k),
  sent AS (
    UPDATE mensajes x SET estado = 'enviado', gateway_msg_id = i.gid, enviado_at = i.now, ${slotSet(SLOT, 'i.slot')}, error = NULL, intentos = x.intentos + 1
    FROM i WHERE x.msg_id = i.msg_id AND x.estado = 'pendiente' AND (SELECT COUNT(*) FROM horas) >= 0
    RETURNING ${colsOf('x')}, x.seq, i.orden, i.fecha),
  -- Its access paths (state-paths.ts): no longer pending, its slot from now, its gateway id; and a few of each line's old slots go.
  pend AS (${leavePending('sent')}),
  slot AS (${slotSync('sent', SLOT.cupo_at)}),
  gw AS (${mapGateway('sent')}),
  old AS (${forgetSlotsOfLines('sent', '$7::bigint')}),
  -- recipes.ts queueDelta: each queued message (modo 'cola') left its line's queue, never below zero (as pendingDown, once per message).
  down AS (
    UPDATE celulares c SET pendientes = CASE WHEN c.pendientes > d.n THEN c.pendientes - d.n ELSE 0 END
    FROM (SELECT celular_id, COUNT(*) AS n FROM sent WHERE modo = 'cola' GROUP BY celular_id) d WHERE c.id = d.celular_id AND c.pendientes > 0),
  ev AS (${eventInsertOf(
    {
      cliente: 's.cliente_id',
      celular: 's.celular_id',
      evento: `'message.status'::text`,
      data: statusData(fieldOf('s', { estado_anterior: `'pendiente'::text`, fecha: 's.fecha' })),
      fecha: 's.enviado_at',
      recordedAt: 's.enviado_at',
    },
    'FROM sent s ORDER BY s.orden',
  )})
  SELECT ${COLS}, orden, acuses_al_dia(gateway_msg_id, celular_id) AS acuses FROM sent`);

/** One markSent call of a turn. */
interface Pending {
  msgId: string;
  gid: string;
  now: number;
}

/** The single path the turn falls back on and finishes with (transitions.ts). */
export interface SentSingle {
  alone(db: Db, msgId: string, gid: string, now: number): Promise<MensajeRow | null>;
  applyParked(db: Db, sent: MensajeRow, gid: string, parked: ReceiptEstado[], now: number): Promise<MensajeRow | null>;
}

/** The turn's statement: each message's row as sent with its parked receipts, or null (not pending), in order. */
async function recordAll(db: Db, items: Pending[]): Promise<Array<Recorded | null>> {
  const sent = await db.q<Recorded & { orden: number }>(markSentTurnSql(), [
    items.map((i) => i.msgId),
    items.map((i) => i.gid),
    items.map((i) => i.now),
    items.map((i) => i.now),
    items.map((i) => iso(i.now)),
    LOCK.gatewayId,
    // The earliest: no slot a window of any of the turn's messages still counts is forgotten.
    slotsForgottenBefore(Math.min(...items.map((i) => i.now))),
  ]);
  const out: Array<Recorded | null> = items.map(() => null);
  for (const { orden, ...s } of sent) out[orden - 1] = s;
  return out;
}

/** Works one turn: the first call for each message in one statement, then each's parked receipts if any; repeats alone after. */
async function turn(db: Db, single: SentSingle, items: Pending[]): Promise<Array<PromiseSettledResult<MensajeRow | null>>> {
  const seen = new Set<string>();
  const first = items.map((i) => !seen.has(i.msgId) && !!seen.add(i.msgId));
  const batch = items.filter((_, k) => first[k]);
  const out: Array<PromiseSettledResult<MensajeRow | null>> = [];
  if (batch.length === 1) {
    out.push(await settle(() => single.alone(db, batch[0]!.msgId, batch[0]!.gid, batch[0]!.now)));
  } else {
    let recorded: Array<Recorded | null> | null = null;
    try {
      recorded = await recordAll(db, batch);
    } catch (err) {
      // A store that cannot be written fails every call at once.
      if (err instanceof AppError) throw err;
    }
    if (recorded === null) {
      // One bad message must not fail the others: each alone, in arrival order (each line's records keep their order).
      for (const i of batch) out.push(await settle(() => single.alone(db, i.msgId, i.gid, i.now)));
    } else {
      const after = new Map<string, PromiseSettledResult<MensajeRow | null>>();
      for (const [k, r] of recorded.entries()) {
        if (!r) continue;
        const { acuses, ...sent } = r;
        after.set(sent.msg_id, await settle(() => single.applyParked(db, sent, batch[k]!.gid, acuses, batch[k]!.now)));
      }
      for (const i of batch) out.push(after.get(i.msgId) ?? { status: 'fulfilled', value: null });
    }
  }
  // A message named again: after its first call committed, alone, in arrival order.
  let b = 0;
  const results: Array<PromiseSettledResult<MensajeRow | null>> = [];
  for (const [k, i] of items.entries()) results.push(first[k] ? out[b++]! : await settle(() => single.alone(db, i.msgId, i.gid, i.now)));
  return results;
}

/** Group commit for MessagesStore.markSent: one turn in flight per node, up to `max` calls in it. */
export function sentTurns(db: Db, single: SentSingle, opts: { max: number; concurrent: number } = { max: 100, concurrent: 1 }) {
  const turns = new Turns<Pending, MensajeRow | null>((items) => turn(db, single, items), opts);
  return (msgId: string, gid: string, now: number): Promise<MensajeRow | null> => turns.add({ msgId, gid, now });
}
