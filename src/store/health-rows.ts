import type { LineHealthCounts } from '../core/ports/line-health.js';

// A line's health window is read in two statements (sqlite/line-health.ts, postgres/line-health.ts): the rows both dialects join by line.

export type Salidos = Pick<LineHealthCounts, 'celular_id' | 'salidos' | 'enviados' | 'sin_entregar'>;
export type Fallos = Pick<LineHealthCounts, 'celular_id' | 'fallos' | 'rechazados'>;

/** The two reads of a window joined by line. */
export function mergeHealth(salidos: Salidos[], fallos: Fallos[]): LineHealthCounts[] {
  const out = new Map<number, LineHealthCounts>();
  const at = (id: number) => out.get(id) ?? out.set(id, { celular_id: id, salidos: 0, fallos: 0, rechazados: 0, enviados: 0, sin_entregar: 0 }).get(id)!;
  for (const s of salidos) Object.assign(at(s.celular_id), { salidos: s.salidos, enviados: s.enviados, sin_entregar: s.sin_entregar });
  for (const f of fallos) Object.assign(at(f.celular_id), { fallos: f.fallos, rechazados: f.rechazados });
  return [...out.values()];
}
