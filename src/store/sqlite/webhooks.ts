import type {
  AttemptRecord,
  EntregaClaim,
  EntregaClaimRequest,
  EntregaDeMensaje,
  EntregaQueue,
  FailingWebhook,
  IntentoRow,
  WebhooksStore,
} from '../../core/ports/webhooks.js';
import type Database from 'better-sqlite3';
import type { AuditOf, EntregaRow, EscuchaRow, JournalEvent, WebhookConfig } from '../../core/ports/model.js';
import { grouped, immediate, ph, stmt } from './statements.js';
import { popUndo, pushUndo, storedConfig, webhookConfigOf, type StoredWebhook } from '../../core/events/webhook-undo.js';
import { insertAudit } from './accounts.js';
import {
  EVENT_PREFIX_KV,
  entregaOf,
  eventId,
  eventSeq,
  loggedEvent,
  type EntregaLogRow,
  type EventLogRow,
  type LoggedEvent,
} from '../../core/events/event-log.js';
import {
  ENTREGA_DE_MENSAJE_COLS,
  escuchaInsert,
  escuchaValues,
  failingWebhooksSelect,
  fallidosSelect,
  withDelivered,
  type LastAttempt,
} from '../recipe-sql.js';

/**
 * A webhook delivery's attempt, recorded on its event row (D-69) if the
 * claim is still the caller's: the update (parameters attemptUpdateValues)
 * moves the delivery, keeps the attempt's answer and time, and returns its
 * attempt count; the insert (parameters intentoValues) keeps a failed
 * attempt in a row of its own (a delivered one needs none: its event holds it).
 */
const ATTEMPT_UPDATE = `UPDATE eventos SET intentos = intentos + 1, entrega = ?, proximo_intento_at = COALESCE(?, proximo_intento_at),
    entregado_at = CASE WHEN ? = 'entregado' THEN ? ELSE entregado_at END, ultimo_error = ?,
    ultimo_status = ?, ultima_duracion_ms = ?, ultimo_nodo = ?, reclamo = NULL, reclamo_hasta = NULL
  WHERE seq = ? AND reclamo = ? RETURNING intentos`;
const ATTEMPT_INSERT = 'INSERT INTO webhook_intentos (entrega_id, n, fecha, status, duracion_ms, error, nodo) VALUES (?, ?, ?, ?, ?, ?, ?)';

interface Attempt {
  id: string;
  /** The event row's sequence number (0 for an id that names none). */
  seq: number;
  claimId: string;
  a: { status: number | null; duracion_ms: number; error: string | null };
  o: { estado: 'pendiente' | 'entregado' | 'fallido'; proximo_intento_at?: number };
  now: number;
  nodo: string | null;
}

function attemptUpdateValues(t: Attempt): unknown[] {
  return [t.o.estado, t.o.proximo_intento_at ?? null, t.o.estado, t.now, t.a.error, t.a.status, t.a.duracion_ms, t.nodo, t.seq, t.claimId];
}

/** Whether the attempt gets a row of its own: every one but a delivery. */
function attemptFailed(t: Attempt): boolean {
  return t.o.estado !== 'entregado';
}

function intentoValues(t: Attempt, intentos: number): unknown[] {
  return [t.id, intentos, t.now, t.a.status, t.a.duracion_ms, t.a.error, t.nodo];
}

/** Webhook configuration and the event log (its rows are the deliveries), in SQLite. */
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
 * One event into the log (core/events/event-log.ts), a delivery when the client's
 * configuration wants it at once: active, with a URL, subscribed to its kind
 * or to all (webhooks/config.ts \`subscribed\`; kinds are plain names, so
 * a quoted name in the JSON list is that kind), read in the same statement.
 * Parameters: c (cliente_id), l (celular_id), e (evento), d (data, JSON), f (fecha), due (when it is recorded: a delivery is due then).
 */
export const eventInsert = `INSERT INTO eventos (cliente_id, celular_id, evento, data, fecha, entrega, proximo_intento_at)
  VALUES (@c, @l, @e, @d, @f, (SELECT 'pendiente' FROM webhooks w WHERE w.cliente_id = @c AND w.activo = 1 AND w.url != ''
      AND (instr(w.eventos, '"all"') > 0 OR instr(w.eventos, '"' || @e || '"') > 0)), @due)`;

/** What a delivery row is to its readers: the claim columns are the dispatcher's business only. */
const ENTREGA_COLS = 'seq, cliente_id, celular_id, evento, data, fecha, entrega, intentos, proximo_intento_at, entregado_at, ultimo_error';

/** Every claim (a start of the only process that serves this file, or its background thread's death): none is in force. */
export function releaseAllEntregaClaims(db: DB): number {
  return stmt(db, 'UPDATE eventos SET reclamo = NULL, reclamo_hasta = NULL WHERE reclamo_hasta IS NOT NULL').run().changes;
}

const EVENT_COLS = 'seq, cliente_id, celular_id, evento, data, fecha';

/** The store's event-id prefix, chosen by the migration that made the log. */
function eventPrefix(db: DB): string {
  const r = stmt(db, 'SELECT value FROM kv WHERE ns = ? AND key = ?').get(EVENT_PREFIX_KV.ns, EVENT_PREFIX_KV.key) as { value: string } | undefined;
  if (!r) throw new Error('the event log has no id prefix: the store was not migrated');
  return r.value;
}

type StoredEscucha = Omit<EscuchaRow, 'eventos'> & { eventos: string };

const escuchaOf = ({ visto_seq: _v, ...r }: StoredEscucha & { visto_seq?: number }): EscuchaRow => ({ ...r, eventos: JSON.parse(r.eventos) as string[] });

function liveEscuchas(db: DB, clienteId: number, now: number): EscuchaRow[] {
  const rows = stmt(db, 'SELECT * FROM webhook_escuchas WHERE cliente_id = ? AND expira_at > ? ORDER BY created_at, id').all(clienteId, now) as StoredEscucha[];
  return rows.map(escuchaOf);
}

function allLive(db: DB, now: number): EscuchaRow[] {
  return (stmt(db, 'SELECT * FROM webhook_escuchas WHERE expira_at > ? ORDER BY created_at, id').all(now) as StoredEscucha[]).map(escuchaOf);
}

/** The WebhooksStore port over one connection. */
export function webhooks(db: DB): WebhooksStore {
  const prefix = eventPrefix(db);
  const entrega = (r: EntregaLogRow) => entregaOf(prefix, r);
  /** An id of another store or shape names no row (0 matches none). */
  const seqOf = (id: string) => eventSeq(prefix, id) ?? 0;
  /** One attempt as recordAttempt says: false (nothing written) when its claim is no longer the one named. */
  const record1 = (r: AttemptRecord): boolean => {
    const t = { id: r.id, seq: seqOf(r.id), claimId: r.claimId, a: r.attempt, o: r.outcome, now: r.now, nodo: r.nodo ?? null };
    const e = stmt(db, ATTEMPT_UPDATE).get(...attemptUpdateValues(t)) as { intentos: number } | undefined;
    if (!e) return false;
    if (attemptFailed(t)) stmt(db, ATTEMPT_INSERT).run(...intentoValues(t, e.intentos));
    return true;
  };
  /** Each attempt as recordAttempt says, all in one transaction (a group commit with the turn's other writes). */
  const recordAttempts = (list: AttemptRecord[]): Promise<boolean[]> => grouped(db, () => immediate(db, () => list.map(record1)));
  /** One claim (claimEntregas), skipping the deliveries numbered in `skip`. */
  const claim1 = (r: EntregaClaimRequest, skip: number[]): EntregaRow[] => {
    const rows = stmt(
      db,
      `UPDATE eventos SET reclamo = @id, reclamo_hasta = @until WHERE seq IN (
       SELECT seq FROM eventos WHERE cliente_id = @cliente AND entrega = 'pendiente' AND proximo_intento_at <= @now
         AND (reclamo_hasta IS NULL OR reclamo_hasta <= @now) AND (@first = 0 OR intentos = 0)
         AND seq NOT IN (SELECT value FROM json_each(@skip))
       ORDER BY proximo_intento_at, seq LIMIT CAST(@limit AS INTEGER))
     RETURNING ${ENTREGA_COLS}`,
    ).all({
      id: r.claim.id,
      until: r.claim.until,
      cliente: r.clienteId,
      now: r.now,
      first: r.claim.firstOnly ? 1 : 0,
      limit: r.limit,
      skip: JSON.stringify(skip),
    }) as EntregaLogRow[];
    // RETURNING's order is not the subquery's.
    rows.sort((a, b) => a.proximo_intento_at - b.proximo_intento_at || a.seq - b.seq);
    return rows.map(entrega);
  };
  return {
    async getWebhook(clienteId: number): Promise<WebhookConfig | null> {
      return getWebhook(db, clienteId);
    },
    async setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<WebhookConfig> {
      return immediate(db, () => {
        const before = row(db, cfg.cliente_id);
        const prev = pushUndo(before);
        stmt(
          db,
          `INSERT INTO webhooks (cliente_id, url, secret, eventos, activo, updated_at, prev) VALUES (@cliente_id, @url, @secret, @eventos, @activo, @now, @prev)
       ON CONFLICT (cliente_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, eventos = excluded.eventos,
         activo = excluded.activo, updated_at = excluded.updated_at, prev = excluded.prev`,
        ).run({ ...cfg, eventos: JSON.stringify(cfg.eventos), activo: cfg.activo ? 1 : 0, now, prev });
        const after = webhookConfigOf(row(db, cfg.cliente_id)!);
        if (audit) insertAudit(db, audit(storedConfig(before), after), now);
        return after;
      });
    },
    /** A removed configuration stays as an empty row whose `prev` can be restored. */
    async deleteWebhook(clienteId: number, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<boolean> {
      return immediate(db, () => {
        const before = row(db, clienteId);
        if (!before || before.url === '') return false;
        stmt(db, "UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = 0, updated_at = ?, prev = ? WHERE cliente_id = ?").run(
          now,
          pushUndo(before),
          clienteId,
        );
        if (audit) insertAudit(db, audit(storedConfig(before), null), now);
        return true;
      });
    },
    async restoreWebhook(clienteId: number, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<WebhookConfig | null | 'nada'> {
      return immediate(db, () => {
        const current = row(db, clienteId);
        const undo = popUndo(current?.prev);
        if (!undo) return 'nada';
        const { top: prev, rest } = undo;
        if (prev === null) {
          stmt(db, "UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = 0, updated_at = ?, prev = ? WHERE cliente_id = ?").run(
            now,
            rest,
            clienteId,
          );
        } else {
          stmt(db, 'UPDATE webhooks SET url = ?, secret = ?, eventos = ?, activo = ?, updated_at = ?, prev = ? WHERE cliente_id = ?').run(
            prev.url,
            prev.secret,
            prev.eventos,
            prev.activo,
            now,
            rest,
            clienteId,
          );
        }
        const after = storedConfig(row(db, clienteId));
        if (audit) insertAudit(db, audit(storedConfig(current), after), now);
        return after;
      });
    },
    deactivateWebhook(clienteId: number, now: number): Promise<void> {
      return grouped(db, () => {
        stmt(db, 'UPDATE webhooks SET activo = 0, updated_at = ? WHERE cliente_id = ?').run(now, clienteId);
      });
    },
    /**
     * Claims up to `limit` of a client's due deliveries that nobody holds (or
     * whose claim ran out: its holder died), oldest due first, in one statement:
     * what it returns no other claim returns until the claim is cleared or ends.
     */
    claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]> {
      return grouped(db, () => claim1({ clienteId, now, limit, claim }, []));
    },
    /** recordAttempts then the claim, in one transaction; the claim skips the deliveries the list records (as on PostgreSQL). */
    recordAndClaim(list: AttemptRecord[], req: EntregaClaimRequest): Promise<{ recorded: boolean[]; claimed: EntregaRow[] }> {
      return grouped(db, () =>
        immediate(db, () => {
          const recorded = list.map(record1);
          return {
            recorded,
            claimed: claim1(
              req,
              list.map((r) => seqOf(r.id)),
            ),
          };
        }),
      );
    },
    /** Gives back claimed deliveries that were not attempted: due again at their own time, for anyone. */
    releaseEntregas(ids: string[], claimId: string): Promise<number> {
      return grouped(db, () => {
        const release = stmt(db, 'UPDATE eventos SET reclamo = NULL, reclamo_hasta = NULL WHERE seq = ? AND reclamo = ?');
        return immediate(db, () => ids.reduce((n, id) => n + release.run(seqOf(id), claimId).changes, 0));
      });
    },
    async webhookLook(now: number, listeners: boolean): Promise<{ queues: EntregaQueue[]; escuchas: EscuchaRow[] | null }> {
      const queues = stmt(
        db,
        "SELECT cliente_id, MIN(proximo_intento_at) AS next_at FROM eventos WHERE entrega = 'pendiente' GROUP BY cliente_id",
      ).all() as EntregaQueue[];
      return { queues, escuchas: listeners ? allLive(db, now) : null };
    },
    async failingWebhooks(limit: number): Promise<FailingWebhook[]> {
      return stmt(db, failingWebhooksSelect(ph)).all(limit) as FailingWebhook[];
    },
    /** The backlog (metrics): a count over the partial index of pending deliveries, which holds their due times too. */
    async outboxDepth(now: number): Promise<{ pending: number; due: number }> {
      return stmt(db, "SELECT COUNT(*) AS pending, COALESCE(SUM(proximo_intento_at <= ?), 0) AS due FROM eventos WHERE entrega = 'pendiente'").get(now) as {
        pending: number;
        due: number;
      };
    },
    /**
     * Records an attempt and the delivery's new state, clearing its claim, if
     * the claim is still `claimId`'s; false (nothing written) when it is not:
     * it ran out and another holder has the delivery now, and records its own.
     * A failed attempt keeps a row of its own; a delivered one is the event's.
     */
    async recordAttempt(id, claimId, attempt, outcome, now): Promise<boolean> {
      return (await recordAttempts([{ id, claimId, attempt, outcome, now }]))[0]!;
    },
    recordAttempts,
    async listEntregas(clienteId: number, limit: number, offset = 0): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>> {
      const rows = stmt(
        db,
        `SELECT ${ENTREGA_COLS}, ultimo_status, ultima_duracion_ms FROM eventos WHERE cliente_id = ? AND entrega IS NOT NULL ORDER BY seq DESC LIMIT CAST(? AS INTEGER) OFFSET CAST(? AS INTEGER)`,
      ).all(clienteId, limit, offset) as Array<EntregaLogRow & LastAttempt>;
      const attempts = stmt(db, 'SELECT n, fecha, status, duracion_ms, error FROM webhook_intentos WHERE entrega_id = ? ORDER BY n');
      return rows.map((r) => {
        const e = entrega(r);
        return { ...e, intentos_detalle: withDelivered(e, r, attempts.all(e.id) as IntentoRow[]) };
      });
    },
    /** The same index as the list's, read no further than `bound` rows. */
    async countEntregas(clienteId: number, bound: number): Promise<number> {
      const r = stmt(db, 'SELECT COUNT(*) AS n FROM (SELECT 1 FROM eventos WHERE cliente_id = ? AND entrega IS NOT NULL LIMIT CAST(? AS INTEGER))').get(
        clienteId,
        bound,
      ) as {
        n: number;
      };
      return r.n;
    },
    /**
     * Through the log's index by the data's msg_id (migration 22), named: the
     * same expression as the index's, and nothing else a planner could take
     * instead (the client's index would read its whole log). Within one key
     * the index holds its rows in log order.
     */
    async entregasDeMensaje(clienteId: number, msgId: string, max: { entregas: number; intentos: number }): Promise<EntregaDeMensaje[]> {
      const rows = (
        stmt(
          db,
          `SELECT ${ENTREGA_DE_MENSAJE_COLS} FROM eventos INDEXED BY eventos_mensaje WHERE json_extract(data, '$.msg_id') = ? AND entrega IS NOT NULL LIMIT CAST(? AS INTEGER)`,
        ).all(msgId, max.entregas + 1) as Array<Omit<EntregaDeMensaje, 'id' | 'fallidos'> & { seq: number; cliente_id: number }>
      )
        .filter((r) => r.cliente_id === clienteId)
        .sort((x, y) => x.seq - y.seq);
      const fallidos = stmt(db, fallidosSelect(ph));
      return rows.map(({ seq, cliente_id: _c, ...r }, i) => {
        const id = eventId(prefix, seq);
        return { id, ...r, fallidos: i < max.entregas ? (fallidos.all(id, max.intentos) as EntregaDeMensaje['fallidos']) : [] };
      });
    },
    async redeliver(clienteId: number, id: string, now: number): Promise<boolean> {
      const seq = seqOf(id);
      return (
        stmt(db, "UPDATE eventos SET entrega = 'pendiente', proximo_intento_at = ? WHERE seq = ? AND cliente_id = ? AND entrega IS NOT NULL").run(
          now,
          seq,
          clienteId,
        ).changes === 1
      );
    },
    redeliverFailed(clienteId: number, evento: string | null, limit: number, now: number): Promise<{ ids: string[]; quedan: boolean }> {
      return grouped(db, () =>
        immediate(db, () => {
          const failed = `SELECT seq FROM eventos WHERE cliente_id = @c AND entrega = 'fallido' AND (@e IS NULL OR evento = @e) ORDER BY seq`;
          const done = stmt(
            db,
            `UPDATE eventos SET entrega = 'pendiente', proximo_intento_at = @now WHERE seq IN (${failed} LIMIT CAST(@limit AS INTEGER)) RETURNING seq`,
          ).all({
            c: clienteId,
            e: evento,
            now,
            limit,
          }) as Array<{ seq: number }>;
          const more = stmt(db, `${failed} LIMIT 1`).get({ c: clienteId, e: evento });
          return { ids: done.map((r) => eventId(prefix, r.seq)).sort(), quedan: more !== undefined };
        }),
      );
    },
    logTestEvent(ev: JournalEvent, deliver: boolean): Promise<string> {
      return grouped(db, () => {
        const r = stmt(
          db,
          'INSERT INTO eventos (cliente_id, celular_id, evento, data, fecha, entrega, proximo_intento_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq',
        ).get(ev.cliente_id, ev.celular_id, ev.evento, JSON.stringify(ev.data), ev.fecha, deliver ? 'pendiente' : null, ev.fecha) as { seq: number };
        return eventId(prefix, r.seq);
      });
    },
    async eventsAfter(clienteId: number, afterId: string | null, limit: number): Promise<LoggedEvent[]> {
      const after = afterId === null ? 0 : seqOf(afterId);
      const rows = stmt(db, `SELECT ${EVENT_COLS} FROM eventos WHERE cliente_id = ? AND seq > ? ORDER BY seq LIMIT CAST(? AS INTEGER)`).all(
        clienteId,
        after,
        limit,
      ) as EventLogRow[];
      return rows.map((r) => loggedEvent(prefix, r));
    },
    async eventKept(clienteId: number, id: string): Promise<boolean> {
      return stmt(db, 'SELECT 1 FROM eventos WHERE seq = ? AND cliente_id = ?').get(seqOf(id), clienteId) !== undefined;
    },
    async newestEventId(clienteId: number, back = 0): Promise<string | null> {
      const r = stmt(db, 'SELECT seq FROM eventos WHERE cliente_id = ? ORDER BY seq DESC LIMIT 1 OFFSET CAST(? AS INTEGER)').get(clienteId, back) as
        { seq: number } | undefined;
      return r ? eventId(prefix, r.seq) : null;
    },
    /** One transaction: read past the cursor, move it. SQLite has one writer, so the log's order is its commit order. */
    takeEscuchaEvents(escuchaId: string, limit: number, now: number): Promise<LoggedEvent[]> {
      return grouped(db, () =>
        immediate(db, () => {
          const l = stmt(db, 'SELECT cliente_id, visto_seq FROM webhook_escuchas WHERE id = ? AND expira_at > ?').get(escuchaId, now) as
            { cliente_id: number; visto_seq: number } | undefined;
          if (!l) return [];
          const rows = stmt(db, `SELECT ${EVENT_COLS} FROM eventos WHERE cliente_id = ? AND seq > ? ORDER BY seq LIMIT CAST(? AS INTEGER)`).all(
            l.cliente_id,
            l.visto_seq,
            limit,
          ) as EventLogRow[];
          if (rows.length > 0) stmt(db, 'UPDATE webhook_escuchas SET visto_seq = ? WHERE id = ?').run(rows[rows.length - 1]!.seq, escuchaId);
          return rows.map((r) => loggedEvent(prefix, r));
        }),
      );
    },
    async allLiveEscuchas(now: number): Promise<EscuchaRow[]> {
      return allLive(db, now);
    },
    /**
     * The oldest events first, by the primary key: the first one young
     * enough bounds the batch, so a prune reads only what it may remove and
     * the pending deliveries older than the cut.
     */
    pruneEvents(before: number, limit: number): Promise<number> {
      return grouped(db, () =>
        immediate(db, () => {
          const cut = stmt(db, 'SELECT seq FROM eventos WHERE fecha >= ? ORDER BY seq LIMIT 1').get(before) as { seq: number } | undefined;
          const gone = stmt(
            db,
            "DELETE FROM eventos WHERE seq IN (SELECT seq FROM eventos WHERE seq < ? AND fecha < ? AND (entrega IS NULL OR entrega != 'pendiente') ORDER BY seq LIMIT CAST(? AS INTEGER)) RETURNING seq, entrega",
          ).all(cut ? cut.seq : Number.MAX_SAFE_INTEGER, before, limit) as Array<{ seq: number; entrega: string | null }>;
          // The failed attempts' rows go with their events (only a delivery has any).
          const attempts = stmt(db, 'DELETE FROM webhook_intentos WHERE entrega_id = ?');
          for (const g of gone) if (g.entrega !== null) attempts.run(eventId(prefix, g.seq));
          return gone.length;
        }),
      );
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
        // Its copies start after the newest event now (the last one of the primary key: no scan).
        stmt(db, 'UPDATE webhook_escuchas SET visto_seq = (SELECT COALESCE(MAX(seq), 0) FROM eventos) WHERE id = ?').run(e.id);
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
