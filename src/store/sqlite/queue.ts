import type { CancelResult, ClaimResult, QueuedRow, BacklogLine, ExpiryLook, QueueStore } from '../../core/ports/queue.js';
import type Database from 'better-sqlite3';
import type { SlotClaim } from '../../core/sending/caps.js';
import type { MensajeRow } from '../../core/ports/model.js';
import { capHit, lineSlots } from './messages.js';
import { failMensajes } from './transitions.js';
import { grouped, immediate, stmt } from './statements.js';
import { releaseAllEntregaClaims } from './webhooks.js';
import { slotOn } from '../../core/billing/recipes.js';
import { slotSet, slotTime } from '../recipe-sql.js';
import { keepSlot, pruneSlots } from './state-paths.js';

/**
 * The queue in SQLite: the lines' heads, claims with their caps slot, retries,
 * the direct sends a crash left pending. A claim runs in one IMMEDIATE
 * transaction.
 */
type DB = Database.Database;

/** The lines with a backlog: the rows of cola_lineas, which the queue's triggers keep (D-180). */
const BACKLOG_LINES = 'WITH lineas(id) AS (SELECT celular_id FROM cola_lineas)';

/** No older ready message (never scheduled, or claimed once) of the line to recipient `dest` holds `seq` back. */
const readyFirst = (line: string, dest: string, seq: string) =>
  `NOT EXISTS (SELECT 1 FROM cola o INDEXED BY cola_destino WHERE o.enviar_en IS NULL AND o.celular_id = ${line} AND o.destinatario = ${dest}
     AND o.seq < ${seq})`;

/** No older scheduled message of the line to `dest`, due by `@now` and never claimed, holds `seq` back. */
const scheduledFirst = (line: string, dest: string, seq: string) =>
  `NOT EXISTS (SELECT 1 FROM cola o INDEXED BY cola_destino_programados WHERE o.enviar_en IS NOT NULL AND o.celular_id = ${line}
     AND o.destinatario = ${dest} AND o.enviar_en <= @now AND o.seq < ${seq})`;

/**
 * No older pending message of the line to recipient `dest` holds queue place `seq` back: any but a scheduled one not
 * yet due (D-181). A seek in each half of the recipient index (D-186: scheduled messages apart), each named (by cost
 * alone SQLite took the line's index, a read of every older message of the line).
 */
export const firstOfRecipient = (line: string, dest: string, seq: string) => `${readyFirst(line, dest, seq)}
   AND ${scheduledFirst(line, dest, seq)}`;
const FIRST_OF_RECIPIENT = firstOfRecipient('c.celular_id', 'c.destinatario', 'c.seq');

/** A line's first queue place: the lower of its two halves' (D-186), each a seek. */
const lineFirstSeq = (line: string) =>
  `(SELECT MIN(s) FROM (SELECT MIN(seq) AS s FROM cola INDEXED BY cola_linea WHERE enviar_en IS NULL AND celular_id = ${line}
     UNION ALL SELECT MIN(seq) FROM cola INDEXED BY cola_linea_programados WHERE enviar_en IS NOT NULL AND celular_id = ${line}))`;

/**
 * One line's queued messages in order over both halves of its line index (D-186), each half a seek bounded by `limit`,
 * merged by seq: `cols` from `cola c` joined to `mensajes m`, `where` on the line (`c.celular_id = ...`) and more.
 */
export const lineQueueSql = (cols: string, where: string, limit: string) =>
  [
    ['cola_linea', 'IS NULL'],
    ['cola_linea_programados', 'IS NOT NULL'],
  ]
    .map(
      ([index, scheduled]) =>
        `SELECT * FROM (SELECT ${cols} FROM cola c INDEXED BY ${index} JOIN mensajes m ON m.msg_id = c.msg_id
         WHERE c.enviar_en ${scheduled} AND ${where} ORDER BY c.seq LIMIT ${limit})`,
    )
    .join(' UNION ALL ') + ` ORDER BY seq LIMIT ${limit}`;

/**
 * The look's read (queueLook): per line with a backlog, its oldest message never deferred and its oldest
 * deferred one due by `@now` that are first of their recipient, and its next deferred one's due time. A line's
 * earliest deferred time (cola_lineas.proximo, D-187) still ahead says none of its deferred messages is due, nor any
 * scheduled one (a scheduled message leaves that half at its first claim, so there its next attempt is its due
 * time): the look then reads nothing of the scheduled half for it.
 */
const LOOK = `WITH lineas AS MATERIALIZED (SELECT celular_id AS id, proximo FROM cola_lineas)
     SELECT lineas.id AS celular_id,
       (SELECT c.seq FROM cola c INDEXED BY cola_listos WHERE c.celular_id = lineas.id AND c.proximo_intento_at IS NULL
          AND ${readyFirst('c.celular_id', 'c.destinatario', 'c.seq')}
          AND (lineas.proximo IS NULL OR lineas.proximo > @now OR ${scheduledFirst('c.celular_id', 'c.destinatario', 'c.seq')})
          ORDER BY c.seq LIMIT 1) AS listo,
       CASE WHEN lineas.proximo <= @now THEN
         (SELECT MIN(c.seq) FROM cola c INDEXED BY cola_diferidos WHERE c.celular_id = lineas.id AND c.proximo_intento_at IS NOT NULL
          AND c.proximo_intento_at <= @now AND ${FIRST_OF_RECIPIENT}) END AS diferido,
       CASE WHEN lineas.proximo > @now OR lineas.proximo IS NULL THEN lineas.proximo ELSE
         (SELECT MIN(c.proximo_intento_at) FROM cola c INDEXED BY cola_diferidos WHERE c.celular_id = lineas.id
          AND c.proximo_intento_at IS NOT NULL AND c.proximo_intento_at > @now) END AS proximo
     FROM lineas WHERE lineas.id IS NOT NULL`;

/**
 * The expiry sweep's work at `@now` (ExpiryLook): an expired message no live claim holds, through the queue's
 * validity index (migration 30), and the next time there will be one: a validity ending, or a claim on an expired one.
 */
const EXPIRY = `SELECT EXISTS (SELECT 1 FROM cola c JOIN mensajes m ON m.msg_id = c.msg_id
       WHERE c.vence_at <= @now AND (m.lease_until IS NULL OR m.lease_until <= @now)) AS expired,
     (SELECT MIN(t) FROM (SELECT MIN(vence_at) AS t FROM cola WHERE vence_at > @now
       UNION ALL SELECT MIN(m.lease_until) FROM cola c JOIN mensajes m ON m.msg_id = c.msg_id WHERE c.vence_at <= @now AND m.lease_until > @now)) AS next`;

const expiryAt = (db: DB, now: number): ExpiryLook => {
  const r = stmt(db, EXPIRY).get({ now }) as { expired: number; next: number | null };
  return { expired: r.expired === 1, next: r.next };
};

/** The QueueStore port over one connection. */
export function queue(db: DB): QueueStore {
  return {
    /**
     * One message per line with a backlog: the lines from cola_lineas, so the
     * cost follows the number of lines, not the number of pending messages.
     */
    async queueHeads(): Promise<MensajeRow[]> {
      return stmt(
        db,
        `${BACKLOG_LINES}
     SELECT m.* FROM lineas
     JOIN cola c ON c.seq = ${lineFirstSeq('lineas.id')}
     JOIN mensajes m ON m.msg_id = c.msg_id
     WHERE lineas.id IS NOT NULL`,
      ).all() as MensajeRow[];
    },
    /**
     * Per line with a backlog its next message (D-162): the oldest due one
     * whose recipient has no older pending one, from the messages never
     * deferred in queue order (cola_listos) and the deferred ones due by `now`
     * (cola_diferidos, a range by due time), each checked against its
     * recipient's older ones (cola_destino, one seek); else when its next
     * deferred one falls due. A message waiting for its time is not read: a
     * look's cost follows the lines and the due messages, not the backlog
     * (D-143). Then the messages found, whole, and the sweep's work. Reads with no transaction: one
     * that left pendiente between them is not answered, and whoever ended it
     * asks for the look that finds the next.
     */
    async queueLook(now: number, unread: readonly number[] = []): Promise<{ lines: BacklogLine[]; due: MensajeRow[]; expiry: ExpiryLook }> {
      const rows = stmt(db, LOOK).all({ now }) as Array<{ celular_id: number; listo: number | null; diferido: number | null; proximo: number | null }>;
      const seqs: number[] = [];
      const skip = new Set(unread);
      const lines = rows.map(({ celular_id, listo, diferido, proximo }): BacklogLine => {
        const seq = listo === null ? diferido : diferido === null ? listo : Math.min(listo, diferido);
        if (seq !== null && !skip.has(celular_id)) seqs.push(seq);
        return { celular_id, proximo_intento_at: seq === null ? proximo : null };
      });
      const due =
        seqs.length === 0
          ? []
          : (stmt(
              db,
              "SELECT m.* FROM json_each(?) JOIN cola c ON c.seq = json_each.value JOIN mensajes m ON m.msg_id = c.msg_id WHERE m.estado = 'pendiente'",
            ).all(JSON.stringify(seqs)) as MensajeRow[]);
      return { lines, due, expiry: expiryAt(db, now) };
    },
    /**
     * The queue's size and age (metrics): a count over the queue, which holds
     * pending queued messages only, and the oldest of the lines' heads, found
     * as queueHeads finds them (a head is its line's first in the queue).
     */
    async queueDepth(): Promise<{ pending: number; oldest_at: number | null }> {
      const { n } = stmt(db, 'SELECT COUNT(*) AS n FROM cola').get() as { n: number };
      if (n === 0) return { pending: 0, oldest_at: null };
      const { t } = stmt(
        db,
        `${BACKLOG_LINES}
     SELECT MIN((SELECT m.created_at FROM cola c JOIN mensajes m ON m.msg_id = c.msg_id WHERE c.seq = ${lineFirstSeq('lineas.id')})) AS t
     FROM lineas WHERE lineas.id IS NOT NULL`,
      ).get() as { t: number | null };
      return { pending: n, oldest_at: t };
    },
    /**
     * Claims a queued message and its send slot together, so a direct send racing it cannot pass a cap with it;
     * with onlyHead, only while no older queued message of its line to its recipient is pending: a guess that is not its
     * recipient's first is 'taken' (D-85, D-162).
     */
    claimQueued(msgId: string, slot: SlotClaim, now: number, onlyHead = false, nodo: string | null = null): Promise<ClaimResult> {
      return grouped(db, () => {
        return immediate(db, (): ClaimResult => {
          const m = stmt(
            db,
            `SELECT celular_id FROM mensajes WHERE msg_id = @msgId AND estado = 'pendiente' AND (lease_until IS NULL OR lease_until <= @now)
               AND (proximo_intento_at IS NULL OR proximo_intento_at <= @now)
               AND (@onlyHead = 0 OR (${firstOfRecipient('mensajes.celular_id', 'mensajes.destinatario', '(SELECT seq FROM cola WHERE msg_id = @msgId)')}))`,
          ).get({ msgId, now, onlyHead: onlyHead ? 1 : 0 }) as { celular_id: number } | undefined;
          if (!m) return { ok: false, reason: 'taken' };
          const hit = capHit(db, m.celular_id, slot, now);
          if (hit) return { ok: false, reason: 'cap', ...hit };
          const taken = slotOn('claim', slot.holdUntil);
          stmt(db, `UPDATE mensajes SET ${slotSet(taken, '@until')}, nodo = @nodo, reclamado_at = @now WHERE msg_id = @msgId`).run({
            until: slotTime(taken),
            msgId,
            nodo,
            now,
          });
          pruneSlots(db, m.celular_id, now);
          keepSlot(db, { msg_id: msgId, celular_id: m.celular_id, cupo_at: slotTime(taken) });
          // Claimed, a scheduled message is due for good: into the ready half, where a retry may move its next attempt (D-187).
          stmt(db, 'UPDATE cola SET enviar_en = NULL WHERE msg_id = ? AND enviar_en IS NOT NULL').run(msgId);
          return { ok: true };
        });
      });
    },
    /** Every claim and its slot back (at start: no send of this store is in flight); the webhook deliveries' claims too, as nothing else serves this file. */
    async releaseLeases(): Promise<number> {
      releaseAllEntregaClaims(db);
      return immediate(db, () => {
        const released = stmt(
          db,
          `UPDATE mensajes SET ${slotSet(slotOn('release'), '?')} WHERE msg_id IN (SELECT msg_id FROM cola) AND lease_until IS NOT NULL RETURNING msg_id, celular_id, cupo_at`,
        ).all() as Array<{ msg_id: string; celular_id: number; cupo_at: null }>;
        for (const m of released) keepSlot(db, m);
        return released.length;
      });
    },
    /** Direct sends still pendiente whose slot ended before `before`, oldest first (see core/sending/direct-recovery.ts). */
    async strandedDirect(before: number, limit: number): Promise<MensajeRow[]> {
      return stmt(db, 'SELECT m.* FROM directos d JOIN mensajes m ON m.msg_id = d.msg_id WHERE d.cupo_at < ? ORDER BY d.cupo_at LIMIT CAST(? AS INTEGER)').all(
        before,
        limit,
      ) as MensajeRow[];
    },
    /** Per line a range of its queue (both halves of its line index, merged), then merged across lines: lines × the page at most. */
    async listQueue(celularIds: number[], after: number, limit: number): Promise<QueuedRow[]> {
      const q = stmt(db, lineQueueSql('c.seq, m.*', 'c.celular_id = @id AND c.seq > @after', 'CAST(@limit AS INTEGER)'));
      const rows = celularIds.flatMap((id) => q.all({ id, after, limit }) as QueuedRow[]);
      return rows.sort((a, b) => a.seq - b.seq).slice(0, limit);
    },
    async queueSizes(celularIds: number[]): Promise<Array<{ celular_id: number; pendientes: number }>> {
      const q = stmt(db, 'SELECT id AS celular_id, pendientes FROM celulares WHERE id = ?');
      return celularIds.flatMap((id) => (q.get(id) as { celular_id: number; pendientes: number } | undefined) ?? []);
    },
    async lineSlots(celularId: number, windows: number[], now: number) {
      return lineSlots(db, celularId, windows, now);
    },
    cancelQueued(msgId: string, error: string, now: number): Promise<CancelResult> {
      return grouped(db, (): CancelResult => {
        const cancel: { unclaimedAt: number; why?: 'no_pendiente' | 'enviando' | 'directo'; reembolso?: number } = { unclaimedAt: now };
        const [after] = failMensajes(db, [{ msgId, error, clase: 'cancelado', now, cancel }]);
        return after ? { ok: true, mensaje: after, reembolso: cancel.reembolso ?? 0 } : { ok: false, reason: cancel.why ?? 'no_pendiente' };
      });
    },
    /** The expired pending messages through the queue's validity index (migration 30), ended as a cancel is: never under a live claim. */
    expireDue(now: number, error: string, limit: number): Promise<{ ended: MensajeRow[]; next: number | null }> {
      return grouped(db, () =>
        immediate(db, () => {
          const due = stmt(
            db,
            `SELECT c.msg_id FROM cola c JOIN mensajes m ON m.msg_id = c.msg_id
             WHERE c.vence_at <= ? AND (m.lease_until IS NULL OR m.lease_until <= ?) ORDER BY c.vence_at LIMIT CAST(? AS INTEGER)`,
          ).all(now, now, limit) as Array<{ msg_id: string }>;
          const ended = failMensajes(
            db,
            due.map((d) => ({ msgId: d.msg_id, error, clase: 'caducado' as const, now, cancel: { unclaimedAt: now } })),
          ).filter((m): m is MensajeRow => m !== null);
          return { ended, next: expiryAt(db, now).next };
        }),
      );
    },
    retryLater(msgId: string, at: number, error: string): Promise<void> {
      return grouped(db, () => {
        const m = stmt(
          db,
          `UPDATE mensajes SET ${slotSet(slotOn('retry'), '?')}, proximo_intento_at = ?, intentos = intentos + 1, error = ?
     WHERE msg_id = ? AND estado = 'pendiente' RETURNING msg_id, celular_id, cupo_at`,
        ).get(at, error, msgId) as { msg_id: string; celular_id: number; cupo_at: number | null } | undefined;
        if (!m) return;
        keepSlot(db, m);
        // The queue's copy, which the worker's look reads (queueLook).
        stmt(db, 'UPDATE cola SET proximo_intento_at = ? WHERE msg_id = ?').run(at, msgId);
      });
    },
  };
}
