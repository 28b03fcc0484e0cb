import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/**
 * One `serve` per data directory. Two processes on one store would each keep
 * their own duplicate counters, throttle and queue pacing, and each would
 * take the other's direct sends in flight for stranded ones at start-up.
 *
 * The lock is an exclusive SQLite transaction held open on a file of its own:
 * the operating system releases it when the process ends however it ends
 * (kill -9 included), so there is no stale lock to clean up, and a second
 * connection in the same process is refused too. Who holds it is written
 * beside it, for the refusal's message.
 */
export const LOCK_FILE = 'serve.lock';
export const HOLDER_FILE = 'serve.pid';

export class DataDirInUse extends Error {
  readonly code = 'EDATADIRINUSE';
  constructor(
    message: string,
    /** Who holds it, as the refusal names it. */
    readonly holder?: string,
  ) {
    super(message);
  }
}

export class DataDirLock {
  private constructor(
    private readonly db: Database.Database,
    private readonly holderFile: string,
  ) {}

  static acquire(dataDir: string): DataDirLock {
    const db = new Database(join(dataDir, LOCK_FILE), { timeout: 0 });
    try {
      // Nothing is ever written here: no journal file beside it.
      db.pragma('journal_mode = MEMORY');
      db.exec('BEGIN EXCLUSIVE');
    } catch (err) {
      db.close();
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
      throw new DataDirInUse(
        `data directory ${dataDir} is in use by another pasarela serve (${holderOf(dataDir)}); stop it, or give this one another --data-dir`,
      );
    }
    const holderFile = join(dataDir, HOLDER_FILE);
    writeFileSync(holderFile, `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`);
    return new DataDirLock(db, holderFile);
  }

  /** Who holds the lock now, or null when nobody does; takes it for an instant when free, writes nothing. */
  static holder(dataDir: string): string | null {
    const file = join(dataDir, LOCK_FILE);
    if (!existsSync(file)) return null;
    const db = new Database(file, { timeout: 0 });
    try {
      db.exec('BEGIN EXCLUSIVE');
      db.exec('ROLLBACK');
      return null;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
      return holderOf(dataDir);
    } finally {
      db.close();
    }
  }

  release(): void {
    if (!this.db.open) return;
    rmSync(this.holderFile, { force: true });
    this.db.exec('ROLLBACK');
    this.db.close();
  }
}

function holderOf(dataDir: string): string {
  try {
    const h = JSON.parse(readFileSync(join(dataDir, HOLDER_FILE), 'utf8')) as { pid?: number; host?: string; since?: string };
    return `pid ${h.pid ?? '?'} on ${h.host ?? '?'}, since ${h.since ?? '?'}`;
  } catch {
    return 'holder unknown';
  }
}
