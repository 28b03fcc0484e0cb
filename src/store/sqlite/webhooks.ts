import type { EntregaClaim, EventRoute, IntentoRow, ListenerCopy, WebhooksStore } from '../../core/ports/webhooks.js';
import type Database from 'better-sqlite3';
import type { EntregaRow, EscuchaRow, WebhookConfig } from '../../core/ports/model.js';
import { grouped, immediate, ph, stmt } from './statements.js';
import { popUndo, pushUndo, webhookConfigOf, type StoredWebhook } from '../../core/webhook-undo.js';
import { journalClients, type JournalRow, routeJournal } from '../../core/journal-route.js';
import { attemptSql, attemptUpdateValues, escuchaInsert, escuchaValues, intentoValues } from '../recipe-sql.js';

/** Webhook configuration, the outbox of deliveries and their attempts, in SQLite. */
type DB = Database.Database;

type WebhookRow = StoredWebhook & { activo: number; prev: string | null };

function row(db: DB, clienteId: number): WebhookRow | undefined {
  return stmt(db, 'SELECT * FROM webhooks WHERE cliente_id = ?').get(clienteId) as WebhookRow | undefined;
}

function getWebhook(db: DB, clienteId: number): WebhookConfig | null {
  // Read for every delivery: without `prev`, the stack of replaced configurations.
  const r = stmt(db, 'SELECT cliente_id, url, secret, eventos, activo, updated_at FROM webhooks WHERE cliente_id = ?').get(clienteId) as
    Omit<WebhookRow, 'prev'> | undefined;
  return r && r.url !== '' ? webhookConfigOf(r) : null;
}

/**
 * Whether anyone takes the client's events at `at`: a configuration that is
 * active (a deleted one keeps its row, with an empty url) or a live listener.
 */
export function wantsEvents(db: DB, clienteId: number, at: number): boolean {
  return (
    stmt(db, "SELECT 1 FROM webhooks WHERE cliente_id = ? AND activo = 1 AND url != ''").get(clienteId) !== undefined ||
    stmt(db, 'SELECT 1 FROM webhook_escuchas WHERE cliente_id = ? AND expira_at > ? LIMIT 1').get(clienteId, at) !== undefined
  );
}

function enqueueEntrega(db: DB, e: { id: string; cliente_id: number; evento: string; body: string }, now: number): void {
  stmt(
    db,
    `INSERT INTO webhook_entregas (id, cliente_id, evento, body, estado, intentos, proximo_intento_at, created_at)
     VALUES (?, ?, ?, ?, 'pendiente', 0, ?, ?)`,
  ).run(e.id, e.cliente_id, e.evento, e.body, now, now);
}

/** What a delivery row is to its readers: the claim columns are the dispatcher's business only. */
const ENTREGA_COLS = 'id, cliente_id, evento, body, estado, intentos, proximo_intento_at, created_at, entregado_at, ultimo_error';

/** Every claim (a start of the only process that serves this file, or its background thread's death): none is in force. */
export function releaseAllEntregaClaims(db: DB): number {
  return stmt(db, 'UPDATE webhook_entregas SET reclamo = NULL, reclamo_hasta = NULL WHERE reclamo_hasta IS NOT NULL').run().changes;
}

type StoredEscucha = Omit<EscuchaRow, 'eventos'> & { eventos: string };

const escuchaOf = (r: StoredEscucha): EscuchaRow => ({ ...r, eventos: JSON.parse(r.eventos) as string[] });

function liveEscuchas(db: DB, clienteId: number, now: number): EscuchaRow[] {
  const rows = stmt(db, 'SELECT * FROM webhook_escuchas WHERE cliente_id = ? AND expira_at > ? ORDER BY created_at, id').all(clienteId, now) as StoredEscucha[];
  return rows.map(escuchaOf);
}

/** The WebhooksStore port over one connection. */
export function webhooks(db: DB): WebhooksStore {
  return {
    async getWebhook(clienteId: number): Promise<WebhookConfig | null> {
      return getWebhook(db, clienteId);
    },
    async setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number): Promise<WebhookConfig> {
      return immediate(db, () => {
        const prev = pushUndo(row(db, cfg.cliente_id));
        stmt(
          db,
          `INSERT INTO webhooks (cliente_id, url, secret, eventos, activo, updated_at, prev) VALUES (@cliente_id, @url, @secret, @eventos, @activo, @now, @prev)
       ON CONFLICT (cliente_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, eventos = excluded.eventos,
         activo = excluded.activo, updated_at = excluded.updated_at, prev = excluded.prev`,
        ).run({ ...cfg, eventos: JSON.stringify(cfg.eventos), activo: cfg.activo ? 1 : 0, now, prev });
        return webhookConfigOf(row(db, cfg.cliente_id)!);
      });
    },
    /** A removed configuration stays as an empty row whose `prev` can be restored. */
    async deleteWebhook(clienteId: number, now: number): Promise<boolean> {
      return immediate(db, () => {
        const before = row(db, clienteId);
        if (!before || before.url === '') return false;
        stmt(db, "UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = 0, updated_at = ?, prev = ? WHERE cliente_id = ?").run(
          now,
          pushUndo(before),
          clienteId,
        );
        return true;
      });
    },
    async restoreWebhook(clienteId: number, now: number): Promise<WebhookConfig | null | 'nada'> {
      return immediate(db, () => {
        const undo = popUndo(row(db, clienteId)?.prev);
        if (!undo) return 'nada';
        const { top: prev, rest } = undo;
        if (prev === null) {
          stmt(db, "UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = 0, updated_at = ?, prev = ? WHERE cliente_id = ?").run(
            now,
            rest,
            clienteId,
          );
          return null;
        }
        stmt(db, 'UPDATE webhooks SET url = ?, secret = ?, eventos = ?, activo = ?, updated_at = ?, prev = ? WHERE cliente_id = ?').run(
          prev.url,
          prev.secret,
          prev.eventos,
          prev.activo,
          now,
          rest,
          clienteId,
        );
        return webhookConfigOf(row(db, clienteId)!);
      });
    },
    deactivateWebhook(clienteId: number, now: number): Promise<void> {
      return grouped(db, () => {
        stmt(db, 'UPDATE webhooks SET activo = 0, updated_at = ? WHERE cliente_id = ?').run(now, clienteId);
      });
    },
    enqueueEntrega(e: { id: string; cliente_id: number; evento: string; body: string }, now: number): Promise<void> {
      return grouped(db, () => enqueueEntrega(db, e, now));
    },
    /** A client's due deliveries, in the order they fell due (the index's order: no sort). */
    async dueEntregas(clienteId: number, now: number, limit: number): Promise<EntregaRow[]> {
      return stmt(
        db,
        `SELECT ${ENTREGA_COLS} FROM webhook_entregas WHERE cliente_id = ? AND estado = 'pendiente' AND proximo_intento_at <= ?
     ORDER BY proximo_intento_at, rowid LIMIT ?`,
      ).all(clienteId, now, limit) as EntregaRow[];
    },
    /**
     * Claims up to `limit` of a client's due deliveries that nobody holds (or
     * whose claim ran out: its holder died), oldest due first, in one statement:
     * what it returns no other claim returns until the claim is cleared or ends.
     */
    claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]> {
      return grouped(db, () => {
        const rows = stmt(
          db,
          `UPDATE webhook_entregas SET reclamo = @id, reclamo_hasta = @until WHERE rowid IN (
       SELECT rowid FROM webhook_entregas WHERE cliente_id = @cliente AND estado = 'pendiente' AND proximo_intento_at <= @now
         AND (reclamo_hasta IS NULL OR reclamo_hasta <= @now) AND (@first = 0 OR intentos = 0)
       ORDER BY proximo_intento_at, rowid LIMIT @limit)
     RETURNING rowid AS _r, ${ENTREGA_COLS}`,
        ).all({ id: claim.id, until: claim.until, cliente: clienteId, now, first: claim.firstOnly ? 1 : 0, limit }) as Array<EntregaRow & { _r: number }>;
        // RETURNING's order is not the subquery's.
        rows.sort((a, b) => a.proximo_intento_at - b.proximo_intento_at || a._r - b._r);
        return rows.map(({ _r, ...e }) => e);
      });
    },
    /** Gives back claimed deliveries that were not attempted: due again at their own time, for anyone. */
    releaseEntregas(ids: string[], claimId: string): Promise<number> {
      return grouped(db, () => {
        const release = stmt(db, 'UPDATE webhook_entregas SET reclamo = NULL, reclamo_hasta = NULL WHERE id = ? AND reclamo = ?');
        return immediate(db, () => ids.reduce((n, id) => n + release.run(id, claimId).changes, 0));
      });
    },
    /**
     * When a client's next pending delivery may be claimed after `after`: the
     * next due time, or the end of a claim in force (a holder that dies leaves
     * its delivery due at that end); null when neither.
     */
    async nextEntregaAt(clienteId: number, after: number): Promise<number | null> {
      const r = stmt(
        db,
        `SELECT MIN(t) AS t FROM (
       SELECT MIN(proximo_intento_at) AS t FROM webhook_entregas WHERE cliente_id = @c AND estado = 'pendiente' AND proximo_intento_at > @after
       UNION ALL
       SELECT MIN(reclamo_hasta) FROM webhook_entregas WHERE cliente_id = @c AND reclamo_hasta > @after)`,
      ).get({ c: clienteId, after }) as { t: number | null };
      return r.t;
    },
    /** Every client with pending deliveries, and when its first falls due. */
    async entregaQueues(): Promise<Array<{ cliente_id: number; next_at: number }>> {
      return stmt(
        db,
        "SELECT cliente_id, MIN(proximo_intento_at) AS next_at FROM webhook_entregas WHERE estado = 'pendiente' GROUP BY cliente_id",
      ).all() as Array<{
        cliente_id: number;
        next_at: number;
      }>;
    },
    /** The outbox's backlog (metrics): a count over the partial index of pending deliveries, which holds their due times too. */
    async outboxDepth(now: number): Promise<{ pending: number; due: number }> {
      return stmt(db, "SELECT COUNT(*) AS pending, COALESCE(SUM(proximo_intento_at <= ?), 0) AS due FROM webhook_entregas WHERE estado = 'pendiente'").get(
        now,
      ) as {
        pending: number;
        due: number;
      };
    },
    /**
     * Records an attempt and the delivery's new state, clearing its claim, if
     * the claim is still `claimId`'s; false (nothing written) when it is not:
     * it ran out and another holder has the delivery now, and records its own.
     */
    recordAttempt(...[id, claimId, a, o, now]: Parameters<WebhooksStore['recordAttempt']>): Promise<boolean> {
      return grouped(db, () => {
        return immediate(db, () => {
          const t = { id, claimId, a, o, now };
          const sql = attemptSql(ph);
          const e = stmt(db, sql.update).get(...attemptUpdateValues(t)) as { intentos: number } | undefined;
          if (!e) return false;
          stmt(db, sql.insert).run(...intentoValues(t, e.intentos));
          return true;
        });
      });
    },
    async listEntregas(clienteId: number, limit: number): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>> {
      const rows = stmt(db, `SELECT ${ENTREGA_COLS} FROM webhook_entregas WHERE cliente_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`).all(
        clienteId,
        limit,
      ) as EntregaRow[];
      const attempts = stmt(db, 'SELECT n, fecha, status, duracion_ms, error FROM webhook_intentos WHERE entrega_id = ? ORDER BY n');
      return rows.map((r) => ({ ...r, intentos_detalle: attempts.all(r.id) as IntentoRow[] }));
    },
    async redeliver(clienteId: number, id: string, now: number): Promise<boolean> {
      return (
        stmt(db, "UPDATE webhook_entregas SET estado = 'pendiente', proximo_intento_at = ? WHERE id = ? AND cliente_id = ?").run(now, id, clienteId).changes ===
        1
      );
    },
    moveEventsToOutbox(limit: number, route: EventRoute, now: number): Promise<{ taken: number; copies: ListenerCopy[] }> {
      return grouped(db, () => {
        const events = stmt(db, 'SELECT seq, cliente_id, celular_id, evento, data, fecha FROM eventos ORDER BY seq LIMIT ?').all(limit) as JournalRow[];
        const configs = new Map<number, WebhookConfig | null>();
        const listeners = new Map<number, EscuchaRow[]>();
        for (const id of journalClients(events)) {
          configs.set(id, getWebhook(db, id));
          listeners.set(id, liveEscuchas(db, id, now));
        }
        const { entregas, copies } = routeJournal(events, configs, listeners, route);
        for (const e of entregas) enqueueEntrega(db, e, now);
        // The lowest seqs were read, in this transaction: everything up to the last one is what was taken.
        if (events.length > 0) stmt(db, 'DELETE FROM eventos WHERE seq <= ?').run(events[events.length - 1]!.seq);
        return { taken: events.length, copies };
      });
    },
    async liveEscuchas(clienteId: number, now: number): Promise<EscuchaRow[]> {
      return liveEscuchas(db, clienteId, now);
    },
    async addEscucha(e: EscuchaRow, max: number, now: number): Promise<EscuchaRow | 'limite'> {
      return immediate(db, () => {
        stmt(db, 'DELETE FROM webhook_escuchas WHERE cliente_id = ? AND expira_at <= ?').run(e.cliente_id, now);
        const { n } = stmt(db, 'SELECT COUNT(*) AS n FROM webhook_escuchas WHERE cliente_id = ?').get(e.cliente_id) as { n: number };
        if (n >= max) return 'limite';
        stmt(db, escuchaInsert(ph)).run(...escuchaValues(e));
        return e;
      });
    },
    async renewEscucha(clienteId: number, id: string, expiraAt: number, now: number): Promise<EscuchaRow | null> {
      const r = stmt(db, 'UPDATE webhook_escuchas SET expira_at = ? WHERE id = ? AND cliente_id = ? AND expira_at > ? RETURNING *').get(
        expiraAt,
        id,
        clienteId,
        now,
      ) as StoredEscucha | undefined;
      return r ? escuchaOf(r) : null;
    },
    async deleteEscucha(clienteId: number, id: string, now: number): Promise<boolean> {
      const r = stmt(db, 'DELETE FROM webhook_escuchas WHERE id = ? AND cliente_id = ? RETURNING expira_at').get(id, clienteId) as
        { expira_at: number } | undefined;
      return r !== undefined && r.expira_at > now;
    },
  };
}
