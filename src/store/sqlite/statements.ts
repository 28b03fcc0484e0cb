import type Database from 'better-sqlite3';
import { writeFailed } from '../faults.js';
import type { WriteGate } from '../write-gate.js';
import type { Placeholder } from '../recipe-sql.js';

/**
 * Prepared statements, compiled once per database and SQL text. Preparing on
 * every call cost about an eighth of the server's CPU under load.
 */
/** SQLite's placeholder for recipe-sql.ts: positional, bound in text order. */
export const ph: Placeholder = () => '?';

const caches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

export function stmt(db: Database.Database, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
  }
  let s = cache.get(sql);
  if (!s) {
    s = db.prepare(sql);
    cache.set(sql, s);
  }
  return s;
}

/**
 * Runs `fn` in one BEGIN IMMEDIATE transaction (the write lock is taken at
 * once, so two writers never deadlock on an upgrade). Nested calls join the
 * outer transaction. Cheaper than building a better-sqlite3 transaction
 * function on every call.
 */
export function immediate<T>(db: Database.Database, fn: () => T): T {
  if (db.inTransaction) return fn();
  const gate = gates.get(db);
  gate?.enter();
  try {
    stmt(db, 'BEGIN IMMEDIATE').run();
    try {
      const result = fn();
      stmt(db, 'COMMIT').run();
      return result;
    } catch (err) {
      if (db.inTransaction) stmt(db, 'ROLLBACK').run();
      throw writeFailed(db, err);
    }
  } finally {
    gate?.leave();
  }
}

/**
 * Runs the reads of `fn` in one read transaction (a deferred BEGIN). Each
 * read outside a transaction begins and ends one of its own, and that (the
 * WAL's shared-memory locks) costs several times the read itself (D-189):
 * many reads in a row share one here. Nested calls join the outer one.
 */
export function readTogether<T>(db: Database.Database, fn: () => T): T {
  if (db.inTransaction) return fn();
  stmt(db, 'BEGIN').run();
  try {
    return fn();
  } finally {
    if (db.inTransaction) stmt(db, 'COMMIT').run();
  }
}

const gates = new WeakMap<Database.Database, WriteGate>();

/** This connection's transactions take turns with another thread's through `gate` (write-gate.ts). */
export function useWriteGate(db: Database.Database, gate: WriteGate): void {
  gates.set(db, gate);
}

interface Pending {
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

const groups = new WeakMap<Database.Database, Pending[]>();

/**
 * Group commit: writes asked for in the same turn of the event loop share one
 * transaction, and each caller's promise settles only after that COMMIT, so
 * "accepted" still means "on disk" while a burst pays for one commit instead
 * of one each. Each write still sees the ones before it, so the checks inside
 * (balances, caps, queue depth) stay exact. Writes decide their refusals
 * before writing, so they throw only on faults: the batch runs as plain
 * statements, and only when one throws is it rolled back and run again with
 * a SAVEPOINT around each write, so the one that throws is rolled back alone
 * and rejects alone (a write is a closure over the database, so running it
 * again after a rollback is the same write).
 */
export function grouped<T>(db: Database.Database, fn: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let batch = groups.get(db);
    if (!batch) {
      batch = [];
      groups.set(db, batch);
      setImmediate(() => flush(db));
    }
    batch.push({ fn, resolve: resolve as (v: unknown) => void, reject });
  });
}

function flush(db: Database.Database): void {
  const gate = db.open ? gates.get(db) : undefined;
  if (gate && !gate.tryEnter()) {
    if (!gate.blocking) {
      // The other thread is writing: the batch waits without blocking this thread, and writes asked for meanwhile join it.
      void gate.whenFree().then(() => flush(db));
      return;
    }
    gate.enter();
  }
  try {
    commitBatch(db);
  } finally {
    gate?.leave();
  }
}

function commitBatch(db: Database.Database): void {
  const batch = groups.get(db) ?? [];
  groups.delete(db);
  if (!db.open) {
    for (const p of batch) p.reject(new Error('the database is closed'));
    return;
  }
  let results: Outcome[];
  try {
    results = runBatch(db, batch, false) ?? runBatch(db, batch, true)!;
  } catch (error) {
    if (db.inTransaction) stmt(db, 'ROLLBACK').run();
    const failed = writeFailed(db, error);
    for (const p of batch) p.reject(failed);
    return;
  }
  batch.forEach((p, i) => {
    const r = results[i]!;
    if (r.ok) p.resolve(r.value);
    else p.reject(writeFailed(db, r.error));
  });
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * One transaction over the batch, committed. Without savepoints, a write that
 * throws rolls the whole batch back and answers null (run it again with
 * them), unless it is the only write: then it alone fails.
 */
function runBatch(db: Database.Database, batch: Pending[], savepoints: boolean): Outcome[] | null {
  const results: Outcome[] = [];
  stmt(db, 'BEGIN IMMEDIATE').run();
  for (const p of batch) {
    if (!savepoints) {
      try {
        results.push({ ok: true, value: p.fn() });
      } catch (error) {
        // Some faults (a full disk) end the transaction by themselves.
        if (db.inTransaction) stmt(db, 'ROLLBACK').run();
        if (batch.length > 1) return null;
        return [{ ok: false, error }];
      }
      continue;
    }
    stmt(db, 'SAVEPOINT w').run();
    try {
      results.push({ ok: true, value: p.fn() });
      stmt(db, 'RELEASE w').run();
    } catch (error) {
      // A fault that ended the transaction by itself (a full disk) took the writes before it too: all fail with it.
      if (!db.inTransaction) throw error;
      stmt(db, 'ROLLBACK TO w').run();
      stmt(db, 'RELEASE w').run();
      results.push({ ok: false, error });
    }
  }
  stmt(db, 'COMMIT').run();
  return results;
}
