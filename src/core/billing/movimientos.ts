import type { ClientPrincipal } from '../auth/auth.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { getClienteOrFail } from '../accounts/accounts.js';
import { fail } from '../api/errors.js';
import { listingScope, listingZone, POR_PAGINA_MAX, startOfDay, type ListingQuery } from '../history/historial.js';
import type { MovimientoFilter, MovimientoRow, MovimientoTipo } from '../ports/accounts.js';

/**
 * A client's balance movements (the ledger, `movimientos_saldo`) as people
 * read them, and this month's consumption per line (D-104, D-105). A charge
 * and a refund are written by the system (core/billing/recipes.ts: actor `sistema`,
 * motivo `envio <msg_id>` or `reembolso <msg_id>`); every other row is a
 * manual change, its actor the operator or the key that made it.
 */

export const MOVIMIENTO_TIPOS: readonly MovimientoTipo[] = ['cobro', 'reembolso', 'manual'];
/** A listing counts its total up to this many rows; beyond, `total` is null (a count never reads a whole ledger). */
export const MOVIMIENTOS_TOTAL_MAX = 10_000;
/** Every field of a movement, in order: the answer's and the exports' CSV columns. */
export const MOVIMIENTO_FIELDS = ['id', 'fecha', 'tipo', 'monto', 'saldo_despues', 'celular_id', 'msg_id', 'motivo', 'actor'] as const;

const SYSTEM = 'sistema';
const REFUND = 'reembolso ';
const CHARGE = 'envio ';

/** What a row is: a charge or a refund of a send (written by the system), else a manual change. The store's SQL says the same (store/movement-sql.ts). */
export function movementTipo(r: Pick<MovimientoRow, 'actor' | 'motivo'>): MovimientoTipo {
  if (r.actor !== SYSTEM) return 'manual';
  return r.motivo.startsWith(REFUND) ? 'reembolso' : 'cobro';
}

/** The message a charge or a refund was for (named in its motivo), or null. */
export function movementMsgId(r: Pick<MovimientoRow, 'actor' | 'motivo'>): string | null {
  if (r.actor !== SYSTEM) return null;
  for (const prefix of [CHARGE, REFUND]) if (r.motivo.startsWith(prefix)) return r.motivo.slice(prefix.length) || null;
  return null;
}

export function movimientoView(r: MovimientoRow) {
  return {
    id: r.id,
    fecha: iso(r.fecha),
    tipo: movementTipo(r),
    monto: r.monto,
    /** The balance it moved (the line's, or the global one when celular_id is null), after it. */
    saldo_despues: r.saldo_resultante,
    celular_id: r.celular_id,
    msg_id: movementMsgId(r),
    motivo: r.motivo,
    actor: r.actor,
  };
}

export type MovimientoView = ReturnType<typeof movimientoView>;

export interface MovimientosQuery extends ListingQuery {
  tipo?: string;
}

/** The query as a store filter, or a refusal (400 in words; 403/404 for a line out of scope), as the history's. */
export async function movimientosFilter(core: Pick<Core, 'store' | 'config'>, p: ClientPrincipal, q: MovimientosQuery): Promise<MovimientoFilter> {
  const { scope } = await listingScope(core, p, q);
  const f: MovimientoFilter = { ...scope };
  if (q.tipo !== undefined) {
    if (!MOVIMIENTO_TIPOS.includes(q.tipo as MovimientoTipo)) fail('INVALID_PARAMS', `tipo: one of ${MOVIMIENTO_TIPOS.join(', ')}`);
    f.tipo = q.tipo as MovimientoTipo;
  }
  return f;
}

/** One page, newest first; `total` and `total_paginas` are null past MOVIMIENTOS_TOTAL_MAX matching rows. */
export async function listMovimientos(core: Pick<Core, 'store' | 'config'>, p: ClientPrincipal, q: MovimientosQuery) {
  const f = await movimientosFilter(core, p, q);
  const { total, rows } = await core.store.listMovimientos({ ...f, totalHasta: MOVIMIENTOS_TOTAL_MAX });
  return {
    cliente_id: p.cliente.id,
    page: f.page,
    por_pagina: f.por_pagina,
    total,
    total_paginas: total === null ? null : Math.ceil(total / f.por_pagina),
    zona_horaria: listingZone(core),
    movimientos: rows.map(movimientoView),
  };
}

/**
 * Every movement a query selects (its page aside), newest first, a store
 * page at a time after the last row of the one before (keyset): an export
 * of any size holds one page. The window is closed when it starts, as the
 * history's export (core/history/historial.ts `exportHistorial`).
 */
export async function* exportMovimientos(
  core: Pick<Core, 'store' | 'clock' | 'config'>,
  p: ClientPrincipal,
  q: MovimientosQuery,
): AsyncGenerator<MovimientoView[]> {
  const { page: _p, por_pagina: _pp, ...filters } = q;
  const f = await movimientosFilter(core, p, filters);
  const hasta = Math.min(f.hasta ?? Number.MAX_SAFE_INTEGER, core.clock.now() + 1);
  let despues: MovimientoFilter['despues'];
  for (;;) {
    const { rows } = await core.store.listMovimientos({ ...f, hasta, page: 1, por_pagina: POR_PAGINA_MAX, ...(despues ? { despues } : {}) });
    if (rows.length > 0) yield rows.map(movimientoView);
    if (rows.length < POR_PAGINA_MAX) return;
    const last = rows[rows.length - 1]!;
    despues = { fecha: last.fecha, id: last.id };
  }
}

const MES_RE = /^(\d{4})-(\d{2})$/;

/** A calendar month YYYY-MM in `tz` as [desde, hasta) in ms, or a 400 in words. */
export function monthWindow(mes: string, tz: string): { desde: number; hasta: number } {
  const r = MES_RE.exec(mes);
  const y = r ? Number(r[1]) : 0;
  const m = r ? Number(r[2]) : 0;
  if (!r || y < 1 || m < 1 || m > 12) fail('INVALID_PARAMS', `mes: "${mes}" is not a month written YYYY-MM (2026-11)`);
  const next = m === 12 ? { y: y + 1, m: 1, d: 1 } : { y, m: m + 1, d: 1 };
  return { desde: startOfDay({ y, m, d: 1 }, tz), hasta: startOfDay(next, tz) };
}

/** The month instant `now` falls in, written YYYY-MM, in `tz`. */
export function monthOf(now: number, tz: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit' }).formatToParts(now);
  const get = (t: string) => parts.find((x) => x.type === t)!.value;
  return `${get('year')}-${get('month')}`;
}

/**
 * A month's consumption per line (D-105): the messages each line's sends
 * made that month (failed ones left out) and the credits they cost (charged
 * and not refunded, whichever balance paid; none on an unlimited plan). The
 * month is read in the server's zone, like history days; a celular key sees
 * its own line only.
 */
export async function consumoMes(core: Pick<Core, 'store' | 'clock' | 'config'>, p: ClientPrincipal, mes: string | undefined) {
  const tz = listingZone(core);
  const month = mes ?? monthOf(core.clock.now(), tz);
  const { desde, hasta } = monthWindow(month, tz);
  const all = await core.store.consumoLineas(p.cliente.id, desde, hasta);
  const lineas = p.kind === 'celular' ? all.filter((l) => l.celular_id === p.celular.id) : all;
  return {
    cliente_id: p.cliente.id,
    mes: month,
    zona_horaria: tz,
    desde: iso(desde),
    hasta: iso(hasta),
    plan: p.cliente.plan,
    mensajes: lineas.reduce((n, l) => n + l.mensajes, 0),
    monto: lineas.reduce((n, l) => n + l.monto, 0),
    lineas,
  };
}

/** The operator reading one client's money (GET /admin/movimientos): that client's view, every line; 404 for no such client. */
export async function operatorOver(core: Pick<Core, 'store'>, clienteId: number): Promise<ClientPrincipal> {
  return { kind: 'client', cliente: await getClienteOrFail(core, clienteId), operador: true };
}
