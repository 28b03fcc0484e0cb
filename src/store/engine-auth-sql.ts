/**
 * The lines holding engine state, one index probe per line (a loose index
 * scan over the primary key's first column) instead of a read of every key
 * of every line: the same text on both dialects.
 */
export const AUTH_INSTANCIAS = `WITH RECURSIVE t(instancia) AS (
  SELECT (SELECT MIN(instancia) FROM motor_auth)
  UNION ALL
  SELECT (SELECT MIN(instancia) FROM motor_auth WHERE instancia > t.instancia) FROM t WHERE t.instancia IS NOT NULL
) SELECT instancia FROM t WHERE instancia IS NOT NULL`;

/** Rows of one write, a (kind, id) given twice reduced to its last value: a multi-row upsert may touch a row once. */
export function lastOfEach<R extends { kind: string; id: string }>(rows: R[]): R[] {
  return [...new Map(rows.map((r) => [`${r.kind}\0${r.id}`, r])).values()];
}
