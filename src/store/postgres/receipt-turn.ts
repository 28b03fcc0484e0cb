import { iso } from '../../core/time/clock.js';
import { AppError } from '../../core/api/errors.js';
import type { MensajeRow, ReceiptEstado } from '../../core/ports/model.js';
import * as recipe from '../../core/billing/recipes.js';
import { Turns, settle } from '../../core/queue/turns.js';
import type { Db } from './db.js';
import { colsOf } from './messages.js';
import { fieldOf, statusData } from './status-sql.js';
import { eventInsertOf } from './webhooks.js';
import type { ReceiptOutcome } from '../../core/ports/messages.js';

/**
 * Delivery and read receipts applied together (group commit,
 * core/queue/turns.ts): the receipts that arrive while one turn runs go in the
 * next, one autocommitted statement over arrays that does for each what
 * transitions.ts's RECEIPT_ADVANCE does for one: the line's message of that
 * gateway id locked and moved from the state read under that lock, one
 * `message.status` event per step, in arrival order. A receipt whose line
 * has no message of that id (yet) answers 'absent', and the caller goes on
 * as after a single statement (it waits for a send in flight, looks again,
 * parks).
 *
 * Locks, each kind in ascending order: the messages (by seq), then the
 * counts rows the trigger will take one message at a time (migration 15),
 * taken first: lines then quarters, a state before the states after it, as
 * one message's trigger takes them (its old state, then its new one).
 *
 * A turn whose statement fails for any reason but the store itself takes
 * each receipt alone, in arrival order; a receipt for a gateway id named
 * before in the turn goes alone after it, so the two apply one after the
 * other.
 */

/** The states in the order a message goes through them: the counts rows are locked in it. */
const RANK = `array_position(ARRAY['pendiente', 'enviado', 'entregado', 'leido', 'error']::text[], k.estado)`;
const STEPS = ['entregado', 'leido'] as const;

/**
 * Parameters: gateway ids, lines, receipts, nows, nows as ISO dates (one per
 * receipt, in arrival order), then the receipts' sources (ledger.ts
 * receiptSources) as one row per step: the receipt's place (1-based), the
 * state it starts from, the step's state, the state before the step.
 * Returns a row per receipt whose line has a message of that id: its place
 * (`r_orden`), `hallado`, and the moved row (null when it moved nothing).
 */
let sql = '';
// Built on first use: messages.ts, which gives the columns, imports transitions.ts, which imports this module.
const advanceTurnSql = () =>
  (sql ||= `WITH r AS MATERIALIZED (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY AS r(gid, celular_id, estado, now, fecha, orden)),
  path AS MATERIALIZED (
    SELECT * FROM unnest($6::bigint[], $7::text[], $8::text[], $9::text[]) WITH ORDINALITY AS p(orden, desde, estado, anterior, paso)),
  f AS MATERIALIZED (
    SELECT r.orden, (SELECT g.msg_id FROM ids_gateway g WHERE g.gateway_msg_id = r.gid AND g.celular_id = r.celular_id LIMIT 1) AS msg_id FROM r),
  b AS MATERIALIZED (
    SELECT f.orden, m.msg_id, m.estado, m.entregado_at, m.leido_at, m.cliente_id, m.celular_id, m.created_at
    FROM f JOIN mensajes m ON m.msg_id = f.msg_id ORDER BY m.seq FOR UPDATE OF m),
  mv AS MATERIALIZED (
    SELECT b.*, r.estado AS nuevo, r.now, r.fecha FROM b JOIN r USING (orden)
    WHERE b.estado IN (SELECT p.desde FROM path p WHERE p.orden = b.orden)),
  -- The counts rows of each moved message's old and new state (the counts' trigger), lines, quarters, then hours (D-106).
  lineas AS MATERIALIZED (
    SELECT 1 FROM conteos_mensajes k JOIN (SELECT DISTINCT cliente_id, celular_id FROM mv) x USING (cliente_id, celular_id)
    WHERE k.estado IN (SELECT estado FROM mv UNION SELECT nuevo FROM mv) ORDER BY k.cliente_id, k.celular_id, ${RANK} FOR UPDATE OF k),
  cuartos AS MATERIALIZED (
    SELECT 1 FROM conteos_cuartos k JOIN (SELECT DISTINCT cliente_id, created_at / 900000 AS cuarto FROM mv) x USING (cliente_id, cuarto)
    WHERE k.estado IN (SELECT estado FROM mv UNION SELECT nuevo FROM mv) AND (SELECT COUNT(*) FROM lineas) >= 0
    ORDER BY k.cliente_id, k.cuarto, ${RANK} FOR UPDATE OF k),
  horas AS MATERIALIZED (
    SELECT 1 FROM conteos_horas k JOIN (SELECT DISTINCT cliente_id, created_at / 3600000 AS hora FROM mv) x USING (hora, cliente_id)
    WHERE k.estado IN (SELECT estado FROM mv UNION SELECT nuevo FROM mv) AND (SELECT COUNT(*) FROM cuartos) >= 0
    ORDER BY k.hora, k.cliente_id, ${RANK} FOR UPDATE OF k),
  moved AS (
    UPDATE mensajes x SET estado = v.nuevo,
      ${STEPS.map((s) => `${recipe.receiptColumn(s)} = CASE WHEN EXISTS (SELECT 1 FROM path p WHERE p.orden = v.orden AND p.desde = v.estado AND p.estado = '${s}') THEN v.now ELSE x.${recipe.receiptColumn(s)} END`).join(',\n      ')}
    FROM mv v WHERE x.msg_id = v.msg_id AND (SELECT COUNT(*) FROM horas) >= 0
    RETURNING ${colsOf('x')}, v.estado AS antes_estado, v.entregado_at AS antes_entregado_at, v.leido_at AS antes_leido_at,
      v.orden AS u_orden, v.now AS u_now, v.fecha AS u_fecha),
  ev AS (${eventInsertOf(
    {
      cliente: 's.cliente_id',
      celular: 's.celular_id',
      evento: `'message.status'::text`,
      data: statusData(fieldOf('s', { estado: 'p.estado', estado_anterior: 'p.anterior', fecha: 's.u_fecha' })),
      fecha: 's.u_now',
      recordedAt: 's.u_now',
    },
    'FROM moved s JOIN path p ON p.orden = s.u_orden AND p.desde = s.antes_estado ORDER BY s.u_orden, p.paso',
  )})
  SELECT b.orden AS r_orden, b.msg_id AS hallado, u.* FROM b LEFT JOIN moved u ON u.u_orden = b.orden`);

/** What a receipt did to its line's message; 'absent' when the line has no message of that gateway id (yet). */
export type Applied = ReceiptOutcome | 'absent';

/** One delivery or read receipt of a turn. */
export interface PendingReceipt {
  celularId: number;
  gid: string;
  estado: Exclude<ReceiptEstado, 'error'>;
  now: number;
}

type Moved = MensajeRow & {
  r_orden: number;
  hallado: string;
  antes_estado: MensajeRow['estado'];
  antes_entregado_at: number | null;
  antes_leido_at: number | null;
  u_orden: number | null;
  u_now: number | null;
  u_fecha: string | null;
};

/** The turn's statement: each receipt's outcome, in order. */
async function advanceAll(db: Db, items: PendingReceipt[], sources: (e: ReceiptEstado) => [string[], string[], string[]]): Promise<Applied[]> {
  const steps: [number[], string[], string[], string[]] = [[], [], [], []];
  items.forEach((it, k) => {
    const [from, to, prev] = sources(it.estado);
    from.forEach((_, j) => {
      steps[0].push(k + 1);
      steps[1].push(from[j]!);
      steps[2].push(to[j]!);
      steps[3].push(prev[j]!);
    });
  });
  const found = await db.q<Moved>(advanceTurnSql(), [
    items.map((i) => i.gid),
    items.map((i) => i.celularId),
    items.map((i) => i.estado),
    items.map((i) => i.now),
    items.map((i) => iso(i.now)),
    ...steps,
  ]);
  const out: Applied[] = items.map(() => 'absent');
  for (const r of found) {
    const { r_orden, hallado: _h, antes_estado, antes_entregado_at, antes_leido_at, u_orden: _o, u_now: _n, u_fecha: _f, ...after } = r;
    out[r_orden - 1] =
      after.msg_id === null ? null : { before: { ...after, estado: antes_estado, entregado_at: antes_entregado_at, leido_at: antes_leido_at }, after };
  }
  return out;
}

/**
 * Group commit for the first statement of a delivery or read receipt
 * (transitions.ts `advance`, given as `alone` with the receipts' sources):
 * one turn in flight per node, up to `max` receipts in it.
 */
export function receiptTurns(
  db: Db,
  alone: (i: PendingReceipt) => Promise<Applied>,
  sources: (e: ReceiptEstado) => [string[], string[], string[]],
  opts: { max: number; concurrent: number } = { max: 100, concurrent: 1 },
) {
  const turns = new Turns<PendingReceipt, Applied>(async (items) => {
    const seen = new Set<string>();
    const first = items.map((i) => !seen.has(`${i.celularId}:${i.gid}`) && !!seen.add(`${i.celularId}:${i.gid}`));
    const batch = items.filter((_, k) => first[k]);
    let out: Array<PromiseSettledResult<Applied>> = [];
    if (batch.length === 1) out = [await settle(() => alone(batch[0]!))];
    else {
      try {
        out = (await advanceAll(db, batch, sources)).map((value) => ({ status: 'fulfilled', value }));
      } catch (err) {
        // A store that cannot be written fails every receipt at once; otherwise each alone, in arrival order.
        if (err instanceof AppError) throw err;
        for (const i of batch) out.push(await settle(() => alone(i)));
      }
    }
    // A receipt for an id named before in the turn: after the first committed, alone, in arrival order.
    let b = 0;
    const results: Array<PromiseSettledResult<Applied>> = [];
    for (const [k, i] of items.entries()) results.push(first[k] ? out[b++]! : await settle(() => alone(i)));
    return results;
  }, opts);
  return (i: PendingReceipt): Promise<Applied> => turns.add(i);
}
