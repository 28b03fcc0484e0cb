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
import type { AuditOf, EntregaRow, EscuchaRow, JournalEvent, WebhookConfig } from '../../core/ports/model.js';
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
import { arrays, type Client, type Db, LOCK, ph, qualified, type Queryable, row } from './db.js';
import { ENTREGA_DE_MENSAJE_COLS, escuchaInsert, escuchaValues, failingWebhooksSelect, withDelivered, type LastAttempt } from '../recipe-sql.js';

/**
 * Webhook configuration and the event log (its rows are the deliveries), in
 * PostgreSQL. Sequence numbers are taken at insert, not at commit, so a
 * reader that follows the log (a listener's copies, a stream) goes in
 * (xid, seq) order over the rows whose transaction is below its snapshot's
 * xmin: every transaction there has ended, so no row can still appear
 * behind the point it reached (migration 12).
 */

type WebhookRow = StoredWebhook & { activo: boolean; prev: string | null };

/**
 * A message's deliveries (entregasDeMensaje), parameters (msg_id, bound): by
 * the log's index on the data's msg_id (migration 18), its expression as
 * written there, with no other column in the filter nor an order, so the
 * index is the only path (the client's, or the key's in order, would read the
 * log). Then each one's first failed attempts, parameters (ids, bound): a
 * bounded range of the attempts' index per delivery.
 */
export const ENTREGAS_DE_MENSAJE = `SELECT ${ENTREGA_DE_MENSAJE_COLS} FROM eventos WHERE (data::json ->> 'msg_id') = $1 AND entrega IS NOT NULL LIMIT $2`;
export const FALLIDOS_DE_ENTREGAS = `SELECT i.entrega_id, i.n, i.fecha, i.status, i.duracion_ms, i.error, i.nodo FROM unnest($1::text[]) AS e(id)
  CROSS JOIN LATERAL (SELECT * FROM webhook_intentos WHERE entrega_id = e.id ORDER BY n LIMIT $2) i`;

/** What a delivery row is to its readers: the claim columns are the dispatcher's business only. */
const ENTREGA_COLS = 'seq, cliente_id, celular_id, evento, data, fecha, entrega, intentos, proximo_intento_at, entregado_at, ultimo_error';
const EVENT_COLS = 'seq, cliente_id, celular_id, evento, data, fecha';
/** The rows a follower of the log may read now: their transactions have all ended. */
const SETTLED = 'xid < pg_snapshot_xmin(pg_current_snapshot())';

/** The columns `eventRow` fills, in its order. */
export const EVENT_ROW_COLS = 'cliente_id, celular_id, evento, data, fecha, entrega, proximo_intento_at';

/**
 * One event of the log (core/events/event-log.ts) as a SELECT list for
 * EVENT_ROW_COLS, a delivery when the client's configuration wants it at
 * once: active, with a URL, subscribed to its kind or to all
 * (webhooks/config.ts `subscribed`), read in the same statement. Its
 * arguments are the SQL of cliente_id, celular_id, evento, data (JSON),
 * fecha and the time its delivery is due (a statement's own placeholders or columns).
 */
export function eventRow(cliente: string, celular: string, evento: string, data: string, fecha: string, due: string): string {
  return `${cliente}::bigint, ${celular}::bigint, ${evento}::text, ${data}::text, ${fecha}::bigint, (SELECT 'pendiente'::text FROM webhooks w WHERE w.cliente_id = ${cliente}::bigint
      AND w.activo AND w.url <> '' AND w.eventos::jsonb ?| ARRAY['all', ${evento}::text]), ${due}::bigint`;
}

/** The values of one event row, as SQL expressions. */
export interface EventValues {
  cliente: string;
  celular: string;
  evento: string;
  data: string;
  fecha: string;
  recordedAt: string;
}

/** Events into the log, one row per row `from` (with its FROM) yields, or one. */
export function eventInsertOf(v: EventValues, from = ''): string {
  return `INSERT INTO eventos (${EVENT_ROW_COLS})
  SELECT ${eventRow(v.cliente, v.celular, v.evento, v.data, v.fecha, v.recordedAt)}${from ? ` ${from}` : ''}`;
}

/** One event into the log. Parameters: cliente_id, celular_id, evento, data (JSON), fecha, when it is recorded. */
export const eventInsert = eventInsertOf({ cliente: '$1', celular: '$2', evento: '$3', data: '$4', fecha: '$5', recordedAt: '$6' });

/** A configuration written (parameters: cliente_id, url, secret, eventos, activo, updated_at, prev), and one removed (cliente_id, updated_at, prev). */
const SET_WEBHOOK = 'UPDATE webhooks SET url = $2, secret = $3, eventos = $4, activo = $5, updated_at = $6, prev = $7 WHERE cliente_id = $1 RETURNING *';
const CLEAR_WEBHOOK = "UPDATE webhooks SET url = '', secret = NULL, eventos = '[]', activo = false, updated_at = $2, prev = $3 WHERE cliente_id = $1";

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

type StoredEscucha = Omit<EscuchaRow, 'eventos'> & { eventos: string; visto_xid?: string; visto_seq?: number };

/** A listener as the port has it: without its cursor. */
const escuchaOf = ({ visto_xid: _x, visto_seq: _s, ...r }: StoredEscucha): EscuchaRow => ({ ...r, eventos: JSON.parse(r.eventos) as string[] });

/** Every client with pending deliveries, and when its first falls due (the partial index of pending deliveries). */
const ENTREGA_QUEUES = "SELECT cliente_id, MIN(proximo_intento_at) AS next_at FROM eventos WHERE entrega = 'pendiente' GROUP BY cliente_id";
/** Every listener live at $1, as one JSON array (a look reads it beside the queues). */
const LIVE_ESCUCHAS = "SELECT COALESCE(json_agg(e ORDER BY e.created_at, e.id), '[]') FROM webhook_escuchas e WHERE e.expira_at > $1";

async function liveEscuchas(q: Queryable, clienteId: number, now: number): Promise<EscuchaRow[]> {
  const r = await q.query('SELECT * FROM webhook_escuchas WHERE cliente_id = $1 AND expira_at > $2 ORDER BY created_at, id', [clienteId, now]);
  return (r.rows as StoredEscucha[]).map(escuchaOf);
}

/**
 * takeEscuchaEvents in one statement. Parameters: the listener's id, now, the limit.
 * SKIP LOCKED: a listener another call holds is being served by it. LATERAL:
 * the read is planned with the cursor as a parameter, an ordered index range
 * that stops at the limit, however far behind the listener is.
 */
export const TAKE_ESCUCHA_EVENTS = `WITH l AS (
    SELECT id, cliente_id, visto_xid, visto_seq FROM webhook_escuchas WHERE id = $1 AND expira_at > $2 FOR UPDATE SKIP LOCKED),
  taken AS (
    SELECT t.* FROM l CROSS JOIN LATERAL (
      SELECT xid, ${EVENT_COLS} FROM eventos WHERE cliente_id = l.cliente_id AND (xid, seq) > (l.visto_xid, l.visto_seq) AND ${SETTLED}
      ORDER BY xid, seq LIMIT $3) t),
  moved AS (
    UPDATE webhook_escuchas w SET visto_xid = last.xid, visto_seq = last.seq
    FROM l, (SELECT xid, seq FROM taken ORDER BY xid DESC, seq DESC LIMIT 1) last WHERE w.id = l.id)
  SELECT ${EVENT_COLS} FROM taken ORDER BY xid, seq`;

/**
 * claimEntregas as CTEs (picked, claimed) whose parameters start at $n:
 * cliente_id, now, limit, claim id, until, first attempts only. `also`: a
 * further condition on the pick. The locking pick is a CTE, run once (as
 * `seq IN (subquery)` it may be run again for each row the UPDATE looks at,
 * taking more than `limit`), and the UPDATE checks the conditions again on
 * the row's newest version: a delivery whose attempt was recorded after this
 * statement's snapshot is not claimed (and sent) again.
 */
function claimSql(n: number, also: string): string {
  const [cliente, now, limit, id, until, first] = [0, 1, 2, 3, 4, 5].map((i) => `$${n + i}`);
  return `picked AS (
       SELECT seq FROM eventos WHERE cliente_id = ${cliente} AND entrega = 'pendiente' AND proximo_intento_at <= ${now}
         AND (reclamo_hasta IS NULL OR reclamo_hasta <= ${now}) AND (NOT ${first} OR intentos = 0) ${also}
       ORDER BY proximo_intento_at, seq LIMIT ${limit} FOR UPDATE SKIP LOCKED),
     claimed AS (UPDATE eventos e SET reclamo = ${id}, reclamo_hasta = ${until} FROM picked
     WHERE e.seq = picked.seq AND e.entrega = 'pendiente' AND e.proximo_intento_at <= ${now} AND (e.reclamo_hasta IS NULL OR e.reclamo_hasta <= ${now})
     RETURNING ${qualified(ENTREGA_COLS, 'e')})`;
}

/** claimEntregas's statement. */
const CLAIM_ENTREGAS = `WITH ${claimSql(1, '')} SELECT * FROM claimed`;

const claimParams = (r: EntregaClaimRequest): unknown[] => [r.clienteId, r.now, r.limit, r.claim.id, r.claim.until, r.claim.firstOnly === true];

/** RETURNING's order is not the pick's: oldest due first. */
const sortClaimed = (list: EntregaLogRow[]): EntregaLogRow[] => list.sort((a, b) => a.proximo_intento_at - b.proximo_intento_at || a.seq - b.seq);

/** The store's event-id prefix, chosen by the migration that made the log. */
async function eventPrefix(db: Db): Promise<string> {
  const r = await db.one<{ value: string }>('SELECT value FROM kv WHERE ns = $1 AND key = $2', [EVENT_PREFIX_KV.ns, EVENT_PREFIX_KV.key]);
  if (!r) throw new Error('the event log has no id prefix: the store was not migrated');
  return r.value;
}

/** The WebhooksStore port over one pool. */
export function webhooks(db: Db): WebhooksStore {
  // Read once, when first needed (the port is made without a round trip); a failed read is tried again next time.
  let prefixP: Promise<string> | null = null;
  const prefix = (): Promise<string> =>
    (prefixP ??= eventPrefix(db).catch((err: unknown) => {
      prefixP = null;
      throw err;
    }));
  const entregas = async (list: EntregaLogRow[]) => {
    const p = await prefix();
    return list.map((r) => entregaOf(p, r));
  };
  const events = async (list: EventLogRow[]) => {
    const p = await prefix();
    return list.map((r) => loggedEvent(p, r));
  };
  /** An id of another store or shape names no row (0 matches none). */
  const seqOf = async (id: string) => eventSeq(await prefix(), id) ?? 0;
  /**
   * The attempts of `list` as recordAttempts's CTEs (v, upd, ins) and their
   * parameters from $1: each event row moves if its claim is still the one
   * named (recipe-sql.ts attemptSql's update, over unnest), and the failed
   * ones' attempt rows are written from what moved. $1 is the rows' seqs.
   */
  const RECORD_CTES = `v AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::bigint[], $8::bigint[], $9::text[], $10::text[])
         AS v(seq, claim, estado, next_at, error, status, dur, now, id, nodo)),
       upd AS (UPDATE eventos e SET intentos = e.intentos + 1, entrega = v.estado, proximo_intento_at = COALESCE(v.next_at, e.proximo_intento_at),
           entregado_at = CASE WHEN v.estado = 'entregado' THEN v.now ELSE e.entregado_at END, ultimo_error = v.error,
           ultimo_status = v.status, ultima_duracion_ms = v.dur, ultimo_nodo = v.nodo, reclamo = NULL, reclamo_hasta = NULL
         FROM v WHERE e.seq = v.seq AND e.reclamo = v.claim
         RETURNING e.seq, e.intentos, v.estado, v.error, v.status, v.dur, v.now, v.id, v.nodo),
       ins AS (INSERT INTO webhook_intentos (entrega_id, n, fecha, status, duracion_ms, error, nodo)
         SELECT id, intentos, now, status, dur, error, nodo FROM upd WHERE estado <> 'entregado')`;
  /** recordAndClaim's statement (built once): the claim's parameters after the record's, each recorded row's seq alone. */
  const RECORD_AND_CLAIM = `WITH ${claimSql(11, 'AND seq <> ALL($1::bigint[])')}, ${RECORD_CTES}
     SELECT false AS rec, ${ENTREGA_COLS} FROM claimed
     UNION ALL SELECT true, seq, ${ENTREGA_COLS.split(', ').slice(1).fill('NULL').join(', ')} FROM upd`;
  const recordParams = (seqs: number[], list: AttemptRecord[]): unknown[] => [
    seqs,
    ...arrays(list, 6, (r) => [r.claimId, r.outcome.estado, r.outcome.proximo_intento_at ?? null, r.attempt.error, r.attempt.status, r.attempt.duracion_ms]),
    ...arrays(list, 3, (r) => [r.now, r.id, r.nodo ?? null]),
  ];
  const recordAttempts = async (list: AttemptRecord[]): Promise<boolean[]> => {
    if (list.length === 0) return [];
    const p = await prefix();
    const seqs = list.map((r) => eventSeq(p, r.id) ?? 0);
    const moved = await db.q<{ seq: string }>(`WITH ${RECORD_CTES} SELECT seq::text FROM upd`, recordParams(seqs, list));
    const done = new Set(moved.map((m) => Number(m.seq)));
    return seqs.map((s) => done.has(s));
  };
  return {
    getWebhook: (clienteId) => getWebhook(db, clienteId),
    async setWebhook(cfg: Omit<WebhookConfig, 'updated_at'>, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<WebhookConfig> {
      return db.tx(async (c) => {
        const before = await lockRow(c, cfg.cliente_id, now);
        const args = [cfg.cliente_id, cfg.url, cfg.secret, JSON.stringify(cfg.eventos), cfg.activo, now, pushUndo(before)];
        const after = webhookConfigOf((await row<WebhookRow>(c, SET_WEBHOOK, args))!);
        if (audit) await insertAudit(c, audit(storedConfig(before), after), now);
        return after;
      });
    },
    /** A removed configuration stays as an empty row whose `prev` can be restored. */
    async deleteWebhook(clienteId: number, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<boolean> {
      return db.tx(async (c) => {
        const before = await row<WebhookRow>(c, 'SELECT * FROM webhooks WHERE cliente_id = $1 FOR UPDATE', [clienteId]);
        if (!before || before.url === '') return false;
        await c.query(CLEAR_WEBHOOK, [clienteId, now, pushUndo(before)]);
        if (audit) await insertAudit(c, audit(storedConfig(before), null), now);
        return true;
      });
    },
    async restoreWebhook(clienteId: number, now: number, audit?: AuditOf<WebhookConfig | null>): Promise<WebhookConfig | null | 'nada'> {
      return db.tx(async (c) => {
        const current = await row<WebhookRow>(c, 'SELECT * FROM webhooks WHERE cliente_id = $1 FOR UPDATE', [clienteId]);
        const undo = popUndo(current?.prev);
        if (!undo) return 'nada' as const;
        const { top: prev, rest } = undo;
        let after: WebhookConfig | null = null;
        if (prev === null) await c.query(CLEAR_WEBHOOK, [clienteId, now, rest]);
        else after = webhookConfigOf((await row<WebhookRow>(c, SET_WEBHOOK, [clienteId, prev.url, prev.secret, prev.eventos, prev.activo === 1, now, rest]))!);
        if (audit) await insertAudit(c, audit(storedConfig(current), after), now);
        return after;
      });
    },
    async deactivateWebhook(clienteId: number, now: number): Promise<void> {
      await db.q('UPDATE webhooks SET activo = false, updated_at = $2 WHERE cliente_id = $1', [clienteId, now]);
    },
    /**
     * Claims up to `limit` of a client's due deliveries that nobody holds (or
     * whose claim ran out: its holder died), oldest due first, in one statement
     * (claimSql). Rows another claimer has locked are skipped, not waited for.
     */
    async claimEntregas(clienteId: number, now: number, limit: number, claim: EntregaClaim): Promise<EntregaRow[]> {
      return entregas(sortClaimed(await db.q<EntregaLogRow>(CLAIM_ENTREGAS, claimParams({ clienteId, now, limit, claim }))));
    },
    /**
     * One statement: the claim's CTEs ($11..$16), which skip the rows being
     * recorded, and recordAttempts's ($1..$10) (a statement must not move a row
     * twice; and its snapshot would show them as before the record). The
     * answer's rows: the claimed deliveries, and one per recorded attempt
     * (rec true, only its seq).
     */
    async recordAndClaim(list: AttemptRecord[], req: EntregaClaimRequest): Promise<{ recorded: boolean[]; claimed: EntregaRow[] }> {
      const p = await prefix();
      const seqs = list.map((r) => eventSeq(p, r.id) ?? 0);
      const rows = await db.q<EntregaLogRow & { rec: boolean }>(RECORD_AND_CLAIM, [...recordParams(seqs, list), ...claimParams(req)]);
      const done = new Set(rows.filter((r) => r.rec).map((r) => Number(r.seq)));
      return { recorded: seqs.map((s) => done.has(s)), claimed: await entregas(sortClaimed(rows.filter((r) => !r.rec))) };
    },
    /** Gives back claimed deliveries that were not attempted: due again at their own time, for anyone. */
    async releaseEntregas(ids: string[], claimId: string): Promise<number> {
      if (ids.length === 0) return 0;
      const seqs = await Promise.all(ids.map(seqOf));
      const r = await db.q('UPDATE eventos SET reclamo = NULL, reclamo_hasta = NULL WHERE seq = ANY($1::bigint[]) AND reclamo = $2 RETURNING 1', [
        seqs,
        claimId,
      ]);
      return r.length;
    },
    /** One round trip (D-191): the clients' queues and, when asked, the listeners, each a JSON array. */
    async webhookLook(now: number, listeners: boolean): Promise<{ queues: EntregaQueue[]; escuchas: EscuchaRow[] | null }> {
      const [r] = await db.q<{ queues: EntregaQueue[]; escuchas?: StoredEscucha[] }>(
        `SELECT (SELECT COALESCE(json_agg(q), '[]') FROM (${ENTREGA_QUEUES}) q) AS queues` + (listeners ? `, (${LIVE_ESCUCHAS}) AS escuchas` : ''),
        listeners ? [now] : [],
      );
      return { queues: r?.queues ?? [], escuchas: listeners ? (r?.escuchas ?? []).map(escuchaOf) : null };
    },
    async failingWebhooks(limit: number): Promise<FailingWebhook[]> {
      return db.q<FailingWebhook>(failingWebhooksSelect(ph), [limit]);
    },
    /** The backlog (metrics): a count over the partial index of pending deliveries, which holds their due times too. */
    async outboxDepth(now: number): Promise<{ pending: number; due: number }> {
      const [r] = await db.q<{ pending: number; due: number }>(
        "SELECT COUNT(*) AS pending, COUNT(*) FILTER (WHERE proximo_intento_at <= $1) AS due FROM eventos WHERE entrega = 'pendiente'",
        [now],
      );
      return { pending: r?.pending ?? 0, due: r?.due ?? 0 };
    },
    /** The attempt's number is the delivery's count after its increment, under its row lock; a failed one keeps a row of its own. */
    async recordAttempt(id, claimId, attempt, outcome, now): Promise<boolean> {
      return (await recordAttempts([{ id, claimId, attempt, outcome, now }]))[0]!;
    },
    recordAttempts,
    /** Newest first in log order (the client index, read backwards). */
    async listEntregas(clienteId: number, limit: number, offset = 0): Promise<Array<EntregaRow & { intentos_detalle: IntentoRow[] }>> {
      const list = await db.q<EntregaLogRow & LastAttempt>(
        `SELECT ${ENTREGA_COLS}, ultimo_status, ultima_duracion_ms FROM eventos WHERE cliente_id = $1 AND entrega IS NOT NULL
     ORDER BY xid DESC, seq DESC LIMIT $2 OFFSET $3`,
        [clienteId, limit, offset],
      );
      if (list.length === 0) return [];
      const p = await prefix();
      const rows = list.map((r) => ({ r, e: entregaOf(p, r) }));
      const attempts = await db.q<IntentoRow & { entrega_id: string }>(
        'SELECT entrega_id, n, fecha, status, duracion_ms, error FROM webhook_intentos WHERE entrega_id = ANY($1::text[]) ORDER BY entrega_id, n',
        [rows.map(({ e }) => e.id)],
      );
      const by = new Map<string, IntentoRow[]>();
      for (const { entrega_id, ...i } of attempts) (by.get(entrega_id) ?? by.set(entrega_id, []).get(entrega_id)!).push(i);
      return rows.map(({ r, e }) => ({ ...e, intentos_detalle: withDelivered(e, r, by.get(e.id) ?? []) }));
    },
    /** The same index as the list's, read no further than `bound` rows. */
    async countEntregas(clienteId: number, bound: number): Promise<number> {
      const [r] = await db.q<{ n: string }>('SELECT COUNT(*) AS n FROM (SELECT 1 FROM eventos WHERE cliente_id = $1 AND entrega IS NOT NULL LIMIT $2) AS cut', [
        clienteId,
        bound,
      ]);
      return Number(r!.n);
    },
    /** ENTREGAS_DE_MENSAJE, then FALLIDOS_DE_ENTREGAS. */
    async entregasDeMensaje(clienteId: number, msgId: string, max: { entregas: number; intentos: number }): Promise<EntregaDeMensaje[]> {
      const rows = (await db.q<Omit<EntregaDeMensaje, 'id' | 'fallidos'> & { seq: number; cliente_id: number }>(ENTREGAS_DE_MENSAJE, [msgId, max.entregas + 1]))
        .filter((r) => Number(r.cliente_id) === clienteId)
        .sort((x, y) => Number(x.seq) - Number(y.seq));
      if (rows.length === 0) return [];
      const p = await prefix();
      const ids = rows.map((r) => eventId(p, r.seq));
      const attempts = await db.q<EntregaDeMensaje['fallidos'][number] & { entrega_id: string }>(FALLIDOS_DE_ENTREGAS, [
        ids.slice(0, max.entregas),
        max.intentos,
      ]);
      return rows.map(({ seq: _seq, cliente_id: _c, ...r }, i) => ({
        id: ids[i]!,
        ...r,
        fallidos: attempts.filter((a) => a.entrega_id === ids[i]).map(({ entrega_id: _e, ...a }) => a),
      }));
    },
    async redeliver(clienteId: number, id: string, now: number): Promise<boolean> {
      const r = await db.q(
        "UPDATE eventos SET entrega = 'pendiente', proximo_intento_at = $3 WHERE seq = $2 AND cliente_id = $1 AND entrega IS NOT NULL RETURNING 1",
        [clienteId, await seqOf(id), now],
      );
      return r.length === 1;
    },
    async redeliverFailed(clienteId: number, evento: string | null, limit: number, now: number): Promise<{ ids: string[]; quedan: boolean }> {
      const failed = `SELECT seq FROM eventos WHERE cliente_id = $1 AND entrega = 'fallido' AND ($2::text IS NULL OR evento = $2) ORDER BY seq`;
      const r = await db.q<{ seq: number | null; quedan: boolean }>(
        `WITH pick AS (${failed} LIMIT $3 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE eventos e SET entrega = 'pendiente', proximo_intento_at = $4 FROM pick WHERE e.seq = pick.seq RETURNING e.seq)
     SELECT u.seq, EXISTS (${failed} OFFSET $3) AS quedan FROM (SELECT 1) one LEFT JOIN u ON true`,
        [clienteId, evento, limit, now],
      );
      const p = await prefix();
      const ids = r.filter((x) => x.seq !== null).map((x) => eventId(p, x.seq!));
      return { ids: ids.sort(), quedan: r[0]?.quedan ?? false };
    },
    async logTestEvent(ev: JournalEvent, deliver: boolean): Promise<string> {
      const r = (await db.one<{ seq: number }>(
        'INSERT INTO eventos (cliente_id, celular_id, evento, data, fecha, entrega, proximo_intento_at) VALUES ($1, $2, $3, $4, $5, $6, $5) RETURNING seq',
        [ev.cliente_id, ev.celular_id, ev.evento, JSON.stringify(ev.data), ev.fecha, deliver ? 'pendiente' : null],
      ))!;
      return eventId(await prefix(), r.seq);
    },
    /**
     * The row `afterId` names is found by its primary key and the client's
     * events after it are read in log order. An id that names no row (of
     * another shape, or pruned) reads by sequence alone, as SQLite does: an
     * unknown id from the oldest kept, a pruned one after its number.
     */
    async eventsAfter(clienteId: number, afterId: string | null, limit: number): Promise<LoggedEvent[]> {
      const after = afterId === null ? 0 : await seqOf(afterId);
      const cursor = after === 0 ? null : await db.one<{ xid: string; seq: number }>('SELECT xid, seq FROM eventos WHERE seq = $1', [after]);
      const list = cursor
        ? await db.q<EventLogRow>(
            `SELECT ${EVENT_COLS} FROM eventos WHERE cliente_id = $1 AND (xid, seq) > ($2::xid8, $3::bigint) AND ${SETTLED} ORDER BY xid, seq LIMIT $4`,
            [clienteId, cursor.xid, cursor.seq, limit],
          )
        : await db.q<EventLogRow>(`SELECT ${EVENT_COLS} FROM eventos WHERE cliente_id = $1 AND seq > $2 AND ${SETTLED} ORDER BY xid, seq LIMIT $3`, [
            clienteId,
            after,
            limit,
          ]);
      return events(list);
    },
    async eventKept(clienteId: number, id: string): Promise<boolean> {
      return (await db.q('SELECT 1 FROM eventos WHERE seq = $1 AND cliente_id = $2', [await seqOf(id), clienteId])).length === 1;
    },
    /** The newest settled row: a row not settled yet has a later xid, so eventsAfter reads it after this one. */
    async newestEventId(clienteId: number, back = 0): Promise<string | null> {
      const r = await db.one<{ seq: number }>(`SELECT seq FROM eventos WHERE cliente_id = $1 AND ${SETTLED} ORDER BY xid DESC, seq DESC LIMIT 1 OFFSET $2`, [
        clienteId,
        back,
      ]);
      return r ? eventId(await prefix(), Number(r.seq)) : null;
    },
    /**
     * One statement: locks the listener (one that another node holds locked
     * is being served there, and this call returns nothing), reads its
     * client's settled events past its cursor, and moves the cursor to the
     * last of them. The cursor is read from the row as locked, its newest
     * version, so two calls never hand out the same event.
     */
    async takeEscuchaEvents(escuchaId: string, limit: number, now: number): Promise<LoggedEvent[]> {
      return events(await db.q<EventLogRow>(TAKE_ESCUCHA_EVENTS, [escuchaId, now, limit]));
    },
    async allLiveEscuchas(now: number): Promise<EscuchaRow[]> {
      const [r] = await db.q<{ escuchas: StoredEscucha[] }>(`SELECT (${LIVE_ESCUCHAS}) AS escuchas`, [now]);
      return (r?.escuchas ?? []).map(escuchaOf);
    },
    /**
     * The oldest events first, by the primary key: the first one young
     * enough bounds the batch, so a prune reads only what it may remove and
     * the pending deliveries older than the cut. The batch is an array, so
     * the delete goes by the primary key; its conditions are checked again on
     * a row changed meanwhile (a redelivery makes it pending). The failed
     * attempts' rows go with their events.
     */
    async pruneEvents(before: number, limit: number): Promise<number> {
      const r = await db.q<{ n: number }>(
        `WITH gone AS (DELETE FROM eventos WHERE seq = ANY(ARRAY(
       SELECT seq FROM eventos WHERE seq < COALESCE((SELECT seq FROM eventos WHERE fecha >= $1 ORDER BY seq LIMIT 1), 9223372036854775807)
         AND fecha < $1 AND entrega IS DISTINCT FROM 'pendiente' ORDER BY seq LIMIT $2))
     AND fecha < $1 AND entrega IS DISTINCT FROM 'pendiente' RETURNING seq),
     attempts AS (DELETE FROM webhook_intentos WHERE entrega_id = ANY(ARRAY(SELECT 'evt_' || $3::text || lpad(to_hex(seq), 24, '0') FROM gone)))
     SELECT COUNT(*)::int AS n FROM gone`,
        [before, limit, await prefix()],
      );
      return r[0]!.n;
    },
    liveEscuchas: (clienteId, now) => liveEscuchas(db, clienteId, now),
    /** Count and insert under the client's listeners lock, so two nodes adding at once cannot both pass the limit. */
    async addEscucha(e: EscuchaRow, max: number, now: number): Promise<EscuchaRow | 'limite'> {
      return db.tx(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2::text))', [LOCK.listeners, e.cliente_id]);
        await c.query('DELETE FROM webhook_escuchas WHERE cliente_id = $1 AND expira_at <= $2', [e.cliente_id, now]);
        const n = (await row<{ n: number }>(c, 'SELECT COUNT(*)::int AS n FROM webhook_escuchas WHERE cliente_id = $1', [e.cliente_id]))!.n;
        if (n >= max) return 'limite' as const;
        await c.query(escuchaInsert(ph), escuchaValues(e));
        // Its copies start after the client's newest event this transaction sees (the client index read backwards, one row):
        // every event committed before is behind it, and one committed later by a transaction that takes its xid later is
        // ahead. Not settled ones only: an event committed before by a transaction above xmin would be copied too.
        // Left behind: an event of a transaction open meanwhile whose xid is below that newest row's (concurrent with the add).
        await c.query(
          `UPDATE webhook_escuchas SET visto_xid = l.xid, visto_seq = l.seq
           FROM (SELECT xid, seq FROM eventos WHERE cliente_id = $2 ORDER BY xid DESC, seq DESC LIMIT 1) l WHERE id = $1`,
          [e.id, e.cliente_id],
        );
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
