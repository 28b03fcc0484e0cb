import { messageStatusData } from '../../core/event-data.js';
import type { CapHit, SlotClaim, SlotCount } from '../../core/caps.js';
import { parkedOrder, receiptPath, receiptStep } from '../../core/ledger.js';
import * as recipe from '../../core/recipes.js';
import { balanceAdd, movementInsert, pendingDown, receiptStepUpdate, slotSet, slotTime } from '../recipe-sql.js';
import type { AcceptOptions, AcceptResult, MessagesOwn, MessageStats, NewMensaje, NewRecibido, ReceiptOutcome } from '../../core/ports/messages.js';
import type { ErrorClase, JournalEvent, MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import { insertRecibido } from './inbox.js';
import { eventInsert } from './webhooks.js';
import { accept } from './accept.js';
import { type Client, type Db, LOCK, ph, row, rows } from './db.js';

/**
 * Messages in PostgreSQL, exact with several nodes writing at once. Every
 * transaction takes its row locks in one order: the client, then the line,
 * then the message (the counts rows the triggers touch come last, in the
 * order of the message's states). A transaction that will change a balance
 * or a line's counter locks those rows first, before it touches the message,
 * so two transactions never wait on each other in a cycle. Which rows to lock
 * is read first from columns that never change after acceptance (client,
 * line, mode, which balance paid), then the message's state is read again
 * under its own lock.
 */

/** A message row as the port returns it: every column but `seq` (an arrival order SQLite keeps as its rowid). */
export const MSG_COLS = [
  'msg_id',
  'cliente_id',
  'celular_id',
  'destinatario',
  'tipo',
  'modo',
  'estado',
  'texto',
  'media',
  'gateway_msg_id',
  'error',
  'error_clase',
  'cobrado',
  'created_at',
  'enviado_at',
  'entregado_at',
  'leido_at',
  'payload',
  'cargo',
  'intentos',
  'proximo_intento_at',
  'lease_until',
  'expira_at',
  'cupo_at',
];
export const COLS = MSG_COLS.join(', ');
export const colsOf = (alias: string) => MSG_COLS.map((c) => `${alias}.${c}`).join(', ');

/** What decides which rows a change locks: fixed once the message is accepted. */
export interface Fixed {
  msg_id: string;
  cliente_id: number;
  celular_id: number;
  modo: MensajeRow['modo'];
  cargo: MensajeRow['cargo'];
}
export const FIXED = 'msg_id, cliente_id, celular_id, modo, cargo';

async function get(c: Client, msgId: string): Promise<MensajeRow | null> {
  return row<MensajeRow>(c, `SELECT ${COLS} FROM mensajes WHERE msg_id = $1`, [msgId]);
}

/** The client's row, locked; FOR NO KEY UPDATE leaves a line's foreign-key check on the client free to proceed. */
async function lockCliente(c: Client, id: number): Promise<{ saldo_global: number } | null> {
  return row(c, 'SELECT saldo_global FROM clientes WHERE id = $1 FOR NO KEY UPDATE', [id]);
}

/** The line's row, locked (null: the line was deleted). */
export async function lockCelular(c: Client, id: number): Promise<{ saldo_actual: number; pendientes: number } | null> {
  return row(c, 'SELECT saldo_actual, pendientes FROM celulares WHERE id = $1 FOR NO KEY UPDATE', [id]);
}

/**
 * Receipts for a gateway id and the markSent that records that id take this
 * lock first. A receipt that finds no message parks itself; without the lock,
 * a markSent committing between the receipt's look-up and its insert would
 * have already looked for parked rows and the receipt would stay parked for
 * ever. Locking the message row cannot do it: while the id is unrecorded no
 * row matches it. The lock is transaction-scoped and taken before any row
 * lock, so it adds no cycle.
 */
async function lockGatewayId(c: Client, gid: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK.gatewayId, gid]);
}

/**
 * Logs an event in the current transaction (D-69): one row, a delivery when
 * the client's configuration wants it now, read in the same statement
 * (postgres/webhooks.ts eventInsert), as SQLite does.
 */
export async function journal(c: Client, ev: JournalEvent, recordedAt = ev.fecha): Promise<void> {
  await c.query(eventInsert, [ev.cliente_id, ev.celular_id, ev.evento, JSON.stringify(ev.data), ev.fecha, recordedAt]);
}

async function journalStatus(c: Client, m: MensajeRow, anterior: string | null, now: number): Promise<void> {
  await journal(c, {
    evento: 'message.status',
    cliente_id: m.cliente_id,
    celular_id: m.celular_id,
    data: { ...messageStatusData(m, anterior, now) },
    fecha: now,
  });
}

/** Writes a ledger row core/recipes.ts answered; `returning` reads a column of it back. */
export async function writeMovement(c: Client, mv: recipe.Movement, now: number, returning = ''): Promise<{ id: number } | null> {
  return row<{ id: number }>(c, movementInsert(ph) + (returning ? ` RETURNING ${returning}` : ''), recipe.movementValues(mv, now));
}

/**
 * Slots taken in each window of a line (core/caps.ts), counted while the
 * caller holds the line's row lock, which every slot taker holds: one index
 * range per window, in one round trip.
 */
export async function capHit(c: Client, celularId: number, slot: SlotClaim, now: number): Promise<CapHit | null> {
  if (slot.windows.length === 0) return null;
  const counts = await rows<SlotCount>(
    c,
    `SELECT k.n, k.oldest FROM unnest($2::bigint[]) WITH ORDINALITY AS w(since, i)
     CROSS JOIN LATERAL (
       SELECT COUNT(*) AS n, MIN(CASE WHEN cupo_at <= $3::bigint THEN cupo_at END) AS oldest
       FROM mensajes WHERE celular_id = $1 AND cupo_at > w.since
     ) k ORDER BY w.i`,
    [celularId, slot.windows.map((ms) => now - ms), now],
  );
  return slot.decide(counts);
}

/** A queued message leaves `pendiente`: its line's backlog count goes down with it (the line's row is already locked). */
async function leftQueue(c: Client, m: { modo: string; celular_id: number }): Promise<void> {
  if (recipe.queueDelta(m)) await c.query(pendingDown(ph), [m.celular_id]);
}

/** Ends a message in error with its refund; the caller holds the client's (when it paid) and the line's locks. */
async function failLocked(c: Client, m: MensajeRow, error: string, clase: ErrorClase, now: number): Promise<MensajeRow> {
  // A send that never went out gives its slot back; one the network took keeps it.
  const after = (await row<MensajeRow>(
    c,
    `UPDATE mensajes SET estado = 'error', error = $2, error_clase = $3, ${slotSet(recipe.slotOn('fail'), '$4')}, cobrado = 0 WHERE msg_id = $1 RETURNING ${COLS}`,
    [m.msg_id, error, clase],
  ))!;
  if (m.estado === 'pendiente') await leftQueue(c, m);
  const lineExists = m.cargo === 'celular' && (await row(c, 'SELECT 1 FROM celulares WHERE id = $1', [m.celular_id])) !== null;
  const back = recipe.refund(m, lineExists);
  if (back) {
    // A deleted client has no balance left to refund to.
    const r = await row<{ saldo: number }>(c, balanceAdd(back.balance, ph), [back.monto, back.balance.id]);
    if (r) await writeMovement(c, back.movement(r.saldo), now);
  }
  await journalStatus(c, after, m.estado, now);
  return after;
}

/** A receipt on a recorded send; the caller holds the gateway id's lock, and the client's and line's when it is a failure. */
async function applyReceipt(c: Client, celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
  const before = await row<MensajeRow>(c, `SELECT ${COLS} FROM mensajes WHERE gateway_msg_id = $1 AND celular_id = $2 LIMIT 1 FOR UPDATE`, [gid, celularId]);
  if (!before) return null;
  const step = receiptStep(before.estado, estado);
  if (step === 'ignore') return null;
  if (step === 'fail') return { before, after: await failLocked(c, before, error ?? 'the network reported the message as failed', 'fallido', now) };
  let after = before;
  for (const next of receiptPath(before.estado, estado)) {
    const prev = after.estado;
    after = (await row<MensajeRow>(c, `${receiptStepUpdate(next, ph)} RETURNING ${COLS}`, [next, now, before.msg_id]))!;
    await journalStatus(c, after, prev, now);
  }
  return { before, after };
}

/** MessagesStore's own methods over one pool: acceptance, state changes, receipts, the journal. */
export function messages(db: Db): MessagesOwn {
  return {
    async messageStats(clienteId: number, monthStart: number, since30d: number): Promise<MessageStats> {
      return (await db.one<MessageStats>(
        `SELECT
         COUNT(*) FILTER (WHERE created_at >= $2 AND estado <> 'error') AS consumo_mes,
         COUNT(*) FILTER (WHERE created_at >= $3) AS mensajes_30d
       FROM mensajes WHERE cliente_id = $1 AND created_at >= LEAST($2::bigint, $3::bigint)`,
        [clienteId, monthStart, since30d],
      ))!;
    },
    async journalEvent(ev: JournalEvent): Promise<void> {
      await db.tx((c) => journal(c, ev));
    },
    async acceptMensaje(m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> {
      return db.tx((c) => accept(c, m, opts, now));
    },
    async getMensaje(msgId: string): Promise<MensajeRow | null> {
      return db.one<MensajeRow>(`SELECT ${COLS} FROM mensajes WHERE msg_id = $1`, [msgId]);
    },
    async getMensajeByGatewayId(gid: string): Promise<MensajeRow | null> {
      return db.one<MensajeRow>(`SELECT ${COLS} FROM mensajes WHERE gateway_msg_id = $1 LIMIT 1`, [gid]);
    },
    async markSent(msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
      return db.tx(async (c): Promise<MensajeRow | null> => {
        await lockGatewayId(c, gid);
        const f = await row<Fixed>(c, `SELECT ${FIXED} FROM mensajes WHERE msg_id = $1`, [msgId]);
        if (!f) return null;
        // Under the gateway id's lock the parked receipts cannot change: a parked failure means a refund, so its rows are locked too.
        // Those its own line reported (or parked before receipts named their line).
        const parked = await rows<{ estado: ReceiptEstado; error: string | null }>(
          c,
          'SELECT estado, error FROM acuses_pendientes WHERE gateway_msg_id = $1 AND (celular_id = $2 OR celular_id IS NULL)',
          [gid, f.celular_id],
        );
        const refunds = f.cargo !== null && parked.some((p) => p.estado === 'error');
        if (refunds) await lockCliente(c, f.cliente_id);
        if (refunds || f.modo === 'cola') await lockCelular(c, f.celular_id);
        const slot = recipe.slotOn('sent', now);
        const sent = await row<MensajeRow>(
          c,
          `UPDATE mensajes SET estado = 'enviado', gateway_msg_id = $2, enviado_at = $3, ${slotSet(slot, '$4')},
         error = NULL, intentos = intentos + 1
       WHERE msg_id = $1 AND estado = 'pendiente' RETURNING ${COLS}`,
          [msgId, gid, now, slotTime(slot)],
        );
        if (!sent) return null;
        await leftQueue(c, sent);
        await journalStatus(c, sent, 'pendiente', now);
        if (parked.length === 0) return sent;
        await c.query('DELETE FROM acuses_pendientes WHERE gateway_msg_id = $1 AND (celular_id = $2 OR celular_id IS NULL)', [gid, f.celular_id]);
        for (const p of parkedOrder(parked)) await applyReceipt(c, f.celular_id, gid, p.estado, now, p.error ?? undefined);
        return get(c, msgId);
      });
    },
    async failMensaje(msgId: string, error: string, clase: ErrorClase, now: number): Promise<MensajeRow | null> {
      return db.tx(async (c): Promise<MensajeRow | null> => {
        const f = await row<Fixed>(c, `SELECT ${FIXED} FROM mensajes WHERE msg_id = $1`, [msgId]);
        if (!f) return null;
        if (f.cargo !== null) await lockCliente(c, f.cliente_id);
        await lockCelular(c, f.celular_id);
        const m = await row<MensajeRow>(c, `SELECT ${COLS} FROM mensajes WHERE msg_id = $1 FOR UPDATE`, [msgId]);
        if (!m || m.estado !== 'pendiente') return null;
        return failLocked(c, m, error, clase, now);
      });
    },
    async receipt(celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
      return db.tx(async (c): Promise<ReceiptOutcome> => {
        await lockGatewayId(c, gid);
        // Only the reporting line's message: another line's (a secret leaked from one instance) is not this receipt's to change.
        const f = await row<Fixed>(c, `SELECT ${FIXED} FROM mensajes WHERE gateway_msg_id = $1 AND celular_id = $2 LIMIT 1`, [gid, celularId]);
        if (!f) {
          // The line's row lock makes its count and the insert one step for every node (taken after the id's lock, as markSent does).
          if (!(await lockCelular(c, celularId))) return null;
          // Old parked rows nobody claimed go, a few at a time, skipping any another transaction holds.
          await c.query(
            `DELETE FROM acuses_pendientes WHERE (gateway_msg_id, estado) IN (
           SELECT gateway_msg_id, estado FROM acuses_pendientes WHERE at < $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`,
            [recipe.parkedExpiredBefore(now)],
          );
          const held = await row<{ n: number }>(c, 'SELECT COUNT(*)::int AS n FROM acuses_pendientes WHERE celular_id = $1', [celularId]);
          if (!recipe.parkingAllows(held!.n)) return null;
          await c.query(
            `INSERT INTO acuses_pendientes (gateway_msg_id, estado, error, at, celular_id) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (gateway_msg_id, estado) DO UPDATE SET error = excluded.error, at = excluded.at, celular_id = excluded.celular_id`,
            [gid, estado, error ?? null, now, celularId],
          );
          return 'parked';
        }
        // Only a failure moves money: then the client's (when it paid) and the line's rows are locked first.
        if (estado === 'error') {
          if (f.cargo !== null) await lockCliente(c, f.cliente_id);
          await lockCelular(c, f.celular_id);
        }
        return applyReceipt(c, celularId, gid, estado, now, error);
      });
    },
    /** Keeps an incoming message in the inbox and journals its event unless its gateway key was seen already; the key's primary key decides between nodes. */
    async journalInbound(ev: JournalEvent, clave: string | null, now: number, recibido: NewRecibido): Promise<boolean> {
      return db.tx(async (c) => {
        if (clave !== null) {
          const r = await c.query('INSERT INTO entrantes_vistos (clave, at) VALUES ($1, $2) ON CONFLICT (clave) DO NOTHING', [clave, now]);
          if (r.rowCount === 0) return false;
          await c.query(
            `DELETE FROM entrantes_vistos WHERE clave IN (
           SELECT clave FROM entrantes_vistos WHERE at < $1 LIMIT 100 FOR UPDATE SKIP LOCKED)`,
            [recipe.inboundForgottenBefore(now)],
          );
        }
        await insertRecibido(c, recibido, now);
        // Its fecha is the gateway's; its delivery is due when it is recorded.
        await journal(c, ev, now);
        return true;
      });
    },
    /** Each half reads its own partial index (queued, direct): the cost follows the pending messages, not the history. */
    async pendingFiles(): Promise<string[]> {
      const r = await db.q<{ f: string }>(
        `SELECT f FROM (
       SELECT payload::jsonb ->> 'file' AS f FROM mensajes WHERE estado = 'pendiente' AND modo = 'cola'
       UNION ALL
       SELECT payload::jsonb ->> 'file' AS f FROM mensajes WHERE estado = 'pendiente' AND modo = 'directo'
     ) p WHERE f IS NOT NULL`,
      );
      return r.map((x) => x.f);
    },
  };
}
