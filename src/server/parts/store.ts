import { join } from 'node:path';
import type { TempFiles } from '../../core/media/media.js';
import type { AcceptedMedia } from '../../core/ports/media.js';
import type { Signals } from '../../core/ports/signals.js';
import type { Store } from '../../core/ports/store.js';
import { LocalSignals } from '../../core/nodes/signals-local.js';
import { DB_FILE } from '../../paths.js';
import { LocalMedia } from '../../store/sqlite/media.js';
import { openSqliteStore } from '../../store/sqlite/store.js';
import type { ServeConfig } from '../config.js';
import type { Part } from './part.js';

export interface OpenedStore {
  store: Store;
  media: AcceptedMedia;
  /** The SQLite file, or the PostgreSQL URL without its password. */
  source: string;
  schemaVersion: number;
  /** Notices to every node on this store (core/ports/signals.ts): in-process on SQLite, LISTEN/NOTIFY on PostgreSQL. */
  signals: Signals;
}

/**
 * The store `--store` names: the data directory's SQLite file (the default),
 * served by this process alone, or a PostgreSQL database (`postgres://...`)
 * that any number of nodes serve together; and where accepted media is kept
 * with it: in `tmp` beside SQLite, in the database on PostgreSQL (any node
 * may send a queued message); and the signals between the nodes on it.
 */
export function storePart(
  opts: ServeConfig,
  tmp: TempFiles,
  onCheckpointError: (message: string) => void,
  onSignalsError: (err: unknown) => void = () => {},
): Part<OpenedStore> {
  return {
    name: 'store',
    start: async () => {
      if (opts.store && /^postgres(ql)?:\/\//.test(opts.store)) {
        const { openPgStore } = await import('../../store/postgres/store.js');
        const { PgMedia } = await import('../../store/postgres/media.js');
        const { PgSignals } = await import('../../store/postgres/signals.js');
        const pg = await openPgStore(opts.store);
        let signals: InstanceType<typeof PgSignals> | undefined;
        try {
          // Channels of the store's own schema: stores in other schemas of one database (tests, two deployments) never hear them.
          const s = (signals = new PgSignals(opts.store, { pool: pg.db.pool, schema: await pg.schemaName(), onError: onSignalsError }));
          // A failed first connect is retried in the background: until it listens, other nodes' notices are bounded by the TTL.
          await s.start();
          const value = { store: pg, media: new PgMedia(pg.db, tmp), source: pg.name, schemaVersion: await pg.schemaVersion(), signals: s };
          return { value, base: true, stop: () => s.close().finally(() => pg.close()) };
        } catch (err) {
          await signals?.close();
          await pg.close();
          throw err;
        }
      }
      const file = join(opts.dataDir, DB_FILE);
      const sqlite = openSqliteStore(file, { background: { checkpointMs: opts.checkpointMs, onError: onCheckpointError } });
      const value = { store: sqlite, media: new LocalMedia(tmp), source: file, schemaVersion: sqlite.schemaVersion(), signals: new LocalSignals() };
      return { value, base: true, stop: () => sqlite.close() };
    },
  };
}
