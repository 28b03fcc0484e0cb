import type { Db } from './db.js';

export interface Where {
  where: string;
  params: unknown[];
}

export interface Query {
  sql: string;
  params: unknown[];
}

/** `col = $n` conditions over the filter's values (undefined ones left out), numbered from 1. */
export function conditions(pairs: Array<[sql: string, value: unknown]>): Where {
  const present = pairs.filter(([, v]) => v !== undefined);
  return { where: present.map(([sql], i) => sql.replace('?', `$${i + 1}`)).join(' AND '), params: present.map(([, v]) => v) };
}

/** One page of a listing (history, inbox) with its total, the two queries in flight together. */
export async function listPage<T>(
  db: Db,
  select: string,
  w: Where,
  order: string,
  total: Query,
  page: { page: number; por_pagina: number },
): Promise<{ total: number; rows: T[] }> {
  const n = w.params.length;
  const [[t], rows] = await Promise.all([
    db.q<{ total: number }>(total.sql, total.params),
    db.q<T>(`${select} WHERE ${w.where} ORDER BY ${order} LIMIT $${n + 1} OFFSET $${n + 2}`, [...w.params, page.por_pagina, (page.page - 1) * page.por_pagina]),
  ]);
  return { total: t!.total, rows };
}
