import type Database from 'better-sqlite3';
import { grouped, immediate, ph, stmt } from './statements.js';
import { hechosSelect, movementInsert, movimientosDeMensajeSelect, ownMovimientos } from '../recipe-sql.js';
import * as recipe from '../../core/billing/recipes.js';
import { eventInsert } from './webhooks.js';
import { messageStatusData } from '../../core/events/event-data.js';
import type { CapHit, SlotClaim, SlotCount } from '../../core/sending/caps.js';
import type { MensajeHechos, MessagesOwn, MessageStats, NewRecibido } from '../../core/ports/messages.js';
import type { JournalEvent, MensajeEstado, MensajeEstadoRow, MensajeRow } from '../../core/ports/model.js';
import { insertRecibido } from './inbox.js';

/**
 * Messages in SQLite: reads, the journal and the inbox (acceptance is
 * accept.ts's, the changes after it transitions.ts's, the queue's claims
 * queue.ts's). Each function that changes more than one row runs in one
 * IMMEDIATE transaction.
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

export function journalStatus(db: DB, m: MensajeEstadoRow, anterior: string | null, now: number): void {
  journal(db, { evento: 'message.status', cliente_id: m.cliente_id, celular_id: m.celular_id, data: { ...messageStatusData(m, anterior, now) }, fecha: now });
}

/** Writes a ledger row core/billing/recipes.ts answered. */
export function writeMovement(db: DB, mv: recipe.Movement, now: number): Database.RunResult {
  return stmt(db, MOVEMENT_INSERT).run(...recipe.movementValues(mv, now));
}

/** Built once: the text is the statement cache's key, and building it for every charge was a join of its columns each time. */
const MOVEMENT_INSERT = movementInsert(ph);

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

/** Slots taken in each window of a line and its last send by `now` (the queue view, core/queue/cola.ts). */
export function lineSlots(db: DB, celularId: number, windows: number[], now: number): { counts: SlotCount[]; last: number | null } {
  const counts = slotCounts(db, celularId, windows, now);
  const { last } = stmt(db, 'SELECT MAX(cupo_at) AS last FROM cupos WHERE celular_id = ? AND cupo_at <= ?').get(celularId, now) as { last: number | null };
  return { counts, last };
}

/** MessagesStore's own methods over one connection: reads, the journal, the inbox (acceptance and transitions have files of their own). */
export function messages(db: DB): Omit<MessagesOwn, 'acceptMensaje' | 'markSent' | 'failMensaje' | 'receipt'> {
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
