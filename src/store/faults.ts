import type Database from 'better-sqlite3';
import { AppError } from '../core/errors.js';

/**
 * A store that cannot take writes (a full disk, an I/O error, a file made
 * read-only under it) is not a bug of the request that met it: it is answered
 * 507 with a reason naming the store, and remembered until a probe write of
 * some size succeeds (a small write can still fit in a page that has room
 * while new pages cannot be had), so `/health` can say so (see
 * docs/decisions.md, "A store that cannot be written").
 */
const REASONS: Array<[prefix: string, reason: string]> = [
  ['SQLITE_FULL', 'the disk is full'],
  ['SQLITE_IOERR', 'an I/O error'],
  ['SQLITE_READONLY', 'it has become read-only'],
  ['SQLITE_CANTOPEN', 'a file of it cannot be opened'],
];

export interface WriteFault {
  reason: string;
  code: string;
  at: number;
}

const faults = new WeakMap<Database.Database, WriteFault>();

/** Turns a write's error into STORE_UNAVAILABLE when the store itself failed, remembering it; any other error is returned as is. */
export function writeFailed(db: Database.Database, err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err;
  const hit = REASONS.find(([prefix]) => code.startsWith(prefix));
  if (!hit) return err;
  faults.set(db, { reason: hit[1], code, at: Date.now() });
  return new AppError('STORE_UNAVAILABLE', `the store ${db.name} cannot be written: ${hit[1]} (${code}); retry once the operator has fixed it`);
}

/** A probe write committed: the store takes writes again. */
export function clearWriteFault(db: Database.Database): void {
  faults.delete(db);
}

export function writeFaultOf(db: Database.Database): WriteFault | null {
  return faults.get(db) ?? null;
}
