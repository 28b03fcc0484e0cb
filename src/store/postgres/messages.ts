import * as recipe from '../../core/billing/recipes.js';
import { hechosSelect, movementInsert, movimientosDeMensajeSelect, ownMovimientos } from '../recipe-sql.js';
import type { AcceptOptions, AcceptResult, MensajeHechos, MessagesOwn, MessageStats, NewMensaje, NewRecibido } from '../../core/ports/messages.js';
import type { JournalEvent, MensajeEstado, MensajeRow } from '../../core/ports/model.js';
import { insertRecibido } from './inbox.js';
import { eventInsert } from './webhooks.js';
import type { AcceptTurns } from './accept.js';
import { type Client, type Db, ph, qualified, row } from './db.js';
import { MSG_COLS } from '../message-columns.js';

/**
 * Messages in PostgreSQL, exact with several nodes writing at once: every
 * transaction and statement takes its row locks in one order (client, line,
 * parked receipt, message, counts rows), written in docs/store-locks.md.
 */

export const COLS = MSG_COLS.join(', ');
export const colsOf = (alias: string) => qualified(COLS, alias);

/** What decides which rows a change locks: fixed once the message is accepted. */
export interface Fixed {
  msg_id: string;
  cliente_id: number;
  celular_id: number;
  modo: MensajeRow['modo'];
  cargo: MensajeRow['cargo'];
}
export const FIXED = 'msg_id, cliente_id, celular_id, modo, cargo';

/**
 * Logs an event in the current transaction (D-69): one row, a delivery when
 * the client's configuration wants it now, read in the same statement
 * (postgres/webhooks.ts eventInsert), as SQLite does.
 */
export async function journal(c: Client, ev: JournalEvent, recordedAt = ev.fecha): Promise<void> {
  await c.query(eventInsert, [ev.cliente_id, ev.celular_id, ev.evento, JSON.stringify(ev.data), ev.fecha, recordedAt]);
}

/** Built once, as SQLite's: a join of the ledger's columns otherwise on every charge and refund. */
const MOVEMENT_INSERT = movementInsert(ph);

/** Writes a ledger row core/billing/recipes.ts answered; `returning` reads a column of it back. */
export async function writeMovement(c: Client, mv: recipe.Movement, now: number, returning = ''): Promise<{ id: number } | null> {
  return row<{ id: number }>(c, MOVEMENT_INSERT + (returning ? ` RETURNING ${returning}` : ''), recipe.movementValues(mv, now));
}

/** One window's count of a line's slots since `since` (an index range on cupos_celular) and the oldest taken by `now`. */
export const SLOT_COUNT_SQL = (line: string, since: string, now: string) =>
  `SELECT COUNT(*) AS n, MIN(CASE WHEN cupo_at <= ${now}::bigint THEN cupo_at END) AS oldest FROM cupos WHERE celular_id = ${line} AND cupo_at > ${since}`;

/** A line's slots in each window (`since`, an array) as JSON in the windows' order: one index range per window (core/sending/caps.ts). */
export const slotCountsJson = (line: string, since: string, now: string) =>
  `(SELECT json_agg(json_build_object('n', k.n, 'oldest', k.oldest) ORDER BY w.i)
    FROM unnest(${since}) WITH ORDINALITY AS w(since, i) CROSS JOIN LATERAL (${SLOT_COUNT_SQL(line, 'w.since', now)}) k)`;

/** MessagesStore's own methods over one pool: acceptance (in the store's turns, accept.ts), the journal; the state changes after acceptance are transitions.ts's. */
export function messages(db: Db, acceptOne: AcceptTurns['acceptOne']): Omit<MessagesOwn, 'markSent' | 'failMensaje' | 'receipt'> {
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
    async recentByEstado(since: number): Promise<Array<{ estado: MensajeEstado; n: number }>> {
      // A lateral range per client on mensajes_cliente_fecha; OFFSET 0 keeps the planner from flattening it into a scan of mensajes.
      return db.q<{ estado: MensajeEstado; n: number }>(
        `SELECT m.estado, COUNT(*) AS n FROM clientes c
         CROSS JOIN LATERAL (SELECT estado FROM mensajes WHERE cliente_id = c.id AND created_at >= $1 OFFSET 0) m
         GROUP BY m.estado ORDER BY m.estado`,
        [since],
      );
    },
    async journalEvent(ev: JournalEvent): Promise<void> {
      await db.tx((c) => journal(c, ev));
    },
    async acceptMensaje(m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> {
      return acceptOne(m, opts, now);
    },
    async getMensaje(msgId: string): Promise<MensajeRow | null> {
      return db.one<MensajeRow>(`SELECT ${COLS} FROM mensajes WHERE msg_id = $1`, [msgId]);
    },
    async mensajeHechos(clienteId: number, msgId: string): Promise<MensajeHechos | null> {
      const own = await db.one<Omit<MensajeHechos, 'movimientos'>>(hechosSelect(ph), [msgId, clienteId]);
      if (!own) return null;
      const rows = await db.q<MensajeHechos['movimientos'][number] & { id: number; cliente_id: number }>(movimientosDeMensajeSelect(ph), [
        recipe.chargeMotivo(msgId),
        recipe.refundMotivo(msgId),
      ]);
      return { ...own, movimientos: ownMovimientos(rows, clienteId) };
    },
    async getMensajeByGatewayId(gid: string): Promise<MensajeRow | null> {
      return db.one<MensajeRow>(`SELECT ${COLS} FROM mensajes WHERE msg_id = (SELECT msg_id FROM ids_gateway WHERE gateway_msg_id = $1 LIMIT 1)`, [gid]);
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
    /** Read from the pending messages' side table (state-paths.ts): the cost follows the pending messages, not the history. */
    async pendingFiles(): Promise<string[]> {
      const r = await db.q<{ f: string }>(
        `SELECT f FROM (SELECT m.payload::jsonb ->> 'file' AS f FROM mensajes_pendientes p JOIN mensajes m ON m.msg_id = p.msg_id) x
     WHERE f IS NOT NULL`,
      );
      return r.map((x) => x.f);
    },
  };
}
