import { locateSqlite, queuedMedia, runningServe, SourceError, takeSnapshot, type QueuedMedia } from './snapshot.js';
import { Db, LOCK, type Queryable } from '../postgres/db.js';
import { checkCopy, type LedgerGap, type Sums, type TableCount } from './import-check.js';
import {
  advanceSequences,
  AlteredValue,
  COPIED,
  DERIVED,
  emptyAll,
  importQueuedMedia,
  loadAll,
  occupied,
  recount,
  STATE_PATHS,
  unknownTables,
  type Recount,
} from './import.js';
import { migrate, PG_MIGRATIONS } from '../postgres/migrations.js';
import { nodes } from '../postgres/leases.js';
import { nonIntegerValues } from './integers.js';
import { SQLITE_ACCESS_PATHS } from '../sqlite/state-paths.js';

/**
 * `pasarela migrate --from sqlite:PATH --to postgres://...`: an SQLite
 * installation's data moved into an empty PostgreSQL store in one
 * transaction, checked before it commits. The source is only read (through a
 * snapshot). A target some node is serving (a live heartbeat) is refused,
 * and the copy holds the migrations lock, so a `serve` starting meanwhile
 * waits for the commit instead of starting on a half-filled store.
 */

export interface MoveOptions {
  /** A data directory or its pasarela.db. */
  from: string;
  /** A postgres:// URL. */
  to: string;
  /** Empty the target's pasarela tables first (in the same transaction) instead of refusing a store that has rows. */
  replace: boolean;
  /** One line per step, for a person watching. */
  progress?: (line: string) => void;
}

export interface MoveReport {
  ok: true;
  from: string;
  /** The source's data directory: give it to `serve` on the new store too (secrets, queued media files). */
  data_dir: string;
  to: string;
  snapshot_at: string;
  sqlite_schema: { source: number; copied: number };
  postgres_schema: number;
  replaced: boolean;
  tables: TableCount[];
  recounted: Recount;
  sums: Sums;
  balances_checked: number;
  /** Balances that already differed from their ledger in SQLite (copied as they were). */
  ledger_gaps_in_source: LedgerGap[];
  /** Pending messages with media in local files; `copied`: queued ones whose bytes are now in the database, `missing`: queued ones whose file was not found. */
  queued_media: QueuedMedia & { copied: number; missing: number };
  /** The `serve` that held the data directory while the snapshot was taken, if one did. */
  serve_running: string | null;
  seconds: number;
}

export type Refusal = 'source' | 'target' | 'connect' | 'mismatch';

/** Why nothing was moved, in words for the operator; `detail` is the check that failed, if one did. */
export class MoveRefused extends Error {
  constructor(
    message: string,
    readonly kind: Refusal,
    readonly detail?: unknown,
  ) {
    super(message);
  }
}

export async function moveToPostgres(o: MoveOptions): Promise<MoveReport> {
  const started = performance.now();
  const say = o.progress ?? (() => {});
  let source;
  try {
    source = locateSqlite(o.from);
  } catch (err) {
    throw err instanceof SourceError ? new MoveRefused(err.message, 'source') : err;
  }
  const db = new Db(o.to, { max: 3 });
  try {
    try {
      await db.pool.query('SELECT 1');
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new MoveRefused(`cannot connect to PostgreSQL at ${db.name}: ${e.message || e.code || String(err)}`, 'connect');
    }
    await migrate(db);
    const pgVersion = (await db.one<{ v: number }>('SELECT MAX(version) AS v FROM schema_migrations'))!.v;
    const latest = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;
    if (pgVersion !== latest) throw new MoveRefused(`${db.name} is at schema version ${pgVersion}, newer than this pasarela knows (${latest})`, 'target');
    await refuseServed(db, db.name);
    if (!o.replace) await refuseOccupied(db, () => occupied(db));
    const serving = runningServe(source.dataDir);
    const snap = await snapshotOf(source);
    say(`snapshot of ${source.file} taken (schema ${snap.sourceVersion})`);
    try {
      // SQLite's side tables of a message's changing state are paths PostgreSQL keeps in its own indexes.
      const unknown = unknownTables(snap.db).filter((t) => !(SQLITE_ACCESS_PATHS as readonly string[]).includes(t));
      if (unknown.length > 0)
        throw new MoveRefused(
          `${source.file} has tables this pasarela does not know (${unknown.join(', ')}): migrate with the pasarela that wrote it`,
          'source',
        );
      const notIntegers = nonIntegerValues(snap.db, COPIED);
      if (notIntegers.length > 0)
        throw new MoveRefused(
          `${source.file} holds values that are not integers where PostgreSQL needs one: ${notIntegers.join('; ')}. Write each again with the pasarela that serves it (pasarela admin client edit ID --max-celulares N for a cap), then migrate`,
          'source',
        );
      const { recounted, check, media } = await db.tx(async (c) => {
        // A serve starting meanwhile waits at its migrations (the same lock) until the copy commits or is rolled back.
        await c.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [LOCK.migrations]);
        await refuseServed(c, db.name);
        if (o.replace) await emptyAll(c);
        else await refuseOccupied(db, () => occupied(c));
        await loadAll(c, snap.db, (table, rows, ms) => say(`${table}: ${rows} rows (${(ms / 1000).toFixed(1)} s)`)).catch((err: unknown) => {
          if (err instanceof AlteredValue) throw new MoveRefused(`a value would change in the copy, nothing was committed: ${err.message}`, 'mismatch');
          throw err;
        });
        const now = Date.now();
        // The counts and the side tables first: the queued media is found through the pending messages' table.
        const recounted = await recount(c, now);
        const media = await importQueuedMedia(c, now);
        await advanceSequences(c, snap.db);
        const check = await checkCopy(c, snap.db);
        if (check.mismatches.length > 0) {
          throw new MoveRefused(`the copy does not match the source, nothing was committed:\n  ${check.mismatches.join('\n  ')}`, 'mismatch', check);
        }
        return { recounted, check, media };
      });
      // Planner statistics now rather than whenever autovacuum comes by: the first history pages are read at once.
      // Only that: the copy is committed, so a failure here must not make it look failed.
      await db.query(`ANALYZE ${[...COPIED, ...DERIVED, ...STATE_PATHS].join(', ')}`).catch(() => undefined);
      return {
        ok: true,
        from: source.file,
        data_dir: source.dataDir,
        to: db.name,
        snapshot_at: new Date(snap.takenAt).toISOString(),
        sqlite_schema: { source: snap.sourceVersion, copied: snap.version },
        postgres_schema: pgVersion,
        replaced: o.replace,
        tables: check.tables,
        recounted,
        sums: check.sums.postgres,
        balances_checked: check.balances,
        ledger_gaps_in_source: check.gapsInSource,
        queued_media: { ...queuedMedia(snap.db), ...media },
        serve_running: serving,
        seconds: Math.round((performance.now() - started) / 100) / 10,
      };
    } finally {
      snap.discard();
    }
  } finally {
    await db.close();
  }
}

async function snapshotOf(source: Parameters<typeof takeSnapshot>[0]) {
  try {
    return await takeSnapshot(source);
  } catch (err) {
    throw err instanceof SourceError ? new MoveRefused(err.message, 'source') : err;
  }
}

/** Never two installations in one store: a target with pasarela rows is refused unless --replace says to empty it. */
async function refuseOccupied(db: Db, tables: () => Promise<string[]>): Promise<void> {
  const full = await tables();
  if (full.length === 0) return;
  throw new MoveRefused(
    `${db.name} already holds pasarela data (rows in ${full.join(', ')}): migrate copies into an empty store only; ` +
      'give it a new database (or schema), or pass --replace to delete what is there in the same transaction',
    'target',
  );
}

/** A store some node is serving (a live heartbeat) is never copied over. */
async function refuseServed(q: Queryable, name: string): Promise<void> {
  const live = (await nodes(q)).filter((n) => n.alive);
  if (live.length > 0) throw new MoveRefused(`${name} is in use by ${live.map((n) => n.label).join(', ')}: stop it first`, 'target');
}
