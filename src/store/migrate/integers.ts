import type Database from 'better-sqlite3';

/**
 * Values of INTEGER columns that SQLite kept as something else: a REAL
 * (`Inf`, which an operator field took before server/schemas/safe-integers.ts
 * refused it, or a fraction) or text. PostgreSQL refuses each with a bare
 * "invalid input syntax for type bigint", naming neither the table nor the
 * row; `migrate` names them instead (at most `limit`), as `table.column =
 * value (id N)`.
 */
export function nonIntegerValues(db: Database.Database, tables: readonly string[], limit = 10): string[] {
  const found: string[] = [];
  for (const table of tables) {
    const cols = db.prepare(`SELECT name, type FROM pragma_table_info(?)`).all(table) as Array<{ name: string; type: string }>;
    const hasId = cols.some((c) => c.name === 'id');
    for (const { name } of cols.filter((c) => /INT/i.test(c.type))) {
      if (found.length >= limit) return found;
      const rows = db
        .prepare(
          `SELECT ${hasId ? 'id' : 'NULL'} AS id, "${name}" AS v FROM "${table}" WHERE typeof("${name}") NOT IN ('integer', 'null') LIMIT CAST(? AS INTEGER)`,
        )
        .all(limit - found.length) as Array<{ id: number | null; v: unknown }>;
      for (const r of rows) found.push(`${table}.${name} = ${JSON.stringify(String(r.v)).slice(0, 40)}${r.id === null ? '' : ` (id ${r.id})`}`);
    }
  }
  return found;
}
