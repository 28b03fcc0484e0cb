import type Database from 'better-sqlite3';
import { grouped, immediate, ph, stmt } from './statements.js';
import { balanceSet, hechosSelect, movementInsert, movimientosDeMensajeSelect, ownMovimientos } from '../recipe-sql.js';
import * as recipe from '../../core/billing/recipes.js';
import { eventInsert } from './webhooks.js';
import { messageStatusData } from '../../core/events/event-data.js';
import type { CapHit, SlotClaim, SlotCount } from '../../core/sending/caps.js';
import { acceptVerdict } from '../../core/billing/ledger.js';
import type {
  AcceptedMensaje,
  AcceptOptions,
  AcceptResult,
  MensajeHechos,
  MessagesOwn,
  MessageStats,
  NewMensaje,
  NewRecibido,
} from '../../core/ports/messages.js';
import type { JournalEvent, MensajeEstado, MensajeRow } from '../../core/ports/model.js';
import { insertRecibido } from './inbox.js';
import { bindKey, keyTaken } from './idempotency.js';
import { enterPending, keepSlot, pruneSlots } from './state-paths.js';

/**
 * Messages in SQLite: acceptance with its charge (and a direct send's caps
 * slot), the journal (the changes after acceptance are transitions.ts's, the
 * queue's claims queue.ts). Each function that changes more than one row runs in
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

export function journalStatus(db: DB, m: MensajeRow, anterior: string | null, now: number): void {
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

/** Slots taken in each window of a line and its last send by `now` (the queue view, core/queue/cola.ts). */
export function lineSlots(db: DB, celularId: number, windows: number[], now: number): { counts: SlotCount[]; last: number | null } {
  const counts = slotCounts(db, celularId, windows, now);
  const { last } = stmt(db, 'SELECT MAX(cupo_at) AS last FROM cupos WHERE celular_id = ? AND cupo_at <= ?').get(celularId, now) as { last: number | null };
  return { counts, last };
}

/** MessagesStore's own methods over one connection: acceptance, the journal; the changes after acceptance are transitions.ts's. */
export function messages(db: DB): Omit<MessagesOwn, 'markSent' | 'failMensaje' | 'receipt'> {
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
    acceptMensaje(m: NewMensaje, opts: AcceptOptions, now: number): Promise<AcceptResult> {
      return grouped(db, () => {
        return immediate(db, (): AcceptResult => {
          // A key bound already is answered as a repeat, whatever else would refuse this send now.
          if (opts.idem && keyTaken(db, m.cliente_id, opts.idem.clave, now)) return { ok: false, reason: 'idempotencia' };
          const cel = stmt(db, 'SELECT saldo_actual, pendientes FROM celulares WHERE id = ? AND cliente_id = ?').get(m.celular_id, m.cliente_id) as
            { saldo_actual: number; pendientes: number } | undefined;
          const cli = stmt(db, 'SELECT saldo_global FROM clientes WHERE id = ?').get(m.cliente_id) as { saldo_global: number } | undefined;
          if (!cel || !cli) return { ok: false, reason: 'celular' };
          const verdict = acceptVerdict(
            {
              saldoCelular: cel.saldo_actual,
              saldoGlobal: cli.saldo_global,
              pendientes: cel.pendientes,
              capHit: opts.slot ? capHit(db, m.celular_id, opts.slot, now) : null,
            },
            { charge: opts.charge, queued: m.modo === 'cola', maxPending: opts.maxPending },
          );
          if (!verdict.ok) return verdict;
          const queued = recipe.queueDelta(m);
          if (queued) stmt(db, 'UPDATE celulares SET pendientes = pendientes + ? WHERE id = ?').run(queued, m.celular_id);
          const cargo = verdict.cargo;
          const paid = recipe.charge(m, cargo, { saldoCelular: cel.saldo_actual, saldoGlobal: cli.saldo_global });
          if (paid.write) {
            stmt(db, balanceSet(paid.write.balance, ph)).run(paid.write.saldo, paid.write.balance.id);
            writeMovement(db, paid.write.movement, now);
          }
          const mensaje = stmt(
            db,
            `INSERT INTO mensajes (msg_id, cliente_id, celular_id, destinatario, tipo, modo, estado, texto, media, cobrado, cargo,
           payload, intentos, proximo_intento_at, expira_at, cupo_at, created_at, reintento_de)
         VALUES (@msg_id, @cliente_id, @celular_id, @destinatario, @tipo, @modo, 'pendiente', @texto, @media, @cobrado, @cargo,
           @payload, 0, @now, @expira_at, @cupo_at, @now, @reintento_de) RETURNING *`,
          ).get({
            ...m,
            reintento_de: m.reintento_de ?? null,
            media: m.media ? JSON.stringify(m.media) : null,
            payload: JSON.stringify(m.payload),
            cobrado: cargo ? 1 : 0,
            cargo,
            cupo_at: opts.slot?.holdUntil ?? null,
            now,
          }) as MensajeRow;
          enterPending(db, mensaje);
          if (mensaje.cupo_at !== null) {
            pruneSlots(db, mensaje.celular_id, now);
            keepSlot(db, mensaje);
          }
          journalStatus(db, mensaje, null, now);
          const accepted: AcceptedMensaje = { ok: true, cargo, saldo_celular: paid.saldoCelular, saldo_global: paid.saldoGlobal, mensaje };
          if (opts.idem) bindKey(db, opts.idem, accepted, now);
          return accepted;
        });
      });
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
