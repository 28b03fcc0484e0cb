import type { BacklogLine, CancelResult, ExpiryLook, ClaimResult, QueuedRow, QueueStore } from '../../core/ports/queue.js';
import type { SlotClaim, SlotCount } from '../../core/sending/caps.js';
import type { MensajeRow } from '../../core/ports/model.js';
import type { Db } from './db.js';
import { slotOn } from '../../core/billing/recipes.js';
import { slotSet, slotTime } from '../recipe-sql.js';
import { colsOf, slotCountsJson } from './messages.js';
import { cancelQueued, expireQueued } from './transitions.js';
import { batched } from '../../core/queue/turns.js';
import { STATE_COLS, slotSync, stateColsOf } from './state-paths.js';

/**
 * The queue in PostgreSQL: the lines' heads, claims with their caps slot
 * (taken under the line's row lock, in the order of
 * docs/store-locks.md), retries, the direct sends a crash left pending. Every path to a
 * pending message or a slot goes through the side tables (state-paths.ts).
 */

/** The lines with queued messages pending, one index descent each (`lineas(id)`, ended by a null). */
const LINEAS = `lineas(id) AS (
       (SELECT celular_id FROM mensajes_pendientes WHERE modo = 'cola' ORDER BY celular_id LIMIT 1)
       UNION ALL
       SELECT (SELECT celular_id FROM mensajes_pendientes WHERE modo = 'cola' AND celular_id > l.id ORDER BY celular_id LIMIT 1)
       FROM lineas l WHERE l.id IS NOT NULL
     )`;

/**
 * An older queued message `o` of the line to the same recipient as `${row}` that holds it back: any but a scheduled one
 * not yet due at `${now}` (D-181; its due time is in the index, so this is one descent of it).
 */
const olderOfRecipient = (row: string, now: string) =>
  `SELECT 1 FROM mensajes_pendientes o WHERE o.modo = 'cola' AND o.celular_id = ${row}.celular_id AND o.destinatario = ${row}.destinatario
     AND o.seq < ${row}.seq AND (o.enviar_en IS NULL OR o.enviar_en <= ${now})`;

/** No older queued message holds pending row `c` back (D-163, D-181). */
const FIRST_OF_RECIPIENT = `NOT EXISTS (${olderOfRecipient('c', '$1')})`;

/**
 * The expiry sweep's work at `$1` (ExpiryLook), through the pending side table's validity index (migration 30): an
 * expired message no live claim holds, and when there next will be one: a validity ending, or a claim on an expired
 * one ending. Each expired message's claim is read by its key (a correlated subquery: never a join the planner may
 * hash over mensajes).
 */
const EXPIRY = `SELECT EXISTS (SELECT 1 FROM mensajes_pendientes p WHERE p.vence_at <= $1
       AND NOT EXISTS (SELECT 1 FROM mensajes m WHERE m.msg_id = p.msg_id AND m.lease_until > $1)) AS expired,
     LEAST((SELECT MIN(vence_at) FROM mensajes_pendientes WHERE vence_at > $1),
       (SELECT MIN((SELECT m.lease_until FROM mensajes m WHERE m.msg_id = p.msg_id AND m.lease_until > $1)) FROM mensajes_pendientes p WHERE p.vence_at <= $1)) AS next`;

/** The message's columns as the statements below read them, from `mensajes m`. */
const M_COLS = colsOf('m');

/** JSON numbers as the counts core decides on. */
const countsOf = (j: SlotCount[] | null): SlotCount[] => (j ?? []).map((k) => ({ n: Number(k.n), oldest: k.oldest === null ? null : Number(k.oldest) }));

/** claimQueued's arguments. */
interface ClaimItem {
  msgId: string;
  slot: SlotClaim;
  now: number;
  onlyHead: boolean;
  nodo: string | null;
}

const TAKEN = slotOn('claim', 0);

/**
 * Queued messages claimed with their send slots, one autocommitted statement (D-84, D-193); an element per claim (`o`),
 * its caps windows flattened (`w`: claim, place, since, room), the arrays through a CTE so that every call is planned
 * alike and the plan kept (D-149). Per line the first claim only (`first`): the lines are locked, ascending, before
 * their messages (by seq), the order of docs/store-locks.md, so no other slot taker (a direct send, another node's
 * claim) can pass a cap with it. The message is then locked and its lease and line checked under that lock, so two
 * nodes never both claim it; with only_head, only while no older queued message of its line to its recipient is
 * pending, so a guess that is not its recipient's first is taken (D-85, D-162). The slots are counted after the locks
 * by cupos_al_dia (migration 16), whose own snapshot sees the slots the locks' previous holders committed, and each
 * slot is taken only while every window holds no more than core's `room`. A batch skips the lines another transaction
 * holds (`skip`): one line's wait never holds up the others' claims.
 */
const claimSql = (skip: boolean) => `WITH a AS MATERIALIZED (
       SELECT $1::text[] AS a1, $2::bigint[] AS a2, $3::bigint[] AS a3, $4::boolean[] AS a4, $5::text[] AS a5,
         $6::bigint[] AS a6, $7::bigint[] AS a7, $8::bigint[] AS a8, $9::bigint[] AS a9),
     i AS MATERIALIZED (
       SELECT x.o, x.msg_id, x.now, x.at, x.only_head, x.nodo, m.celular_id
       FROM a, unnest(a1, a2, a3, a4, a5) WITH ORDINALITY AS x(msg_id, now, at, only_head, nodo, o)
       LEFT JOIN mensajes m ON m.msg_id = x.msg_id
     ),
     first AS MATERIALIZED (SELECT DISTINCT ON (celular_id) o FROM i WHERE celular_id IS NOT NULL ORDER BY celular_id, o),
     line AS MATERIALIZED (
       SELECT id FROM celulares WHERE id IN (SELECT i.celular_id FROM i JOIN first USING (o)) ORDER BY id FOR NO KEY UPDATE${skip ? ' SKIP LOCKED' : ''}
     ),
     m AS MATERIALIZED (
       SELECT i.o, mm.msg_id, mm.celular_id, i.now, i.at, i.nodo FROM first JOIN i USING (o) JOIN mensajes mm ON mm.msg_id = i.msg_id
       WHERE mm.estado = 'pendiente' AND (mm.lease_until IS NULL OR mm.lease_until <= i.now)
         AND (mm.proximo_intento_at IS NULL OR mm.proximo_intento_at <= i.now)
         AND (SELECT COUNT(*) FROM line) >= 0 AND mm.celular_id = i.celular_id AND i.celular_id IN (SELECT id FROM line)
         AND NOT (i.only_head AND EXISTS (${olderOfRecipient('mm', 'i.now')}))
       ORDER BY mm.seq FOR UPDATE OF mm
     ),
     w AS MATERIALIZED (SELECT w.* FROM a, unnest(a6, a7, a8, a9) AS w(o, pos, since, room)),
     k AS MATERIALIZED (SELECT m.*, cupos_al_dia(m.celular_id, ARRAY(SELECT since FROM w WHERE w.o = m.o ORDER BY w.pos), m.now) AS counts FROM m),
     go AS MATERIALIZED (SELECT k.o, k.msg_id, k.now, k.at, k.nodo FROM k WHERE NOT EXISTS (
       SELECT 1 FROM json_array_elements(k.counts) WITH ORDINALITY AS c(v, pos) JOIN w ON w.o = k.o AND w.pos = c.pos
       WHERE (c.v->>'n')::bigint > w.room)),
     u AS (UPDATE mensajes x SET ${slotSet(TAKEN, 'g.at')}, nodo = g.nodo, reclamado_at = g.now FROM go g WHERE x.msg_id = g.msg_id
       RETURNING ${stateColsOf('x')}),
     slot AS (${slotSync('u', TAKEN.cupo_at)})
     SELECT i.celular_id IS NOT NULL AS known, EXISTS (SELECT 1 FROM first f WHERE f.o = i.o) AS first,
       EXISTS (SELECT 1 FROM line WHERE line.id = i.celular_id) AS locked,
       EXISTS (SELECT 1 FROM m WHERE m.o = i.o) AS claimable, EXISTS (SELECT 1 FROM go WHERE go.o = i.o) AS go,
       (SELECT counts FROM k WHERE k.o = i.o) AS counts
     FROM i ORDER BY i.o`;
const CLAIM_BATCH = claimSql(true);
const CLAIM_ALONE = claimSql(false);

/**
 * Claims, each answered: claimed, refused (taken, or a cap with its answer), `again` when it did not go in this
 * statement (a batch's later claim of a line, which must count the first one's slot; a line another transaction
 * held), or an error of its own. The statement commits before any answer is read: no answer may throw.
 */
async function claimMany(db: Db, items: ClaimItem[], batch: boolean): Promise<Array<ClaimResult | 'again' | Error>> {
  const w = items.flatMap(({ slot, now }, k) => slot.windows.map((ms, pos) => ({ o: k + 1, pos: pos + 1, since: now - ms, room: slot.room[pos]! })));
  const rows = await db.q<{ known: boolean; first: boolean; locked: boolean; claimable: boolean; go: boolean; counts: SlotCount[] | null }>(
    batch ? CLAIM_BATCH : CLAIM_ALONE,
    [
      items.map((c) => c.msgId),
      items.map((c) => c.now),
      items.map((c) => slotTime(slotOn('claim', c.slot.holdUntil))),
      items.map((c) => c.onlyHead),
      items.map((c) => c.nodo),
      w.map((x) => x.o),
      w.map((x) => x.pos),
      w.map((x) => x.since),
      w.map((x) => x.room),
    ],
  );
  return rows.map((r, k): ClaimResult | 'again' | Error => {
    if (r.known && (!r.first || (batch && !r.locked))) return 'again';
    if (!r.claimable) return { ok: false, reason: 'taken' };
    if (r.go) return { ok: true };
    const hit = items[k]!.slot.decide(countsOf(r.counts));
    // Counted under the lock, the slots are exact: past `room` is past the cap.
    if (!hit) return new Error(`the claim of ${items[k]!.msgId}: its line's slots passed the caps rule but not its room`);
    return { ok: false, reason: 'cap', ...hit };
  });
}

export function queue(db: Db): QueueStore {
  // Claims arriving together (a look's) share a statement; one that did not go in it goes alone, not in a turn, so a
  // line's wait for its lock holds up no other claim.
  const claims = batched(
    (c: ClaimItem) => c.msgId,
    (items) => claimMany(db, items, true),
  );
  const answer = (r: ClaimResult | 'again' | Error): ClaimResult => {
    if (r instanceof Error) throw r;
    if (r === 'again') throw new Error('a claim alone answered again');
    return r;
  };
  return {
    /**
     * One message per line with a backlog: a loose index scan over the pending
     * side table's queue index (one index descent per line), so the cost
     * follows the number of lines, not the number of pending messages.
     */
    async queueHeads(): Promise<MensajeRow[]> {
      return db.q<MensajeRow>(
        `WITH RECURSIVE ${LINEAS}
     SELECT ${M_COLS} FROM lineas l
     CROSS JOIN LATERAL (SELECT msg_id FROM mensajes_pendientes WHERE modo = 'cola' AND celular_id = l.id ORDER BY seq LIMIT 1) h
     JOIN mensajes m ON m.msg_id = h.msg_id
     WHERE l.id IS NOT NULL
     ORDER BY l.id`,
      );
    },
    /**
     * Per line with a backlog its next message (D-162): the oldest due one whose recipient has no older
     * pending one, from the messages never deferred in queue order and the deferred ones due by `$1` (a
     * range by due time), each checked against its recipient's older ones (one descent); else when its
     * next deferred one falls due. A message waiting for its time is not read (D-143); the message found
     * is read whole.
     */
    async queueLook(now: number, unread: readonly number[] = []): Promise<{ lines: BacklogLine[]; due: MensajeRow[]; expiry: ExpiryLook }> {
      // One row at least (the sweep's columns), then one per line: an idle node's look is one round trip (D-191).
      const rows = await db.q<(MensajeRow | { msg_id: null }) & { linea: number | null; linea_proximo: number | null; expired: boolean; next: number | null }>(
        `WITH RECURSIVE ${LINEAS},
     q AS (SELECT l.id AS linea, CASE WHEN h.seq IS NULL THEN d.proximo END AS linea_proximo, ${M_COLS} FROM lineas l
     CROSS JOIN LATERAL (SELECT MIN(seq) AS seq FROM (
         (SELECT c.seq FROM mensajes_pendientes c WHERE c.modo = 'cola' AND c.celular_id = l.id AND c.proximo_intento_at IS NULL
            AND ${FIRST_OF_RECIPIENT} ORDER BY c.seq LIMIT 1)
         UNION ALL
         -- The due range of the deferred ones (OFFSET 0: read by due time, never the line's queue order past a future backlog).
         (SELECT MIN(seq) FROM (SELECT c.seq FROM mensajes_pendientes c WHERE c.modo = 'cola' AND c.celular_id = l.id
            AND c.proximo_intento_at IS NOT NULL AND c.proximo_intento_at <= $1 AND ${FIRST_OF_RECIPIENT} OFFSET 0) r)) s) h
     CROSS JOIN LATERAL (SELECT MIN(c.proximo_intento_at) AS proximo FROM mensajes_pendientes c
         WHERE c.modo = 'cola' AND c.celular_id = l.id AND c.proximo_intento_at IS NOT NULL AND c.proximo_intento_at > $1 AND h.seq IS NULL) d
     LEFT JOIN LATERAL (SELECT p.msg_id FROM mensajes_pendientes p WHERE p.seq = h.seq AND l.id <> ALL($2::bigint[])) k ON true
     LEFT JOIN LATERAL (SELECT * FROM mensajes WHERE msg_id = k.msg_id LIMIT 1) m ON true
     WHERE l.id IS NOT NULL)
     SELECT x.expired, x.next, q.* FROM (${EXPIRY}) x LEFT JOIN q ON true ORDER BY q.linea`,
        [now, unread],
      );
      const lines: BacklogLine[] = [];
      const due: MensajeRow[] = [];
      for (const { linea, linea_proximo, expired: _e, next: _n, ...m } of rows) {
        if (linea === null) continue;
        lines.push({ celular_id: linea, proximo_intento_at: linea_proximo });
        if (m.msg_id !== null && m.estado === 'pendiente') due.push(m);
      }
      const x = rows[0];
      return { lines, due, expiry: { expired: x?.expired === true, next: x?.next ?? null } };
    },
    /**
     * The queue's size and age (metrics): a count over the pending side
     * table's queue index, and the oldest of the lines' heads, found as
     * queueHeads finds them.
     */
    async queueDepth(): Promise<{ pending: number; oldest_at: number | null }> {
      const [r] = await db.q<{ pending: number; oldest_at: number | null }>(
        `WITH RECURSIVE ${LINEAS}
     SELECT (SELECT COUNT(*) FROM mensajes_pendientes WHERE modo = 'cola') AS pending,
            MIN((SELECT m.created_at FROM mensajes_pendientes p JOIN mensajes m ON m.msg_id = p.msg_id
                 WHERE p.modo = 'cola' AND p.celular_id = l.id ORDER BY p.seq LIMIT 1)) AS oldest_at
     FROM lineas l WHERE l.id IS NOT NULL`,
      );
      return { pending: r?.pending ?? 0, oldest_at: r?.oldest_at ?? null };
    },
    /** A claim, in the next turn of claims (claimMany): the claims of one look arrive together and share a statement. */
    async claimQueued(msgId: string, slot: SlotClaim, now: number, onlyHead = false, nodo: string | null = null): Promise<ClaimResult> {
      const item = { msgId, slot, now, onlyHead, nodo };
      const r = await claims(item);
      return answer(r === 'again' ? (await claimMany(db, [item], false))[0]! : r);
    },
    /** Every claim and its slot back (at start, when no other worker can be alive on this store). */
    async releaseLeases(): Promise<number> {
      const free = slotOn('release');
      const r = await db.q<{ n: number }>(
        `WITH r AS (UPDATE mensajes x SET ${slotSet(free, '$1')} FROM mensajes_pendientes p
       WHERE p.modo = 'cola' AND x.msg_id = p.msg_id AND x.estado = 'pendiente' AND x.lease_until IS NOT NULL RETURNING ${stateColsOf('x')}),
     slot AS (${slotSync('r', free.cupo_at)})
     SELECT COUNT(*) AS n FROM r`,
      );
      return r[0]!.n;
    },
    /** Direct sends still pendiente whose slot ended before `before`, oldest first (see core/sending/direct-recovery.ts). */
    async strandedDirect(before: number, limit: number): Promise<MensajeRow[]> {
      return db.q<MensajeRow>(
        `SELECT ${M_COLS} FROM mensajes_pendientes p JOIN mensajes m ON m.msg_id = p.msg_id
     WHERE p.modo = 'directo' AND p.cupo_at < $1 ORDER BY p.cupo_at, p.seq LIMIT $2`,
        [before, limit],
      );
    },
    /** Per line a range of the pending side table's queue index, in a lateral join: lines × the page at most. */
    async listQueue(celularIds: number[], after: number, limit: number): Promise<QueuedRow[]> {
      return db.q<QueuedRow>(
        `SELECT p.seq, ${M_COLS} FROM unnest($1::bigint[]) AS l(id)
     CROSS JOIN LATERAL (SELECT seq, msg_id FROM mensajes_pendientes WHERE modo = 'cola' AND celular_id = l.id AND seq > $2 ORDER BY seq LIMIT $3) p
     JOIN mensajes m ON m.msg_id = p.msg_id
     ORDER BY p.seq LIMIT $3`,
        [celularIds, after, limit],
      );
    },
    async queueSizes(celularIds: number[]): Promise<Array<{ celular_id: number; pendientes: number }>> {
      return db.q('SELECT id AS celular_id, pendientes FROM celulares WHERE id = ANY($1::bigint[]) ORDER BY id', [celularIds]);
    },
    /** The windows' counts as the claim reads them (one index range each on cupos_celular) and the last send, one more range. */
    async lineSlots(celularId: number, windows: number[], now: number): Promise<{ counts: SlotCount[]; last: number | null }> {
      const r = await db.one<{ counts: SlotCount[] | null; last: number | null }>(
        `SELECT ${slotCountsJson('$1::bigint', '$2::bigint[]', '$3')} AS counts,
            (SELECT MAX(cupo_at) FROM cupos WHERE celular_id = $1 AND cupo_at <= $3) AS last`,
        [celularId, windows.map((ms) => now - ms), now],
      );
      return { counts: countsOf(r!.counts), last: r!.last === null ? null : Number(r!.last) };
    },
    cancelQueued(msgId: string, error: string, now: number): Promise<CancelResult> {
      return cancelQueued(db, msgId, error, now);
    },
    /**
     * The expired pending messages through the pending side table's validity index (migration 30), read without a lock,
     * then ended as a cancel is (expireQueued): the FAIL statement's guard, under each message's lock, ends each once
     * whichever node sweeps it, and never one a live claim holds.
     */
    async expireDue(now: number, error: string, limit: number): Promise<{ ended: MensajeRow[]; next: number | null }> {
      // One round trip for the look (an idle node's CPU is its round trips, D-191): the due ones and the next time. Ending
      // the due ones moves neither part of `next` (messages not yet due; due ones a claim holds); one a claim takes
      // meanwhile is not ended, and is found by the look after its claim (the poll's at the latest).
      const [r] = await db.q<{ due: string[]; next: number | null }>(
        `SELECT ARRAY(SELECT p.msg_id FROM mensajes_pendientes p JOIN mensajes m ON m.msg_id = p.msg_id
           WHERE p.vence_at <= $1 AND (m.lease_until IS NULL OR m.lease_until <= $1) ORDER BY p.vence_at LIMIT $2) AS due, x.next
         FROM (${EXPIRY}) x`,
        [now, limit],
      );
      const due = r?.due ?? [];
      const ended = due.length === 0 ? [] : await expireQueued(db, due, error, now);
      return { ended, next: r?.next === null || r?.next === undefined ? null : Number(r.next) };
    },
    async retryLater(msgId: string, at: number, error: string): Promise<void> {
      const back = slotOn('retry');
      await db.q(
        `WITH u AS (UPDATE mensajes SET ${slotSet(back, '$4')}, proximo_intento_at = $2, intentos = intentos + 1, error = $3
       WHERE msg_id = $1 AND estado = 'pendiente' RETURNING ${STATE_COLS}),
     slot AS (${slotSync('u', back.cupo_at)}),
     -- The pending side table's copy, which the worker's look reads (queueLook).
     p AS (UPDATE mensajes_pendientes SET proximo_intento_at = $2 WHERE seq IN (SELECT seq FROM u))
     SELECT 1`,
        [msgId, at, error],
      );
    },
  };
}
