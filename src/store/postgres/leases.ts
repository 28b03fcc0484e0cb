import type { Linea } from '../../core/ports/accounts.js';
import type { LeaseAnswer, LeaseGift, LeasesStore, LinePage, NodeInfo, NodeRow, StoreNews } from '../../core/ports/leases.js';
import { type Db, type Queryable, rows } from './db.js';

/**
 * Nodes and stream leases in PostgreSQL (the rule is core/nodes/leases.ts). Every
 * comparison of times is made on the database's clock, never a node's, so
 * nodes with skewed clocks still agree on who is alive and what is due. The
 * `now` the port passes is ignored here for that reason.
 */
export const DB_NOW = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint';

/** Every node, alive or not, on the database's clock; `q` may be a transaction's client (`pasarela migrate`). */
export function nodes(q: Queryable): Promise<NodeRow[]> {
  return rows<NodeRow>(
    q,
    `SELECT id, etiqueta AS label, heartbeat_at, started_at, heartbeat_at + stale_ms >= ${DB_NOW} AS alive,
       GREATEST(0, ${DB_NOW} - heartbeat_at) AS silent_ms, margen_ms AS margin_ms, motor_url AS engine_url FROM nodos ORDER BY started_at, id`,
  );
}

/** core/nodes/leases.ts leaseTakable, of lease `l` for taker $1 at `n.t`. */
const TAKABLE = `l.next_at <= n.t
         AND (l.nodo IS NULL OR l.nodo = $1 OR NOT EXISTS (SELECT 1 FROM nodos d WHERE d.id = l.nodo AND d.heartbeat_at + d.stale_ms >= n.t))`;

/** A rest in whole milliseconds, never negative. */
const ms = (restMs: number) => Math.max(0, Math.round(restMs));

export function leases(db: Db): LeasesStore {
  return {
    /**
     * The beat, and in the same round trip what waits in the store (StoreNews, D-197), each read as the look that
     * would read it begins: the first queued line by the queue's index, the earliest validity by its own, the first pending
     * delivery in the outbox's partial index (in its order: a plan stats taken mid-burst cannot turn into a scan of the
     * log), one live listener in the (small) listeners' table.
     */
    async nodeBeat(node: NodeInfo, now: number): Promise<StoreNews> {
      const [r] = await db.q<StoreNews>(
        `WITH b AS (INSERT INTO nodos (id, etiqueta, heartbeat_at, stale_ms, started_at, margen_ms, motor_url) VALUES ($1, $2, ${DB_NOW}, $3, ${DB_NOW}, $4, $5)
     ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, motor_url = EXCLUDED.motor_url)
     SELECT (SELECT celular_id FROM mensajes_pendientes WHERE modo = 'cola' ORDER BY celular_id LIMIT 1) IS NOT NULL
         OR (SELECT MIN(vence_at) FROM mensajes_pendientes WHERE vence_at IS NOT NULL) IS NOT NULL AS queue,
       (SELECT 1 FROM eventos WHERE entrega = 'pendiente' ORDER BY cliente_id, proximo_intento_at, seq LIMIT 1) IS NOT NULL AS outbox,
       EXISTS (SELECT 1 FROM webhook_escuchas WHERE expira_at > $6) AS listeners`,
        [node.id, node.label, node.staleMs, node.marginMs, node.engineUrl, now],
      );
      return { queue: r?.queue !== false, outbox: r?.outbox !== false, listeners: r?.listeners !== false };
    },
    /** Also forgets nodes dead for an hour: their leases are free either way, and the table stays as small as the cluster. */
    async nodeLeave(nodeId: string): Promise<void> {
      await db.tx(async (c) => {
        await c.query('UPDATE leases SET nodo = NULL WHERE nodo = $1', [nodeId]);
        await c.query('UPDATE motor_sesiones SET nodo = NULL WHERE nodo = $1', [nodeId]);
        await c.query(`DELETE FROM nodos WHERE id = $1 OR heartbeat_at + stale_ms < ${DB_NOW} - 3600000`, [nodeId]);
      });
    },
    nodes(): Promise<NodeRow[]> {
      return nodes(db);
    },
    /**
     * One statement: the due and free rows among `streams` are locked with SKIP
     * LOCKED (a row another taker is on right now is left to it, never waited
     * for) and given to the taker; every asked stream comes back with what was
     * found, in the order asked. Streams without a row yet are made, taken, by a second statement.
     * The streams given back ride on the same statement (`g`: PostgreSQL runs a data-modifying WITH whether read or not).
     */
    leaseTake(nodeId: string, streams: string[], _now: number, gives: LeaseGift[] = []): Promise<LeaseAnswer[]> {
      return take(db, nodeId, streams, gives);
    },
    /**
     * The page, its leases' take (as `take`'s, by the page's own stream names) and the make of those with no row yet, in
     * one statement. A resting take keeps no holder: only `next_at` changes, an update made in place (HOT: no index holds
     * it). One line past the page says whether lines follow; the page's last line comes back taken or not.
     */
    async leaseTakeLines(nodeId: string, prefix: string, afterId: number, limit: number, restMs: number | null): Promise<LinePage> {
      const found = await db.q<Omit<Linea, 'vinculado'> & { vinculado: number; taken: boolean; more: boolean }>(
        `WITH n AS (SELECT ${DB_NOW} AS t),
     p0 AS MATERIALIZED (
       SELECT id, numero, gateway_instancia, vinculado, estado, last_status FROM celulares
       WHERE gateway_instancia IS NOT NULL AND id > $3 ORDER BY id LIMIT $4::int + 1
     ),
     p AS MATERIALIZED (SELECT p0.*, $2::text || p0.id AS stream FROM p0 ORDER BY id LIMIT $4::int),
     c AS (
       SELECT l.stream FROM p JOIN leases l ON l.stream = p.stream CROSS JOIN n
       WHERE ${TAKABLE}
       FOR UPDATE OF l SKIP LOCKED
     ),
     u AS (UPDATE leases l SET nodo = CASE WHEN $5::bigint IS NULL THEN $1 END, next_at = COALESCE(n.t + $5::bigint, l.next_at)
           FROM c, n WHERE l.stream = c.stream RETURNING l.stream),
     i AS (INSERT INTO leases (stream, nodo, next_at)
           SELECT p.stream, CASE WHEN $5::bigint IS NULL THEN $1 END, COALESCE(n.t + $5::bigint, 0) FROM p CROSS JOIN n
           WHERE NOT EXISTS (SELECT 1 FROM leases l WHERE l.stream = p.stream)
           ON CONFLICT (stream) DO NOTHING RETURNING stream)
     SELECT p.id, p.numero, p.gateway_instancia, p.vinculado, p.estado, p.last_status, u.stream IS NOT NULL OR i.stream IS NOT NULL AS taken,
       (SELECT COUNT(*) FROM p0) > $4::int AS more
     FROM p LEFT JOIN u ON u.stream = p.stream LEFT JOIN i ON i.stream = p.stream
     WHERE u.stream IS NOT NULL OR i.stream IS NOT NULL OR p.id = (SELECT MAX(id) FROM p)
     ORDER BY p.id`,
        [nodeId, prefix, afterId, limit, restMs === null ? null : ms(restMs)],
      );
      // The columns of a Linea, as SQLite's page reads them (`vinculado` is stored 0/1).
      const taken = found.filter((r) => r.taken).map(({ taken: _t, more: _m, vinculado, ...l }) => ({ ...l, vinculado: vinculado === 1 }));
      return { taken, last: found.at(-1)?.id ?? null, more: found.at(-1)?.more === true };
    },
    async leaseGive(nodeId: string, stream: string, restMs: number): Promise<void> {
      await db.query(`UPDATE leases SET nodo = NULL, next_at = ${DB_NOW} + $3 WHERE stream = $2 AND nodo = $1`, [nodeId, stream, ms(restMs)]);
    },
  };
}

/** The streams taken are held by `nodeId`; those given back rest. */
async function take(db: Db, nodeId: string, streams: string[], gives: LeaseGift[]): Promise<LeaseAnswer[]> {
  const giveArgs = [gives.map((g) => g.stream), gives.map((g) => ms(g.restMs))];
  if (streams.length === 0) {
    // Only gives: one statement for all of them.
    if (gives.length > 0)
      await db.query(
        `UPDATE leases l SET nodo = NULL, next_at = ${DB_NOW} + r.rest FROM unnest($2::text[], $3::bigint[]) AS r(stream, rest) WHERE l.stream = r.stream AND l.nodo = $1`,
        [nodeId, ...giveArgs],
      );
    return [];
  }
  const found = await db.q<{ stream: string; known: boolean; taken: boolean; rest_ms: number }>(
    `WITH n AS (SELECT ${DB_NOW} AS t),
     g AS (UPDATE leases l SET nodo = NULL, next_at = n.t + r.rest FROM n, unnest($3::text[], $4::bigint[]) AS r(stream, rest)
           WHERE l.stream = r.stream AND l.nodo = $1),
     c AS (
       SELECT l.stream FROM leases l, n
       WHERE l.stream = ANY($2::text[]) AND ${TAKABLE}
       FOR UPDATE OF l SKIP LOCKED
     ),
     u AS (UPDATE leases l SET nodo = $1 FROM c WHERE l.stream = c.stream RETURNING l.stream)
     SELECT s.stream, l.stream IS NOT NULL AS known, u.stream IS NOT NULL AS taken, GREATEST(0, COALESCE(l.next_at, 0) - n.t) AS rest_ms
     FROM unnest($2::text[]) WITH ORDINALITY AS s(stream, ord) CROSS JOIN n
     LEFT JOIN leases l ON l.stream = s.stream LEFT JOIN u ON u.stream = s.stream
     ORDER BY s.ord`,
    [nodeId, streams, ...giveArgs],
  );
  const unknown = found.filter((f) => !f.known).map((f) => f.stream);
  const made = new Set<string>();
  if (unknown.length > 0) {
    const r = await db.q<{ stream: string }>(
      'INSERT INTO leases (stream, nodo, next_at) SELECT s, $1, 0 FROM unnest($2::text[]) AS s ON CONFLICT (stream) DO NOTHING RETURNING stream',
      [nodeId, unknown],
    );
    for (const x of r) made.add(x.stream);
  }
  return found.map((f) => {
    const taken = f.taken || made.has(f.stream);
    return { stream: f.stream, taken, restMs: taken ? 0 : Number(f.rest_ms) };
  });
}
