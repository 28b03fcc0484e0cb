import type { AuditFilter, AuditRecord } from '../core/ports/accounts.js';
import type { AuditEntry } from '../core/ports/model.js';
import type { Placeholder } from './recipe-sql.js';

/**
 * The audit trail's SQL, the same text for both dialects but its
 * placeholders (as recipe-sql.ts): the insert, a page by id, and the first
 * record at a time. Every page reads one index range (D-91).
 */

export function auditInsert(ph: Placeholder): string {
  return `INSERT INTO auditoria (fecha, actor, accion, objeto_tipo, objeto_id, cliente_id, detalle) VALUES (${[1, 2, 3, 4, 5, 6, 7].map(ph).join(', ')})`;
}

export function auditValues(entry: AuditEntry, now: number): unknown[] {
  return [now, entry.actor, entry.accion, entry.objeto_tipo, entry.objeto_id, entry.cliente_id, JSON.stringify(entry.detalle)];
}

/**
 * A page: equality on the filters an index leads with ((cliente_id, accion,
 * id), (cliente_id, id), (accion, id) or the primary key), then the id range,
 * walked from the newest or from the oldest end.
 */
export function auditPage(f: AuditFilter, ph: Placeholder): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const eq = (col: string, v: unknown) => {
    params.push(v);
    where.push(`${col} = ${ph(params.length)}`);
  };
  if (f.cliente_id !== undefined) eq('cliente_id', f.cliente_id);
  if (f.accion !== undefined) eq('accion', f.accion);
  params.push(f.before_id ?? Number.MAX_SAFE_INTEGER);
  where.push(`id < ${ph(params.length)}`);
  params.push(f.after_id ?? 0);
  where.push(`id > ${ph(params.length)}`);
  params.push(f.limit);
  const order = f.from === 'oldest' ? 'ASC' : 'DESC';
  return { sql: `SELECT * FROM auditoria WHERE ${where.join(' AND ')} ORDER BY id ${order} LIMIT ${ph(params.length)}`, params };
}

/** The first record at or after a time: parameter (fecha). */
export function auditFirstAt(ph: Placeholder): string {
  return `SELECT id FROM auditoria WHERE fecha >= ${ph(1)} ORDER BY fecha, id LIMIT 1`;
}

/** A stored row as the port answers it (newest first whichever end the page was read from). */
export function auditRecords(rows: Array<Record<string, unknown>>, f: AuditFilter): AuditRecord[] {
  const out = rows.map((r) => ({
    id: Number(r.id),
    fecha: Number(r.fecha),
    actor: String(r.actor),
    accion: String(r.accion),
    objeto_tipo: String(r.objeto_tipo),
    objeto_id: r.objeto_id === null ? null : Number(r.objeto_id),
    cliente_id: r.cliente_id === null ? null : Number(r.cliente_id),
    detalle: (typeof r.detalle === 'string' ? JSON.parse(r.detalle) : r.detalle) as Record<string, unknown>,
  }));
  return f.from === 'oldest' ? out.reverse() : out;
}
