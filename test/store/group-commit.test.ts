import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { grouped, stmt } from '../../src/store/sqlite/statements.js';
import { tempDir } from '../helpers/server.js';

/**
 * Group commit (src/store/sqlite/statements.ts): writes asked for in one turn
 * share a transaction without savepoints; one that throws is rolled back
 * alone, whatever its place in the batch, and the others still commit.
 */
let dir: string;
let db: Database.Database;

beforeEach(() => {
  dir = tempDir('pasarela-group-');
  db = new Database(join(dir, 'g.db'));
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)');
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const put = (k: string, v: number) => stmt(db, 'INSERT INTO t (k, v) VALUES (?, ?)').run(k, v).changes;
const rows = () => db.prepare('SELECT k, v FROM t ORDER BY k').all();

it('one turn of writes commits together, each seeing the ones before it', async () => {
  const [a, b] = await Promise.all([
    grouped(db, () => put('a', 1)),
    grouped(db, () => (stmt(db, 'SELECT v FROM t WHERE k = ?').get('a') as { v: number }).v + 1),
  ]);
  expect([a, b]).toEqual([1, 2]);
  expect(rows()).toEqual([{ k: 'a', v: 1 }]);
  expect(db.inTransaction).toBe(false);
});

it('a write that throws after writing is rolled back alone; the rest of its batch commits', async () => {
  const results = await Promise.allSettled([
    grouped(db, () => put('a', 1)),
    grouped(db, () => {
      put('b', 2);
      // A constraint fault half-way: its first insert must not stay.
      return put('a', 3);
    }),
    grouped(db, () => put('c', 3)),
  ]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
  expect(rows()).toEqual([
    { k: 'a', v: 1 },
    { k: 'c', v: 3 },
  ]);
  expect(db.inTransaction).toBe(false);
});

it('a lone write that throws leaves nothing; the next turn writes as usual', async () => {
  await expect(
    grouped(db, () => {
      put('x', 1);
      throw new Error('refused');
    }),
  ).rejects.toThrow('refused');
  expect(rows()).toEqual([]);
  expect(await grouped(db, () => put('y', 2))).toBe(1);
  expect(rows()).toEqual([{ k: 'y', v: 2 }]);
});

it('a full disk in a batch fails each write it took with it as the store fault (507), never a savepoint error', async () => {
  put('seed', 0);
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  const big = (k: string) => stmt(db, 'INSERT INTO t (k, v) VALUES (?, ?)').run(k + 'x'.repeat(20_000), 1).changes;
  const results = await Promise.allSettled([grouped(db, () => put('a', 1)), grouped(db, () => big('b')), grouped(db, () => put('c', 3))]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  // The big write fails; whatever the fault took with it fails the same way, and only what was answered ok is kept.
  expect(failed.length).toBeGreaterThan(0);
  for (const f of failed) expect(f.reason).toMatchObject({ row: { codigo: 903, status: 507 }, message: expect.stringContaining('SQLITE_FULL') });
  const kept = results.flatMap((r, i) => (r.status === 'fulfilled' ? [['a', 'b', 'c'][i]] : []));
  expect(rows().map((r) => (r as { k: string }).k)).toEqual(['seed', ...kept]);
  expect(db.inTransaction).toBe(false);
  db.pragma('max_page_count = 1000000');
  expect(await grouped(db, () => big('d'))).toBe(1);
});
