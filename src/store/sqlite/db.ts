import Database from 'better-sqlite3';
import { chmodSync, existsSync } from 'node:fs';
import { MIGRATIONS } from './migrations.js';

/**
 * Each connection's page cache, KiB: SQLite's default (2 MB) holds little more than the interior pages of
 * the history's indexes, so an accept read its random-key leaves (a recipient, a hash) from the OS, 10% of
 * its CPU (D-185). A ceiling, not an allocation: a small store uses what it has.
 */
export const PAGE_CACHE_KIB = 32_768;

/**
 * Opens the SQLite file (made 0600 when new) in WAL mode with the pragmas
 * every connection of pasarela uses. `:memory:` is a store of its own.
 */
export function openDb(file: string): Database.Database {
  const fresh = file !== ':memory:' && !existsSync(file);
  const db = new Database(file);
  if (fresh) chmodSync(file, 0o600);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  return db;
}

/** Applies every migration not yet recorded; returns the versions applied now. */
export function migrate(db: Database.Database): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const done = new Set((db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version));
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    })();
    applied.push(m.version);
  }
  return applied;
}

export function schemaVersion(db: Database.Database): number {
  const r = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return r.v ?? 0;
}
