import type Database from 'better-sqlite3';
import { AppError } from '../core/api/errors.js';
import type { StoreWriteHealth } from '../core/ports/store.js';

/**
 * A store that cannot take writes (a full disk, an I/O error, a file or a
 * server made read-only under it, a database server out of reach) is not a
 * bug of the request that met it: it is answered 507 with a reason naming the
 * store, and remembered until a probe write of some size succeeds (a small
 * write can still fit in a page that has room while new pages cannot be had),
 * so `/health` can say so (see docs/decisions.md
 * D-34). One table for every adapter: SQLite's result codes and
 * PostgreSQL's SQLSTATEs (and the socket errors of a server out of reach)
 * never share a prefix.
 */
const REASONS: Array<[prefix: string, reason: string]> = [
  ['SQLITE_FULL', 'the disk is full'],
  ['SQLITE_IOERR', 'an I/O error'],
  ['SQLITE_READONLY', 'it has become read-only'],
  ['SQLITE_CANTOPEN', 'a file of it cannot be opened'],
  // PostgreSQL: disk_full first, then the rest of class 53 (insufficient resources).
  ['53100', 'the disk is full'],
  ['53', 'the server is out of resources'],
  ['25006', 'it has become read-only'],
  ['58030', 'an I/O error'],
  ['57P', 'the server is shutting down or starting'],
  ['08', 'the connection to it failed'],
  ['ECONNREFUSED', 'it cannot be reached'],
  ['ECONNRESET', 'it cannot be reached'],
  ['ETIMEDOUT', 'it cannot be reached'],
  ['EHOSTUNREACH', 'it cannot be reached'],
];

interface WriteFault {
  reason: string;
  code: string;
  at: number;
}

/** Faults by store handle: a SQLite database, or a PostgreSQL store's pool. */
const faults = new WeakMap<object, WriteFault>();

/**
 * Turns an error of the store named `name` into STORE_UNAVAILABLE when the
 * store itself failed, remembering it under `key`; any other error is
 * returned as is.
 */
export function storeFault(key: object, name: string, err: unknown): unknown {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err;
  const hit = REASONS.find(([prefix]) => code.startsWith(prefix));
  if (!hit) return err;
  faults.set(key, { reason: hit[1], code, at: Date.now() });
  return new AppError('STORE_UNAVAILABLE', `the store ${name} cannot be written: ${hit[1]} (${code}); retry once the operator has fixed it`);
}

/** SQLite: the database names itself by its file. */
export function writeFailed(db: Database.Database, err: unknown): unknown {
  return storeFault(db, db.name, err);
}

/** The probe of a store that met a write fault: room for this much means it takes writes again. */
export const PROBE_BYTES = 64 * 1024;

/**
 * Whether the store under `key` takes writes: free while no write has failed;
 * after a fault, `probe` writes (and removes) PROBE_BYTES, and its commit
 * clears the fault.
 */
export async function writeHealthOf(key: object, name: string, probe: () => unknown): Promise<StoreWriteHealth> {
  if (!faults.has(key)) return { writable: true };
  try {
    await probe();
    faults.delete(key);
  } catch {
    // Still failing: the fault stays as first recorded.
  }
  const f = faults.get(key);
  return f ? { writable: false, reason: `the store ${name} cannot be written: ${f.reason} (${f.code})`, since: f.at } : { writable: true };
}
