import type { EntregaClaim, EventRoute, IntentoRow, ListenerCopy, WebhooksStore } from '../../core/ports/webhooks.js';
import type { EntregaRow, EscuchaRow, WebhookConfig } from '../../core/ports/model.js';
import { popUndo, pushUndo, webhookConfigOf, type StoredWebhook } from '../../core/webhook-undo.js';
import { type Client, type Db, LOCK, ph, type Queryable, row, rows } from './db.js';
import { journalClients, type JournalRow, routeJournal } from '../../core/journal-route.js';
import { attemptSql, attemptUpdateValues, escuchaInsert, escuchaValues, intentoValues } from '../recipe-sql.js';

/** Webhook configuration, the outbox of deliveries and their attempts, in PostgreSQL. */

type WebhookRow = StoredWebhook & { activo: boolean; prev: string | null };

const ENTREGA_COLS = 'id, cliente_id, evento, body, estado, intentos, proximo_intento_at, created_at, entregado_at, ultimo_error';

/**
 * The client's configuration row, locked. A client without one gets an empty
 * row first (url '', what a deleted configuration leaves, which every reader
 * treats as none), so two nodes changing a first configuration together
 * queue on one row instead of both reading "none".
 */
async function lockRow(c: Client, clienteId: number, now: number): Promise<WebhookRow> {
  await c.query(
    `INSERT INTO webhooks (cliente_id, url, secret, eventos, activo, updated_at, prev) VALUES ($1, '', NULL, '[]', false, $2, NULL)
     ON CONFLICT (cliente_id) DO NOTHING`,
    [clienteId, now],
  );
  return (await row<WebhookRow>(c, 'SELECT * FROM webhooks WHERE cliente_id = $1 FOR UPDATE', [clienteId]))!;
}

async function getWebhook(q: Queryable, clienteId: number): Promise<WebhookConfig | null> {
  const r = (await q.query('SELECT cliente_id, url, secret, eventos, activo, updated_at FROM webhooks WHERE cliente_id = $1', [clienteId])).rows[0] as
    Omit<WebhookRow, 'prev'> | undefined;
  return r && r.url !== '' ? webhookConfigOf(r) : null;
}

async function enqueueEntrega(q: Queryable, e: { id: string; cliente_id: number; evento: string; body: string }, now: number): Promise<void> {
  await q.query(
    `INSERT INTO webhook_entregas (id, cliente_id, evento, body, estado, intentos, proximo_intento_at, created_at)
     VALUES ($1, $2, $3, $4, 'pendiente', 0, $5, $5)`,
    [e.id, e.cliente_id, e.evento, e.body, now],
  );
}

type StoredEscucha = Omit<EscuchaRow, 'eventos'> & { eventos: string };

const escuchaOf = (r: StoredEscucha): EscuchaRow => ({ ...r, eventos: JSON.parse(r.eventos) as string[] });

async function liveEscuchas(q: Queryable, clienteId: number, now: number): Promise<EscuchaRow[]> {
  const r = await q.query('SELECT * FROM webhook_escuchas WHERE cliente_id = $1 AND expira_at > $2 ORDER BY created_at, id', [clienteId, now]);
  return (r.rows as StoredEscucha[]).map(escuchaOf);
}

/** The WebhooksStore port over one pool. */
export function webhooks(db: Db): WebhooksStore {
  return {
    async getWebhook(clienteId: number): Promise<WebhookConfig | null> {
      return getWebhook(db, clienteId);
    },
    async setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number): Promise<WebhookConfig> {
      return db.tx(async (c) => {
        const prev = pushUndo(await lockRow(c, cfg.cliente_id, now));
        const r = (await row<WebhookRow>(
          c,
          'UPDATE webhooks SET url = $2, secret = $3, eventos = $4, activo = $5, updated_at = $6, prev = $7 WHERE cliente_id = $1 RETURNING *',
          [cfg.cliente_id, cfg.url, cfg.secret, JSON.stringify(cfg.eventos), cfg.activo, now, prev],
        ))!;
        return webhookConfigOf(r);
      });
    },
    /** A removed configuration stays as an empty row whose `prev` can be restored. */
    async deleteWebhook(clienteId: number, now: number): Promise<boolean> {
      return db.tx(async (c) => {
        const before = await row<WebhookRow>(c, 'SELECT * FROM webhooks WHERE cliente_id = $1 FOR UPDATE', [clienteId]);
        if (!before || before.url === '') return false;
        await c.query("UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = false, updated_at = $2, prev = $3 WHERE cliente_id = $1", [
          clienteId,
          now,
          pushUndo(before),
        ]);
        return true;
      });
    },
    async restoreWebhook(clienteId: number, now: number): Promise<WebhookConfig | null | 'nada'> {
      return db.tx(async (c) => {
        const current = await row<WebhookRow>(c, 'SELECT * FROM webhooks WHERE cliente_id = $1 FOR UPDATE', [clienteId]);
        const undo = popUndo(current?.prev);
        if (!undo) return 'nada' as const;
        const { top: prev, rest } = undo;
        if (prev === null) {
          await c.query("UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = false, updated_at = $2, prev = $3 WHERE cliente_id = $1", [
            clienteId,
            now,
            rest,
          ]);
          return null;
        }
        const r = (await row<WebhookRow>(
          c,
          'UPDATE webhooks SET url = $2, secret = $3, eventos = $4, activo = $5, updated_at = $6, prev = $7 WHERE cliente_id = $1 RETURNING *',
          [clienteId, prev.url, prev.secret, prev.eventos, prev.activo === 1, now, rest],
        ))!;
        return webhookConfigOf(r);
      });
    },
    async deactivateWebhook(clienteId: number, now: number): Promise<void> {
      await db.q('UPDATE webhooks SET activo = false, updated_at = $2 WHERE cliente_id = $1', [clienteId, now]);
    },
    async enqueueEntrega(e: { id: string; cliente_id: number; evento: string; body: string }, now: number): Promise<void> {
      return enqueueEntrega(db, e, now);
    },
    /** A client's due deliveries, in the order they fell due (the partial index's order). */
    async dueEntregas(clienteId: number, now: number, limit: number): Promise<EntregaRow[]> {
      return db.q<EntregaRow>(
        `SELECT ${ENTREGA_COLS} FROM webhook_entregas WHERE cliente_id = $1 AND estado = 'pendiente' AND proximo_intento_at <= $2
     ORDER BY proximo_intento_at, seq LIMIT $3`,
        [clienteId, now, limit],
      );
    },
    /**
     * Claims up to `limit` of a client's due deliveries that nobody holds (or
     * whose claim ran out: its holder died), oldest due first, in one statement.
     * Rows another claimer has locked are skipped, not waited for. The locking
     * pick is a CTE, run once (as `id IN (subquery)` it may be run again for
     * each row the UPDATE looks at, taking more than `limit`), and the UPDATE
     * checks the conditions again on the row's newest version: a delivery whose
     * attempt was recorded after this statement's snapshot is not claimed (and
     * sent) again.
     */
    async claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]> {
      const list = await db.q<EntregaRow & { seq: number }>(
        `WITH picked AS (
       SELECT id FROM webhook_entregas WHERE cliente_id = $1 AND estado = 'pendiente' AND proximo_intento_at <= $2
         AND (reclamo_hasta IS NULL OR reclamo_hasta <= $2) AND (NOT $6 OR intentos = 0)
       ORDER BY proximo_intento_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
     UPDATE webhook_entregas e SET reclamo = $4, reclamo_hasta = $5 FROM picked
     WHERE e.id = picked.id AND e.estado = 'pendiente' AND e.proximo_intento_at <= $2 AND (e.reclamo_hasta IS NULL OR e.reclamo_hasta <= $2)
     RETURNING e.seq, ${ENTREGA_COLS.split(', ')
       .map((c) => `e.${c}`)
       .join(', ')}`,
        [clienteId, now, limit, claim.id, claim.until, claim.firstOnly === true],
      );
      // RETURNING's order is not the pick's.
      list.sort((a, b) => a.proximo_intento_at - b.proximo_intento_at || a.seq - b.seq);
      return list.map(({ seq: _s, ...e }) => e);
    },
    /** Gives back claimed deliveries that were not attempted: due again at their own time, for anyone. */
    async releaseEntregas(ids: string[], claimId: string): Promise<number> {
      if (ids.length === 0) return 0;
      const r = await db.q('UPDATE webhook_entregas SET reclamo = NULL, reclamo_hasta = NULL WHERE id = ANY($1::text[]) AND reclamo = $2 RETURNING 1', [
        ids,
        claimId,
      ]);
      return r.length;
    },
    /**
     * When a client's next pending delivery may be claimed after `after`: the
     * next due time, or the end of a claim in force (a holder that dies leaves
     * its delivery due at that end); null when neither.
     */
    async nextEntregaAt(clienteId: number, after: number): Promise<number | null> {
      const r = await db.one<{ t: number | null }>(
        `SELECT LEAST(
       (SELECT MIN(proximo_intento_at) FROM webhook_entregas WHERE cliente_id = $1 AND estado = 'pendiente' AND proximo_intento_at > $2),
       (SELECT MIN(reclamo_hasta) FROM webhook_entregas WHERE cliente_id = $1 AND reclamo_hasta > $2)) AS t`,
        [clienteId, after],
      );
      return r?.t ?? null;
    },
    async entregaQueues(): Promise<Array<{ cliente_id: number; next_at: number }>> {
      return db.q("SELECT cliente_id, MIN(proximo_intento_at) AS next_at FROM webhook_entregas WHERE estado = 'pendiente' GROUP BY cliente_id");
    },
    /** The outbox's backlog (metrics): a count over the partial index of pending deliveries, which holds their due times too. */
    async outboxDepth(now: number): Promise<{ pending: number; due: number }> {
      const [r] = await db.q<{ pending: number; due: number }>(
        "SELECT COUNT(*) AS pending, COUNT(*) FILTER (WHERE proximo_intento_at <= $1) AS due FROM webhook_entregas WHERE estado = 'pendiente'",
        [now],
      );
      return { pending: r?.pending ?? 0, due: r?.due ?? 0 };
    },
    /**
     * Records an attempt and the delivery's new state, clearing its claim, if
     * the claim is still `claimId`'s; false (nothing written) when it is not: it
     * ran out and another holder has the delivery now, and records its own. The
     * attempt number is the delivery's count after its own increment, taken
     * under the delivery's row lock.
     */
    async recordAttempt(...[id, claimId, a, o, now]: Parameters<WebhooksStore['recordAttempt']>): Promise<boolean> {
      return db.tx(async (c) => {
        const t = { id, claimId, a, o, now };
        const sql = attemptSql(ph);
        const e = await row<{ intentos: number }>(c, sql.update, attemptUpdateValues(t));
        if (!e) return false;
        await c.query(sql.insert, intentoValues(t, e.intentos));
        return true;
      });
    },
    async listEntregas(clienteId: number, limit: number): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>> {
      const list = await db.q<EntregaRow>(`SELECT ${ENTREGA_COLS} FROM webhook_entregas WHERE cliente_id = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`, [
        clienteId,
        limit,
      ]);
      if (list.length === 0) return [];
      const attempts = await db.q<IntentoRow & { entrega_id: string }>(
        'SELECT entrega_id, n, fecha, status, duracion_ms, error FROM webhook_intentos WHERE entrega_id = ANY($1::text[]) ORDER BY entrega_id, n',
        [list.map((e) => e.id)],
      );
      const by = new Map<string, IntentoRow[]>();
      for (const { entrega_id, ...i } of attempts) (by.get(entrega_id) ?? by.set(entrega_id, []).get(entrega_id)!).push(i);
      return list.map((e) => ({ ...e, intentos_detalle: by.get(e.id) ?? [] }));
    },
    async redeliver(clienteId: number, id: string, now: number): Promise<boolean> {
      const r = await db.q("UPDATE webhook_entregas SET estado = 'pendiente', proximo_intento_at = $3 WHERE id = $2 AND cliente_id = $1 RETURNING 1", [
        clienteId,
        id,
        now,
      ]);
      return r.length === 1;
    },
    /**
     * Moves journaled events to the outbox. Movers on several nodes take turns
     * (a transaction-scoped advisory lock), so events leave the journal in order
     * and once; the rows taken are deleted by their own keys, so an event that
     * committed meanwhile with a lower number is left for the next move instead
     * of being deleted unread.
     */
    async moveEventsToOutbox(limit: number, route: EventRoute, now: number): Promise<{ taken: number; copies: ListenerCopy[] }> {
      // Most looks find the journal empty: one read says so, without a transaction and the movers' lock.
      if (!(await db.one('SELECT 1 FROM eventos ORDER BY seq LIMIT 1'))) return { taken: 0, copies: [] };
      return db.tx(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK.journal]);
        const events = await rows<JournalRow>(c, 'SELECT seq, cliente_id, celular_id, evento, data, fecha FROM eventos ORDER BY seq LIMIT $1', [limit]);
        const configs = new Map<number, WebhookConfig | null>();
        const listeners = new Map<number, EscuchaRow[]>();
        for (const id of journalClients(events)) {
          configs.set(id, await getWebhook(c, id));
          listeners.set(id, await liveEscuchas(c, id, now));
        }
        // Of this attempt only: a transaction retried after a deadlock routes its events again.
        const { entregas, copies } = routeJournal(events, configs, listeners, route);
        for (const e of entregas) await enqueueEntrega(c, e, now);
        if (events.length > 0) await c.query('DELETE FROM eventos WHERE seq = ANY($1::bigint[])', [events.map((e) => e.seq)]);
        return { taken: events.length, copies };
      });
    },
    async liveEscuchas(clienteId: number, now: number): Promise<EscuchaRow[]> {
      return liveEscuchas(db, clienteId, now);
    },
    /** Count and insert under the client's listeners lock, so two nodes adding at once cannot both pass the limit. */
    async addEscucha(e: EscuchaRow, max: number, now: number): Promise<EscuchaRow | 'limite'> {
      return db.tx(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2::text))', [LOCK.listeners, e.cliente_id]);
        await c.query('DELETE FROM webhook_escuchas WHERE cliente_id = $1 AND expira_at <= $2', [e.cliente_id, now]);
        const n = (await row<{ n: number }>(c, 'SELECT COUNT(*)::int AS n FROM webhook_escuchas WHERE cliente_id = $1', [e.cliente_id]))!.n;
        if (n >= max) return 'limite' as const;
        await c.query(escuchaInsert(ph), escuchaValues(e));
        return e;
      });
    },
    async renewEscucha(clienteId: number, id: string, expiraAt: number, now: number): Promise<EscuchaRow | null> {
      const r = await db.one<StoredEscucha>('UPDATE webhook_escuchas SET expira_at = $3 WHERE id = $1 AND cliente_id = $2 AND expira_at > $4 RETURNING *', [
        id,
        clienteId,
        expiraAt,
        now,
      ]);
      return r ? escuchaOf(r) : null;
    },
    async deleteEscucha(clienteId: number, id: string, now: number): Promise<boolean> {
      const r = await db.one<{ expira_at: number }>('DELETE FROM webhook_escuchas WHERE id = $1 AND cliente_id = $2 RETURNING expira_at', [id, clienteId]);
      return r !== null && r.expira_at > now;
    },
  };
}
