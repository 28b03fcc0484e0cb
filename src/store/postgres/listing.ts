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

/**
 * One page of a listing (history, inbox) with its total (-1 without a
 * total query), the two queries in flight together. `bound`: SQL of the exact number of matching rows over the
 * page's own parameters, when a kept count knows it and the page's index
 * does not hold the filter: the page's LIMIT stops at the last match, rather
 * than reading the rest of the order for matches that are not there.
 */
export async function listPage<T>(
  db: Db,
  select: string,
  w: Where,
  order: string,
  total: Query | null,
  page: { page: number; por_pagina: number },
  bound?: string,
): Promise<{ total: number; rows: T[] }> {
  const n = w.params.length;
  const [limit, offset] = [`$${n + 1}`, `$${n + 2}`];
  const cap = bound === undefined ? limit : `LEAST(${limit}::bigint, GREATEST(0, (${bound}) - ${offset}::bigint))`;
  const [[t], rows] = await Promise.all([
    total ? db.q<{ total: number }>(total.sql, total.params) : [{ total: -1 }],
    db.q<T>(`${select} WHERE ${w.where} ORDER BY ${order} LIMIT ${cap} OFFSET ${offset}`, [...w.params, page.por_pagina, (page.page - 1) * page.por_pagina]),
  ]);
  return { total: t.total, rows };
}
