import type Database from 'better-sqlite3';
import { grouped, immediate, ph, stmt } from './statements.js';
import {
  balanceAdd,
  hechosSelect,
  movementInsert,
  movimientosDeMensajeSelect,
  ownMovimientos,
  pendingDown,
  receiptStepUpdate,
  slotSet,
  slotTime,
} from '../recipe-sql.js';
import * as recipe from '../../core/billing/recipes.js';
import { eventInsert } from './webhooks.js';
import { messageStatusData } from '../../core/events/event-data.js';
import type { CapHit, SlotClaim, SlotCount } from '../../core/sending/caps.js';
import { parkedOrder, receiptPath, receiptStep } from '../../core/billing/ledger.js';
import type { MensajeHechos, MessagesOwn, MessageStats, NewRecibido, ReceiptOutcome } from '../../core/ports/messages.js';
import type { ErrorClase, JournalEvent, MensajeEstado, MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import { insertRecibido } from './inbox.js';
import { keepSlot, leavePending, mapGatewayId } from './access-paths.js';

/**
 * Messages in SQLite: state changes with refunds, receipts, the journal
 * (acceptance is accept.ts; the queue's claims are queue.ts). Each function that changes more than one row runs in
 * one IMMEDIATE transaction.
 */
type DB = Database.Database;

function get(db: DB, msgId: string): MensajeRow | null {
  return (stmt(db, 'SELECT * FROM mensajes WHERE msg_id = ?').get(msgId) as MensajeRow | undefined) ?? null;
}

/**
 * Logs an event in the current transaction (D-69): one row, a delivery
 * when the client's configuration wants it now (active, with a URL, and
 * subscribed to its kind or to all: the rule of webhooks/config.ts
 * `subscribed`, read here in the same statement so no round trip is added).
 */
export function journal(db: DB, ev: JournalEvent, recordedAt = ev.fecha): void {
  stmt(db, eventInsert).run({ c: ev.cliente_id, l: ev.celular_id, e: ev.evento, d: JSON.stringify(ev.data), f: ev.fecha, due: recordedAt });
}

function journalStatus(db: DB, m: MensajeRow, anterior: string | null, now: number): void {
  journal(db, { evento: 'message.status', cliente_id: m.cliente_id, celular_id: m.celular_id, data: { ...messageStatusData(m, anterior, now) }, fecha: now });
}

/** Writes a ledger row core/billing/recipes.ts answered. */
export function writeMovement(db: DB, mv: recipe.Movement, now: number): Database.RunResult {
  return stmt(db, movementInsert(ph)).run(...recipe.movementValues(mv, now));
}

/** Slots taken in each window of a line (core/sending/caps.ts): one index range per window, bounded by the cap. */
function slotCounts(db: DB, celularId: number, windows: number[], now: number): SlotCount[] {
  const q = stmt(
    db,
    `SELECT COUNT(*) AS n, MIN(CASE WHEN cupo_at <= @now THEN cupo_at END) AS oldest
     FROM cupos WHERE celular_id = @c AND cupo_at > @since`,
  );
  return windows.map((ms) => q.get({ c: celularId, since: now - ms, now }) as SlotCount);
}

/** The slot's verdict under the current counts, or null when it may be taken. */
export function capHit(db: DB, celularId: number, slot: SlotClaim, now: number): CapHit | null {
  return slot.windows.length === 0 ? null : slot.decide(slotCounts(db, celularId, slot.windows, now));
}

/** A message leaves `pendiente`: out of the queue (its line's backlog count goes down with it) or of the direct sends in flight. */
function leftPending(db: DB, m: { msg_id: string; modo: string; celular_id: number }): void {
  leavePending(db, m);
  if (recipe.queueDelta(m)) stmt(db, pendingDown(ph)).run(m.celular_id);
}

/** Receipts parked for this send before it was recorded, applied in order now. */
function applyParked(db: DB, row: MensajeRow, now: number): MensajeRow {
  // Those its own line reported (or parked before receipts named their line).
  const parked = stmt(db, 'DELETE FROM acuses_pendientes WHERE gateway_msg_id = ? AND (celular_id = ? OR celular_id IS NULL) RETURNING estado, error').all(
    row.gateway_msg_id,
    row.celular_id,
  ) as Array<{
    estado: ReceiptEstado;
    error: string | null;
  }>;
  if (parked.length === 0) return row;
  for (const p of parkedOrder(parked)) receipt(db, row.celular_id, row.gateway_msg_id!, p.estado, now, p.error ?? undefined);
  return get(db, row.msg_id)!;
}

/** Slots taken in each window of a line and its last send by `now` (the queue view, core/queue/cola.ts). */
export function lineSlots(db: DB, celularId: number, windows: number[], now: number): { counts: SlotCount[]; last: number | null } {
  const counts = slotCounts(db, celularId, windows, now);
  const { last } = stmt(db, 'SELECT MAX(cupo_at) AS last FROM cupos WHERE celular_id = ? AND cupo_at <= ?').get(celularId, now) as { last: number | null };
  return { counts, last };
}

/**
 * Ends a pending message in error with its refund (failMensaje). With
 * `unclaimedAt` it is a cancel: only a queued message no claim holds at that
 * time, tested in the same IMMEDIATE transaction a claim takes, so one of the
 * two wins; `why` then says what stopped it.
 */
export function failMensaje(
  db: DB,
  msgId: string,
  error: string,
  clase: ErrorClase,
  now: number,
  from: 'pendiente' | 'any' = 'pendiente',
  cancel?: { unclaimedAt: number; why?: 'no_pendiente' | 'enviando' | 'directo'; reembolso?: number },
): MensajeRow | null {
  return immediate(db, (): MensajeRow | null => {
    const m = get(db, msgId);
    if (!m || m.estado === 'error' || (from === 'pendiente' && m.estado !== 'pendiente')) {
      if (cancel) cancel.why = 'no_pendiente';
      return null;
    }
    if (cancel && m.modo !== 'cola') {
      cancel.why = 'directo';
      return null;
    }
    if (cancel && m.lease_until !== null && m.lease_until > cancel.unclaimedAt) {
      cancel.why = 'enviando';
      return null;
    }
    // A send that never went out gives its slot back; one the network took keeps it.
    stmt(
      db,
      `UPDATE mensajes SET estado = 'error', error = ?, error_clase = ?, ${slotSet(recipe.slotOn('fail'), '?')}, cobrado = 0, error_at = ? WHERE msg_id = ?`,
    ).run(error, clase, now, msgId);
    if (m.estado === 'pendiente') leftPending(db, m);
    const lineExists = m.cargo === 'celular' && stmt(db, 'SELECT 1 FROM celulares WHERE id = ?').get(m.celular_id) !== undefined;
    const back = recipe.refund(m, lineExists);
    if (cancel) cancel.reembolso = back?.monto ?? 0;
    if (back) {
      // A deleted client has no balance left to refund to.
      const r = stmt(db, balanceAdd(back.balance, ph)).get(back.monto, back.balance.id) as { saldo: number } | undefined;
      if (r) writeMovement(db, back.movement(r.saldo), now);
    }
    const after = get(db, msgId)!;
    if (after.cupo_at !== m.cupo_at) keepSlot(db, after);
    journalStatus(db, after, m.estado, now);
    return after;
  });
}

/**
 * Moves a sent message forward (`entregado`, `leido`; never backwards) or ends
 * it in `error` (refunded) when the network reports a failure after accepting
 * it. A receipt for a gateway id not recorded yet is parked for markSent.
 */
function receipt(db: DB, celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): ReceiptOutcome {
  return immediate(db, (): ReceiptOutcome => {
    // Only the reporting line's message: another line's (a secret leaked from one instance) is not this receipt's to change.
    const before = stmt(db, 'SELECT m.* FROM gateway_ids g JOIN mensajes m ON m.msg_id = g.msg_id WHERE g.gateway_msg_id = ? AND g.celular_id = ? LIMIT 1').get(
      gid,
      celularId,
    ) as MensajeRow | undefined;
    if (!before) {
      stmt(db, 'DELETE FROM acuses_pendientes WHERE at < ?').run(recipe.parkedExpiredBefore(now));
      const held = stmt(db, 'SELECT COUNT(*) AS n FROM acuses_pendientes WHERE celular_id = ?').get(celularId) as { n: number };
      if (!recipe.parkingAllows(held.n)) return null;
      stmt(db, 'INSERT OR REPLACE INTO acuses_pendientes (gateway_msg_id, estado, error, at, celular_id) VALUES (?, ?, ?, ?, ?)').run(
        gid,
        estado,
        error ?? null,
        now,
        celularId,
      );
      return 'parked';
    }
    const step = receiptStep(before.estado, estado);
    if (step === 'ignore') return null;
    if (step === 'fail') {
      const after = failMensaje(db, before.msg_id, error ?? 'the network reported the message as failed', 'fallido', now, 'any');
      return after ? { before, after } : null;
    }
    let after = before;
    for (const next of receiptPath(before.estado, estado)) {
      const prev = after.estado;
      after = stmt(db, `${receiptStepUpdate(next, ph)} RETURNING *`).get(next, now, before.msg_id) as MensajeRow;
      journalStatus(db, after, prev, now);
    }
    return { before, after };
  });
}

/** MessagesStore's own methods over one connection: state changes, receipts, the journal (acceptance is accept.ts's). */
export function messages(db: DB): Omit<MessagesOwn, 'acceptMensaje'> {
  return {
    async messageStats(clienteId: number, monthStart: number, since30d: number): Promise<MessageStats> {
      const r = stmt(
        db,
        `SELECT
           COALESCE(SUM(CASE WHEN created_at >= @monthStart AND estado != 'error' THEN 1 ELSE 0 END), 0) AS consumo_mes,
           COALESCE(SUM(CASE WHEN created_at >= @since30d THEN 1 ELSE 0 END), 0) AS mensajes_30d
         FROM mensajes WHERE cliente_id = @clienteId AND created_at >= MIN(@monthStart, @since30d)`,
      ).get({ clienteId, monthStart, since30d }) as MessageStats;
      return r;
    },
    async recentByEstado(since: number): Promise<Array<{ estado: MensajeEstado; n: number }>> {
      // CROSS JOIN keeps clients as the outer loop: each client's part is a range of mensajes_cliente_fecha.
      return stmt(
        db,
        `SELECT m.estado, COUNT(*) AS n FROM clientes c CROSS JOIN mensajes m
         WHERE m.cliente_id = c.id AND m.created_at >= ? GROUP BY m.estado ORDER BY m.estado`,
      ).all(since) as Array<{ estado: MensajeEstado; n: number }>;
    },
    journalEvent(ev: JournalEvent): Promise<void> {
      return grouped(db, () => journal(db, ev));
    },
    async getMensaje(msgId: string): Promise<MensajeRow | null> {
      return get(db, msgId);
    },
    async mensajeHechos(clienteId: number, msgId: string): Promise<MensajeHechos | null> {
      const own = stmt(db, hechosSelect(ph)).get(msgId, clienteId) as Omit<MensajeHechos, 'movimientos'> | undefined;
      if (!own) return null;
      const rows = stmt(db, movimientosDeMensajeSelect(ph)).all(recipe.chargeMotivo(msgId), recipe.refundMotivo(msgId)) as Array<
        MensajeHechos['movimientos'][number] & { id: number; cliente_id: number }
      >;
      return { ...own, movimientos: ownMovimientos(rows, clienteId) };
    },
    async getMensajeByGatewayId(gid: string): Promise<MensajeRow | null> {
      return (
        (stmt(db, 'SELECT m.* FROM gateway_ids g JOIN mensajes m ON m.msg_id = g.msg_id WHERE g.gateway_msg_id = ? LIMIT 1').get(gid) as
          MensajeRow | undefined) ?? null
      );
    },
    markSent(msgId: string, gid: string, now: number): Promise<MensajeRow | null> {
      return grouped(db, () => {
        return immediate(db, (): MensajeRow | null => {
          const slot = recipe.slotOn('sent', now);
          const row = stmt(
            db,
            `UPDATE mensajes SET estado = 'enviado', gateway_msg_id = @gid, enviado_at = @now, ${slotSet(slot, '@slot')},
           error = NULL, intentos = intentos + 1
         WHERE msg_id = @msgId AND estado = 'pendiente' RETURNING *`,
          ).get({ gid, now, msgId, slot: slotTime(slot) }) as MensajeRow | undefined;
          if (!row) return null;
          leftPending(db, row);
          keepSlot(db, row);
          mapGatewayId(db, row);
          journalStatus(db, row, 'pendiente', now);
          return applyParked(db, row, now);
        });
      });
    },
    failMensaje(msgId: string, error: string, clase: ErrorClase, now: number): Promise<MensajeRow | null> {
      return grouped(db, () => failMensaje(db, msgId, error, clase, now));
    },
    receipt(celularId: number, gid: string, estado: ReceiptEstado, now: number, error?: string): Promise<ReceiptOutcome> {
      return grouped(db, () => receipt(db, celularId, gid, estado, now, error));
    },
    /**
     * Keeps an incoming message in the inbox and journals its event, unless its
     * gateway key was seen already (the gateway retried a delivery we answered
     * too late). False for a repeat.
     */
    journalInbound(ev: JournalEvent, clave: string | null, now: number, recibido: NewRecibido): Promise<boolean> {
      return grouped(db, () => {
        return immediate(db, () => {
          if (clave !== null) {
            if (stmt(db, 'INSERT OR IGNORE INTO entrantes_vistos (clave, at) VALUES (?, ?)').run(clave, now).changes === 0) return false;
            stmt(db, 'DELETE FROM entrantes_vistos WHERE at < ?').run(recipe.inboundForgottenBefore(now));
          }
          insertRecibido(db, recibido, now);
          // Its fecha is the gateway's; its delivery is due when it is recorded.
          journal(db, ev, now);
          return true;
        });
      });
    },
    async pendingFiles(): Promise<string[]> {
      return (
        stmt(
          db,
          "SELECT json_extract(payload, '$.file') AS f FROM mensajes WHERE estado = 'pendiente' AND json_extract(payload, '$.file') IS NOT NULL",
        ).all() as Array<{
          f: string;
        }>
      ).map((r) => r.f);
    },
  };
}
