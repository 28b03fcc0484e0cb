import { join } from 'node:path';
import type { TempFiles } from '../../core/media.js';
import type { AcceptedMedia } from '../../core/ports/media.js';
import type { Store } from '../../core/ports/store.js';
import { DB_FILE } from '../../paths.js';
import { LocalMedia } from '../../store/local-media.js';
import { openSqliteStore } from '../../store/sqlite/store.js';
import type { ServeConfig } from '../config.js';
import type { Part } from './part.js';

export interface OpenedStore {
  store: Store;
  media: AcceptedMedia;
  /** The SQLite file, or the PostgreSQL URL without its password. */
  source: string;
  schemaVersion: number;
}

/**
 * The store `--store` names: the data directory's SQLite file (the default),
 * served by this process alone, or a PostgreSQL database (`postgres://...`)
 * that any number of nodes serve together; and where accepted media is kept
 * with it: in `tmp` beside SQLite, in the database on PostgreSQL (any node
 * may send a queued message).
 */
export function storePart(opts: ServeConfig, tmp: TempFiles, onCheckpointError: (message: string) => void): Part<OpenedStore> {
  return {
    name: 'store',
    start: async () => {
      if (opts.store && /^postgres(ql)?:\/\//.test(opts.store)) {
        const { openPgStore } = await import('../../store/postgres/store.js');
        const { PgMedia } = await import('../../store/postgres/media.js');
        const pg = await openPgStore(opts.store);
        try {
          const value = { store: pg, media: new PgMedia(pg.db, tmp), source: pg.name, schemaVersion: await pg.schemaVersion() };
          return { value, base: true, stop: () => pg.close() };
        } catch (err) {
          await pg.close();
          throw err;
        }
      }
      const file = join(opts.dataDir, DB_FILE);
      const sqlite = openSqliteStore(file, { background: { checkpointMs: opts.checkpointMs, onError: onCheckpointError } });
      const value = { store: sqlite, media: new LocalMedia(tmp), source: file, schemaVersion: sqlite.schemaVersion() };
      return { value, base: true, stop: () => sqlite.close() };
    },
  };
}
