import { iso } from '../../core/time/clock.js';
import { parkedOrder, receiptPath, receiptSources, receiptStep } from '../../core/billing/ledger.js';
import * as recipe from '../../core/billing/recipes.js';
import type { MessagesOwn, ReceiptOutcome } from '../../core/ports/messages.js';
import type { CancelResult } from '../../core/ports/queue.js';
import type { ErrorClase, MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import { balanceAdd, pendingDown, receiptStepUpdate, slotSet, slotTime } from '../recipe-sql.js';
import { type Client, type Db, LOCK, ph, row, rows } from './db.js';
import { COLS, colsOf, FIXED, type Fixed, journalStatus, lockCelular, writeMovement } from './messages.js';
import { eventInsertOf } from './webhooks.js';
import { byGateway, forgetSlots, leavePending, mapGateway, slotSync } from './state-paths.js';
import { slotsForgottenBefore } from '../../core/sending/caps.js';
import { fieldOf, statusData } from './status-sql.js';
import { sentTurns } from './sent-turn.js';
import { type Applied, receiptTurns } from './receipt-turn.js';

/**
 * A message's state changes after acceptance, in PostgreSQL: the send's
 * record, a failed send, receipts. The common ones (a send recorded, a
 * delivery or read receipt on a recorded send) are one autocommitted
 * statement each: the message's UPDATE guarded by its state, the line's
 * counter, and the `message.status` rows built from what the UPDATE
 * returned. The rare ones (a failure and its refund, a receipt that beats
 * its send and is parked, parked receipts applied) keep a transaction.
 * Sends recorded at the same time go in turns (sent-turn.ts): one statement
 * does this file's markSent statement for each of them, parked receipts
 * read as below. So does the first look of delivery and read receipts
 * (receipt-turn.ts, RECEIPT_ADVANCE for each); what follows a look that
 * found nothing is per receipt, as below.
 *
 * Lock order, as in messages.ts: the client, the line, the parked receipt,
 * the message (then the counts rows the triggers touch). A statement that
 * changes the line's counter locks the line in a sub-select its UPDATE
 * joins, so the line is locked before the message row is.
 *
 * A receipt that finds no message parks itself; the send's record must then
 * find it (D-87). Both sides hold the message's line to their commit: park()
 * locks the line's row first (it counts the line's parked rows under it),
 * and the record's statement locks it before its UPDATE, whatever the
 * message's mode, and reads the receipts parked for its gateway id and line
 * after that, with acuses_al_dia (migration 17), a VOLATILE function whose
 * query takes a snapshot of its own (the statement's may predate the lock):
 * - a park that committed before the record got the line is seen by that
 *   read, and the record applies it (applyParked);
 * - a park that asks for the line while the record holds it waits for the
 *   record's commit, and its look after its own commit finds the message.
 * Either way one of them applies it, and both may try (the record's
 * applyParked runs after its commit, the receipt's look after its park's):
 * whoever applies it first deletes the parked row in the same transaction,
 * and the other's DELETE ... RETURNING then returns nothing (it waits on the
 * row while the first is open, then finds it gone), so it is applied exactly
 * once and never left parked. A record is one round trip; applyParked's
 * transaction only when something was parked.
 *
 * Why the line and not the gateway id's advisory lock (which the record
 * takes first, so that a receipt that missed a send in flight waits for it
 * rather than paying for parking): parks of the previous version take the
 * line and not that lock, and run beside these during a rolling upgrade, so
 * the id's lock would leave a park committed between the record's read and
 * its commit unseen by both. Queued records locked the line already; a
 * direct one now does too, for its statement. No cycle: the record takes
 * the id's lock, the line, the message, the counts rows; park the line, then
 * parked rows; nothing takes an id's lock while it holds a row (the
 * receipt's wait for an id's lock is a statement of its own), and the rest
 * keep the order above (applyParked and failByReceipt: the client, the
 * line, the parked rows, the message).
 */

type Step = 'entregado' | 'leido';
const STEPS: Step[] = ['entregado', 'leido'];

/**
 * markSent's one statement. Parameters: msg_id, gateway id, now, the slot's
 * time, now as the event's ISO date, the gateway id lock's first key, the
 * time before which the line's slots are forgotten (core/sending/caps.ts). The
 * line is locked (a queued message's counter goes down; any message's
 * parked receipts are read under it, see the top of this file) by `line`,
 * which the UPDATE joins, so before the message. The gateway id's lock
 * (`g`, before any row lock, held to the commit) lets a receipt that missed
 * the send in flight wait for it instead of parking (see `receipt`). The
 * row sent comes back with `acuses`: the receipts parked for it, read per
 * row of `sent`, so after the line's lock.
 */
function markSentSql(slot: ReturnType<typeof recipe.slotOn>): string {
  return `WITH g AS (SELECT pg_advisory_xact_lock($6, hashtext($2))),
  m AS (SELECT msg_id, celular_id, modo FROM g, mensajes WHERE msg_id = $1),
  line AS (SELECT c.id FROM celulares c JOIN m ON c.id = m.celular_id FOR NO KEY UPDATE OF c),
  sent AS (
    UPDATE mensajes x SET estado = 'enviado', gateway_msg_id = $2, enviado_at = $3, ${slotSet(slot, '$4::bigint')}, error = NULL, intentos = x.intentos + 1
    FROM m LEFT JOIN line ON true WHERE x.msg_id = m.msg_id AND x.estado = 'pendiente'
    RETURNING ${colsOf('x')}, x.seq),
  -- Its access paths (state-paths.ts): no longer pending, its slot from now, its gateway id; and a few of its line's old slots go.
  pend AS (${leavePending('sent')}),
  slot AS (${slotSync('sent', slot.cupo_at)}),
  gw AS (${mapGateway('sent')}),
  old AS (${forgetSlots('sent', '$7::bigint')}),
  -- recipes.ts queueDelta: a queued message (modo 'cola') left the line's queue.
  down AS (${pendingDown(() => `(SELECT celular_id FROM sent WHERE modo = 'cola')`)}),
  ev AS (${eventInsertOf(
    {
      cliente: 's.cliente_id',
      celular: 's.celular_id',
      evento: `'message.status'::text`,
      data: statusData(fieldOf('s', { estado_anterior: `'pendiente'::text`, fecha: '$5::text' })),
      fecha: '$3::bigint',
      recordedAt: '$3::bigint',
    },
    'FROM sent s',
  )})
  SELECT ${COLS}, acuses_al_dia($2, celular_id) AS acuses FROM sent`;
}

/** A send's row as recorded, with the receipts parked for it (read under its line's lock). */
export type Recorded = MensajeRow & { acuses: ReceiptEstado[] };

/**
 * A delivery or read receipt in one statement. Parameters: gateway id, line,
 * the receipt, now, now as the event's ISO date, and the receipt's sources
 * (ledger.ts receiptSources) as three arrays, one row per step: the state
 * it starts from, the step's state, the state before the step. The message
 * is locked by `b` and moved from the state read under that lock, one event
 * per step in order (a read receipt on a sent message: delivered, then
 * read). One row when the line has a message of that id (`hallado`; the
 * rest null when the receipt moved nothing), none when it has none.
 */
const RECEIPT_ADVANCE = `WITH path AS (SELECT * FROM unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS p(desde, estado, anterior, orden)),
  b AS (SELECT msg_id, estado, entregado_at, leido_at FROM mensajes WHERE ${byGateway('$1', '$2')} FOR UPDATE),
  moved AS (
    UPDATE mensajes x SET estado = $3::text,
      ${STEPS.map((s) => `${recipe.receiptColumn(s)} = CASE WHEN EXISTS (SELECT 1 FROM path p WHERE p.desde = b.estado AND p.estado = '${s}') THEN $4::bigint ELSE x.${recipe.receiptColumn(s)} END`).join(',\n      ')}
    FROM b WHERE x.msg_id = b.msg_id AND b.estado IN (SELECT desde FROM path)
    RETURNING ${colsOf('x')}, b.estado AS antes_estado, b.entregado_at AS antes_entregado_at, b.leido_at AS antes_leido_at),
  ev AS (${eventInsertOf(
    {
      cliente: 's.cliente_id',
      celular: 's.celular_id',
      evento: `'message.status'::text`,
      data: statusData(fieldOf('s', { estado: 'p.estado', estado_anterior: 'p.anterior', fecha: '$5::text' })),
      fecha: '$4::bigint',
      recordedAt: '$4::bigint',
    },
    'FROM moved s JOIN path p ON p.desde = s.antes_estado ORDER BY p.orden',
  )})
  SELECT b.msg_id AS hallado, u.* FROM b LEFT JOIN moved u ON true`;

type Moved = MensajeRow & { hallado: string; antes_estado: MensajeRow['estado']; antes_entregado_at: number | null; antes_leido_at: number | null };

/** RECEIPT_ADVANCE's parameters after the first five: receiptSources as one row per step. */
function sourceArrays(estado: ReceiptEstado): [string[], string[], string[]] {
  const from: string[] = [];
  const to: string[] = [];
  const prev: string[] = [];
  for (const s of receiptSources(estado)) {
    let at: string = s.from;
    for (const next of s.path) {
      from.push(s.from);
      to.push(next);
      prev.push(at);
      at = next;
    }
  }
  return [from, to, prev];
}

async function get(c: Client, msgId: string): Promise<MensajeRow | null> {
  return row<MensajeRow>(c, `SELECT ${COLS} FROM mensajes WHERE msg_id = $1`, [msgId]);
}

/** The client's row, locked; FOR NO KEY UPDATE leaves a line's foreign-key check on the client free to proceed. */
async function lockCliente(c: Client, id: number): Promise<void> {
  await c.query('SELECT 1 FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [id]);
}

/** The rows a failure moves money on, locked in order: the client's when it paid, the line's. */
async function lockForRefund(c: Client, f: Pick<Fixed, 'cargo' | 'cliente_id' | 'celular_id'>): Promise<boolean> {
  if (f.cargo !== null) await lockCliente(c, f.cliente_id);
  return (await lockCelular(c, f.celular_id)) !== null;
}

/**
 * A failure's statement: the message from the state it is in (`$4`, which
 * guards it) to error, a queued message's line counter if it was pending,
 * its event. Parameters: msg_id, error, class, that state, now, now as the
 * event's ISO date. A send that never went out gives its slot back; one the
 * network took keeps it (recipes.ts slotOn).
 */
const FAIL = `WITH f AS (
    UPDATE mensajes SET estado = 'error', error = $2, error_clase = $3, ${slotSet(recipe.slotOn('fail'), '$5::bigint')}, cobrado = 0, error_at = $5::bigint
    WHERE msg_id = $1 AND estado = $4::text
      -- A cancel ($7, its time): only a queued message no claim holds, the claim's own test, under the message's lock.
      AND ($7::bigint IS NULL OR (modo = 'cola' AND (lease_until IS NULL OR lease_until <= $7::bigint)))
    RETURNING ${COLS}, seq),
  -- Its access paths (state-paths.ts): no longer pending; a slot never used given back.
  pend AS (${leavePending('f')}),
  slot AS (${slotSync('f', recipe.slotOn('fail').cupo_at)}),
  -- recipes.ts queueDelta: a queued message (modo 'cola') left the line's queue.
  down AS (${pendingDown(() => `(SELECT celular_id FROM f WHERE modo = 'cola' AND $4::text = 'pendiente')`)}),
  ev AS (${eventInsertOf(
    {
      cliente: 's.cliente_id',
      celular: 's.celular_id',
      evento: `'message.status'::text`,
      data: statusData(fieldOf('s', { estado_anterior: '$4::text', fecha: '$6::text' })),
      fecha: '$5::bigint',
      recordedAt: '$5::bigint',
    },
    'FROM f s',
  )})
  SELECT ${COLS} FROM f`;

/**
 * Ends a message in error with its refund, if it is still in `m.estado`
 * (null otherwise); the caller holds the client's (when it paid) and the
 * line's locks, and says whether the line exists. `m.cobrado` is what it
 * paid: only a failure changes it, and a failure meanwhile fails the guard.
 */
async function failLocked(
  c: Client,
  m: Pick<MensajeRow, 'msg_id' | 'estado' | 'cobrado'>,
  error: string,
  clase: ErrorClase,
  now: number,
  lineExists: boolean,
  cancel?: { unclaimedAt: number; reembolso?: number },
): Promise<MensajeRow | null> {
  const after = await row<MensajeRow>(c, FAIL, [m.msg_id, error, clase, m.estado, now, iso(now), cancel?.unclaimedAt ?? null]);
  if (!after) return null;
  const back = recipe.refund({ ...after, cobrado: m.cobrado }, after.cargo === 'celular' && lineExists);
  if (cancel) cancel.reembolso = back?.monto ?? 0;
  if (back) {
    // A deleted client has no balance left to refund to.
    const r = await row<{ saldo: number }>(c, balanceAdd(back.balance, ph), [back.monto, back.balance.id]);
    if (r) await writeMovement(c, back.movement(r.saldo), now);
  }
  return after;
}

/** A receipt on a recorded send, in a transaction; a failure's caller holds the client's and line's locks (`lineExists` from the latter). */
async function applyReceipt(
  c: Client,
  celularId: number,
  gid: string,
  estado: ReceiptEstado,
  now: number,
  error: string | undefined,
  lineExists: boolean,
): Promise<ReceiptOutcome> {
  const before = await row<MensajeRow>(c, `SELECT ${COLS} FROM mensajes WHERE ${byGateway('$1', '$2')} FOR UPDATE`, [gid, celularId]);
  if (!before) return null;
  const step = receiptStep(before.estado, estado);
  if (step === 'ignore') return null;
  if (step === 'fail') {
    // Locked above as `before`: the guard holds.
    const after = await failLocked(c, before, error ?? 'the network reported the message as failed', 'fallido', now, lineExists);
    return after && { before, after };
  }
  let after = before;
  for (const next of receiptPath(before.estado, estado)) {
    const prev = after.estado;
    after = (await row<MensajeRow>(c, `${receiptStepUpdate(next, ph)} RETURNING ${COLS}`, [next, now, before.msg_id]))!;
    await journalStatus(c, after, prev, now);
  }
  return { before, after };
}

/** A delivery or read receipt: one statement. */
async function advance(db: Db, celularId: number, gid: string, estado: ReceiptEstado, now: number): Promise<Applied> {
  const r = await db.one<Moved>(RECEIPT_ADVANCE, [gid, celularId, estado, now, iso(now), ...sourceArrays(estado)]);
  if (!r) return 'absent';
  if (r.msg_id === null) return null;
  const { hallado: _h, antes_estado, antes_entregado_at, antes_leido_at, ...after } = r;
  return { before: { ...after, estado: antes_estado, entregado_at: antes_entregado_at, leido_at: antes_leido_at }, after };
}

/** A failure the network reports: its refund needs the client's and line's locks first, so a transaction. */
async function failByReceipt(db: Db, celularId: number, gid: string, now: number, error: string | undefined): Promise<Applied> {
  return db.tx(async (c): Promise<Applied> => {
    // Only the reporting line's message: another line's (a secret leaked from one instance) is not this receipt's to change.
    const f = await row<Fixed>(c, `SELECT ${FIXED} FROM mensajes WHERE ${byGateway('$1', '$2')}`, [gid, celularId]);
    if (!f) return 'absent';
    return applyReceipt(c, celularId, gid, 'error', now, error, await lockForRefund(c, f));
  });
}

/** Parks a receipt for an id no message of the line has yet; false when the line is gone or holds PARKED_PER_LINE already. */
async function park(db: Db, celularId: number, gid: string, estado: ReceiptEstado, now: number, error: string | undefined): Promise<boolean> {
  return db.tx(async (c): Promise<boolean> => {
    // The line's row lock makes its count and the insert one step for every node, and orders the park against a send's
    // record, which reads the parked receipts under it (top of this file).
    if (!(await lockCelular(c, celularId))) return false;
    // Old parked rows nobody claimed go, a few at a time, skipping any another transaction holds.
    await c.query(
      `DELETE FROM acuses_pendientes WHERE (gateway_msg_id, estado) IN (
         SELECT gateway_msg_id, estado FROM acuses_pendientes WHERE at < $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`,
      [recipe.parkedExpiredBefore(now)],
    );
    const held = await row<{ n: number }>(c, 'SELECT COUNT(*)::int AS n FROM acuses_pendientes WHERE celular_id = $1', [celularId]);
    if (!recipe.parkingAllows(held!.n)) return false;
    await c.query(
      `INSERT INTO acuses_pendientes (gateway_msg_id, estado, error, at, celular_id) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (gateway_msg_id, estado) DO UPDATE SET error = excluded.error, at = excluded.at, celular_id = excluded.celular_id`,
      [gid, estado, error ?? null, now, celularId],
    );
    return true;
  });
}

/** markSent's statement for one message, committed on its own: the row sent and its parked receipts, or null when it was not pending. */
export async function recordSent(db: Db, msgId: string, gid: string, now: number): Promise<Recorded | null> {
  const slot = recipe.slotOn('sent', now);
  return db.one<Recorded>(markSentSql(slot), [msgId, gid, now, slotTime(slot), iso(now), LOCK.gatewayId, slotsForgottenBefore(now)]);
}

/** The receipts `parked` (read by `sent`'s statement under its line's lock) claimed and applied to it: the message as they left it. */
export async function applyParked(db: Db, sent: MensajeRow, gid: string, parked: ReceiptEstado[], now: number): Promise<MensajeRow | null> {
  if (parked.length === 0) return sent;
  return db.tx(async (c): Promise<MensajeRow | null> => {
    // A parked failure means a refund: its rows are locked before the parked rows are claimed.
    const lineExists = parked.includes('error') ? await lockForRefund(c, sent) : true;
    // Claimed by deleting them: a receipt that saw this send after parking finds its row gone and leaves it to us.
    // Only those read above: one parked since then is its receipt's own to apply (it sees this send when it looks again).
    const claimed = await rows<{ estado: ReceiptEstado; error: string | null }>(
      c,
      `DELETE FROM acuses_pendientes WHERE gateway_msg_id = $1 AND (celular_id = $2 OR celular_id IS NULL) AND estado = ANY($3::text[])
       RETURNING estado, error`,
      [gid, sent.celular_id, parked],
    );
    for (const p of parkedOrder(claimed)) await applyReceipt(c, sent.celular_id, gid, p.estado, now, p.error ?? undefined, lineExists);
    return get(c, sent.msg_id);
  });
}

/** markSent for one message alone: its statement (its parked receipts read in it, see the top of this file), then those applied if any. */
export async function markSentAlone(db: Db, msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
  const r = await recordSent(db, msgId, gid, now);
  if (!r) return null;
  const { acuses, ...sent } = r;
  return applyParked(db, sent, gid, acuses, now);
}

/**
 * QueueStore.cancelQueued: failMensaje's transaction with the cancel's guard
 * in its statement. A claim locks the message and tests its lease in one
 * statement (queue.ts), so whichever locks the row second sees the other's
 * write: a claimed message is not cancelled, a cancelled one not claimed.
 */
export async function cancelQueued(db: Db, msgId: string, error: string, now: number): Promise<CancelResult> {
  return db.tx(async (c): Promise<CancelResult> => {
    const f = await row<Fixed & { cobrado: number }>(c, `SELECT ${FIXED}, cobrado FROM mensajes WHERE msg_id = $1`, [msgId]);
    if (!f) return { ok: false, reason: 'no_pendiente' };
    if (f.modo !== 'cola') return { ok: false, reason: 'directo' };
    const lineExists = await lockForRefund(c, f);
    const cancel: { unclaimedAt: number; reembolso?: number } = { unclaimedAt: now };
    const after = await failLocked(c, { ...f, estado: 'pendiente' }, error, 'cancelado', now, lineExists, cancel);
    if (after) return { ok: true, mensaje: after, reembolso: cancel.reembolso ?? 0 };
    const left = await row<{ estado: string }>(c, 'SELECT estado FROM mensajes WHERE msg_id = $1', [msgId]);
    return { ok: false, reason: left?.estado === 'pendiente' ? 'enviando' : 'no_pendiente' };
  });
}

/** markSent, failMensaje and receipt over one pool. */
export function transitions(db: Db): Pick<MessagesOwn, 'markSent' | 'failMensaje' | 'receipt'> {
  const advanceInTurn = receiptTurns(db, (i) => advance(db, i.celularId, i.gid, i.estado, i.now), sourceArrays);
  const sendTurn = sentTurns(db, { alone: markSentAlone, applyParked });
  /** This node's sends being recorded, by gateway id: waiting for a turn they hold no lock yet (see `receipt`). */
  const sending = new Map<string, Promise<void>>();
  return {
    markSent(msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
      const p = sendTurn(msgId, gid, now);
      const settled = p.then(
        () => {},
        () => {},
      );
      sending.set(gid, settled);
      void settled.then(() => sending.get(gid) === settled && sending.delete(gid));
      return p;
    },
    async failMensaje(msgId: string, error: string, clase: ErrorClase, now: number): Promise<MensajeRow | null> {
      return db.tx(async (c): Promise<MensajeRow | null> => {
        const f = await row<Fixed & { cobrado: number }>(c, `SELECT ${FIXED}, cobrado FROM mensajes WHERE msg_id = $1`, [msgId]);
        if (!f) return null;
        const lineExists = await lockForRefund(c, f);
        // Only a pending message fails here: one sent meanwhile stays sent and charged (the guard, under the message's lock).
        return failLocked(c, { ...f, estado: 'pendiente' }, error, clase, now, lineExists);
      });
    },
    async receipt(celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
      const apply = () => (estado === 'error' ? failByReceipt(db, celularId, gid, now, error) : advance(db, celularId, gid, estado, now));
      // This node's send of that id still being recorded (a receipt that came right after the send): waited for first, so
      // the first look finds the message instead of costing a look, a wait on the id's lock and a second look.
      await sending.get(gid);
      // The first look of a delivery or read receipt goes in a turn with the others arriving meanwhile (receipt-turn.ts).
      let done = estado === 'error' ? await apply() : await advanceInTurn({ celularId, gid, estado, now });
      if (done === 'absent') {
        // A send being recorded holds its id's lock to its commit: waited for (the lock is let go at once), then looked for again.
        // One of this node's still waiting for its turn holds no lock yet: waited for here.
        // Only spares that race the parking; what keeps no receipt parked for ever is the line's lock (top of this file).
        await sending.get(gid);
        await db.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK.gatewayId, gid]);
        done = await apply();
      }
      if (done !== 'absent') return done;
      if (!(await park(db, celularId, gid, estado, now, error))) return null;
      // Looked for again after the parked row committed (see the top of this file): a send whose record held the line first is seen here.
      const f = await db.one<Fixed>(`SELECT ${FIXED} FROM mensajes WHERE ${byGateway('$1', '$2')}`, [gid, celularId]);
      if (!f) return 'parked';
      return db.tx(async (c): Promise<ReceiptOutcome> => {
        const lineExists = estado === 'error' ? await lockForRefund(c, f) : true;
        const mine = await row(c, 'DELETE FROM acuses_pendientes WHERE gateway_msg_id = $1 AND estado = $2 AND celular_id = $3 RETURNING 1', [
          gid,
          estado,
          celularId,
        ]);
        // Gone: the send's record claimed it and applied it.
        if (!mine) return 'parked';
        return applyReceipt(c, celularId, gid, estado, now, error, lineExists);
      });
    },
  };
}
