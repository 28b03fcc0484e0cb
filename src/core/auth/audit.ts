import { actorOf, type Principal } from './auth.js';
import type { Core } from '../context.js';
import { fail } from '../api/errors.js';
import { boundsParam, listingZone } from '../history/historial.js';
import { LIST_LIMITS } from '../api/limits.js';
import type { AuditFilter, AuditRecord, BalanceAudited, BalanceChange } from '../ports/accounts.js';
import type { AuditEntry, AuditOf, WebhookConfig } from '../ports/model.js';

/**
 * The audit trail: who changed money or configuration, when, and what it
 * was before and after (`detalle: { antes, despues }`, only the fields that
 * changed); never a secret, only whether one is set or was changed (D-91).
 * And its reading: filters by action, client and time, keyset pages (D-92).
 */

/**
 * The actions written today, the one list the panel's filter, `admin audit
 * --help` and the API's schema description offer (any other text is still a
 * valid filter). test/core/audit-acciones.test.ts finds every action the
 * source writes here.
 */
export const AUDIT_ACCIONES = [
  'cliente.crear',
  'cliente.editar',
  'cliente.rotar_key',
  'saldo.cambiar',
  'celular.crear',
  'celular.editar',
  'celular.eliminar',
  'celular.rotar_key',
  'celular.token_legacy',
  'celular.mover_gateway',
  'celular.logout',
  'celular.reiniciar',
  'celular.motor_nodo',
  'celular.frenar',
  'celular.reanudar',
  'webhook.configurar',
  'webhook.eliminar',
  'webhook.restaurar',
  'webhook.reentregar_fallidas',
  'mensaje.cancelar',
  'mensaje.reintentar',
  'gateway.agregar',
  'gateway.drenar',
  'gateway.activar',
] as const;

type Fields = Record<string, unknown>;

/** The fields of `keys` that differ, as they were and as they are. */
export function beforeAfter<T extends object>(antes: T, despues: T, keys: ReadonlyArray<keyof T & string>): { antes: Fields; despues: Fields } {
  const out = { antes: {} as Fields, despues: {} as Fields };
  for (const k of keys) {
    if (JSON.stringify(antes[k]) === JSON.stringify(despues[k])) continue;
    out.antes[k] = antes[k];
    out.despues[k] = despues[k];
  }
  return out;
}

/** A URL without what may be a credential: its user and password, its query and fragment (a receiver's token often rides there). */
export function auditUrl(raw: string): string {
  try {
    const u = new URL(raw);
    const who = u.username || u.password ? '…@' : '';
    return `${u.protocol}//${who}${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '…';
  }
}

/** A webhook configuration as its audit record shows it: the secret only as set, none, or changed. */
function webhookFields(cfg: WebhookConfig | null, secret: string): Fields {
  if (!cfg) return { url: null, eventos: null, activo: null, secret };
  return { url: auditUrl(cfg.url), eventos: cfg.eventos.join(','), activo: cfg.activo, secret };
}

/** The audit record of a webhook set, delete or restore, from the configuration before and after it. */
export function webhookAudit(p: Principal, accion: 'webhook.configurar' | 'webhook.eliminar' | 'webhook.restaurar'): AuditOf<WebhookConfig | null> {
  return (antes, despues) => {
    const before = antes?.secret ? 'puesto' : 'ninguno';
    const after = !despues?.secret ? 'ninguno' : antes?.secret && antes.secret !== despues.secret ? 'cambiado' : 'puesto';
    const id = (despues ?? antes)?.cliente_id ?? null;
    return {
      actor: actorOf(p),
      accion,
      objeto_tipo: 'webhook',
      objeto_id: id,
      cliente_id: id,
      detalle: beforeAfter(webhookFields(antes, before), webhookFields(despues, after), ['url', 'eventos', 'activo', 'secret']),
    };
  };
}

/** The audit record of a balance change: the amount, why, the ledger row, and the balance it found and left. */
export function balanceAudit(change: BalanceChange): (r: BalanceAudited) => AuditEntry {
  const saldo = change.celular_id === null ? 'saldo_global' : 'saldo_celular';
  return (r) => ({
    actor: change.actor,
    accion: 'saldo.cambiar',
    objeto_tipo: change.celular_id === null ? 'cliente' : 'celular',
    objeto_id: change.celular_id ?? change.cliente_id,
    cliente_id: change.cliente_id,
    detalle: {
      monto: change.monto,
      motivo: change.motivo,
      celular_id: change.celular_id,
      movimiento_id: r.movimiento_id,
      antes: { [saldo]: r.antes },
      despues: { [saldo]: r.despues },
    },
  });
}

/** One line of a record's detalle as people read it: a field that changed (before → after), or a plain value. */
export interface DetalleLine {
  campo: string;
  antes?: string;
  despues?: string;
  valor?: string;
}

/**
 * A value as people read it: text as it is; a list of values joined by
 * commas; a record (a retried message's `{de, nuevo}`) as `de X, nuevo Y`,
 * and a list of them each in parentheses; never raw JSON with its quotes.
 */
function shown(v: unknown, depth = 0): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v !== 'object' || depth > 2) return JSON.stringify(v);
  if (Array.isArray(v)) return v.length === 0 ? 'none' : v.map((x) => (isFields(x) ? `(${shown(x, depth + 1)})` : shown(x, depth + 1))).join(', ');
  return Object.entries(v)
    .map(([k, x]) => `${k} ${isFields(x) ? `(${shown(x, depth + 1)})` : shown(x, depth + 1)}`)
    .join(', ');
}

const isFields = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A record's detalle, readable: each changed field before → after, then the other values (the panel's and the CLI's). */
export function detalleLines(detalle: Fields): DetalleLine[] {
  const lines: DetalleLine[] = [];
  const antes = isFields(detalle.antes) ? detalle.antes : null;
  const despues = isFields(detalle.despues) ? detalle.despues : null;
  if (antes || despues) {
    for (const k of new Set([...Object.keys(antes ?? {}), ...Object.keys(despues ?? {})])) {
      lines.push({ campo: k, antes: shown(antes?.[k]), despues: shown(despues?.[k]) });
    }
  }
  for (const [k, v] of Object.entries(detalle)) {
    if ((k === 'antes' && antes) || (k === 'despues' && despues)) continue;
    lines.push({ campo: k, valor: shown(v) });
  }
  return lines;
}

/** A detalle on one line of text: `saldo_global: 0 → 100; monto: 100` (the CLI's table). */
export function detalleText(detalle: Fields): string {
  return detalleLines(detalle)
    .map((l) => (l.valor !== undefined ? `${l.campo}: ${l.valor}` : `${l.campo}: ${l.antes} → ${l.despues}`))
    .join('; ');
}

/** What GET /admin/auditoria, the audit page and `admin audit` ask. */
export interface AuditQuery {
  cliente_id?: number;
  accion?: string;
  /** A day (in the server's zone) or an RFC 3339 instant, included. */
  desde?: string;
  /** A day, included; or an instant, excluded. */
  hasta?: string;
  /** The page older than this id (the `antes` cursor of the page before). */
  antes?: number;
  /** The page newer than this id; 0: the oldest page. */
  despues?: number;
  limit?: number;
}

export interface AuditPage {
  registros: AuditRecord[];
  /** The cursors of the neighbouring pages (null: there is none): `antes` for the older one, `despues` for the newer. */
  paginas: { antes: number | null; despues: number | null };
  zona_horaria: string;
}

const ACCION_RE = /^[a-z0-9_]{1,30}\.[a-z0-9_]{1,30}$/;

function cursor(name: string, v: number | undefined, min: number): number | undefined {
  if (v !== undefined && !(Number.isSafeInteger(v) && v >= min)) fail('INVALID_PARAMS', `${name}: a whole number from ${min} up is required`);
  return v;
}

/**
 * A page of the trail, newest first. Filters are equalities an index leads
 * with; a time bound is turned into an id bound through the index on fecha
 * (records are stamped as they are written, so id order is time order), and
 * a page is an id range of one index: its cost does not grow with the trail.
 */
export async function listAuditoria(core: Pick<Core, 'store' | 'config'>, q: AuditQuery): Promise<AuditPage> {
  const limit = q.limit ?? LIST_LIMITS.auditoria.default;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIST_LIMITS.auditoria.max)
    fail('INVALID_PARAMS', `limit: a whole number from 1 to ${LIST_LIMITS.auditoria.max} is required`);
  if (q.accion !== undefined && !ACCION_RE.test(q.accion))
    fail('INVALID_PARAMS', `accion: "${q.accion}" is not an action; such as ${AUDIT_ACCIONES.slice(0, 3).join(', ')}`);
  cursor('cliente_id', q.cliente_id, 1);
  const antes = cursor('antes', q.antes, 1);
  const despues = cursor('despues', q.despues, 0);
  if (antes !== undefined && despues !== undefined) fail('INVALID_PARAMS', 'give antes (an older page) or despues (a newer one), not both');
  const zona_horaria = listingZone(core);
  const bounds = boundsParam(q, zona_horaria);
  const none: AuditPage = { registros: [], paginas: { antes: null, despues: null }, zona_horaria };

  // The time window as ids: (floor, ceiling), both exclusive.
  let floor = 0;
  let ceiling = Number.MAX_SAFE_INTEGER;
  if (bounds.desde !== undefined) {
    const first = await core.store.firstAuditAt(bounds.desde);
    if (first === null) return none;
    floor = first - 1;
  }
  if (bounds.hasta !== undefined) ceiling = (await core.store.firstAuditAt(bounds.hasta)) ?? ceiling;
  const base: Omit<AuditFilter, 'limit'> = { cliente_id: q.cliente_id, accion: q.accion };
  const lo = Math.max(floor, despues ?? 0);
  const hi = Math.min(ceiling, antes ?? Number.MAX_SAFE_INTEGER);
  const fromOldest = despues !== undefined;
  const rows = await core.store.listAudit({ ...base, after_id: lo, before_id: hi, from: fromOldest ? 'oldest' : 'newest', limit: limit + 1 });
  const more = rows.length > limit;
  // Newest first either way: read from the oldest end, the extra row is the newest.
  const registros = fromOldest ? rows.slice(more ? 1 : 0) : rows.slice(0, limit);
  const exists = async (f: Partial<AuditFilter>) => (await core.store.listAudit({ ...base, after_id: lo, before_id: hi, ...f, limit: 1 })).length > 0;
  const top = registros[0]?.id;
  const bottom = registros[registros.length - 1]?.id;
  let older: boolean;
  let newer: boolean;
  if (fromOldest) {
    newer = more;
    older = await exists({ after_id: floor, before_id: bottom ?? lo + 1 });
  } else {
    older = more;
    newer = antes !== undefined && (await exists({ after_id: top ?? hi - 1, before_id: ceiling }));
  }
  return {
    registros,
    paginas: {
      antes: older ? (bottom ?? lo + 1) : null,
      despues: newer ? (top ?? hi - 1) : null,
    },
    zona_horaria,
  };
}
