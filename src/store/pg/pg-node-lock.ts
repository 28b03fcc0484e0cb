import { hostname } from 'node:os';
import type pg from 'pg';
import { DataDirInUse } from '../dir-lock.js';
import type { Db } from './pg-db.js';

/**
 * One `serve` per PostgreSQL store, until several nodes can share one: each
 * line's human pacing, the health checks and the webhook streams are still
 * paced in the serving process's memory, and at start a node releases every
 * queue claim and resolves every pending direct send as its own. A session
 * advisory lock held on a connection of its own says "served": PostgreSQL
 * drops it when the connection ends, however the process ends (kill -9
 * included), so there is never a stale lock. The holder is named by its
 * connection's application_name.
 */
const NODE_LOCK = 0x7061_0010;

export class PgNodeLock {
  private constructor(private readonly client: pg.PoolClient) {}

  /** `role` names the holder to whoever is refused: `serve`, or `migrate` while it loads the store. */
  static async acquire(db: Db, role = 'serve'): Promise<PgNodeLock> {
    const client = await db.pool.connect();
    try {
      const me = `pasarela ${role} pid ${process.pid} on ${hostname()}, since ${new Date().toISOString()}`;
      await client.query('SELECT set_config($1, $2, false)', ['application_name', me.slice(0, 63)]);
      const got = await client.query('SELECT pg_try_advisory_lock($1, hashtext(current_schema())) AS ok', [NODE_LOCK]);
      if (got.rows[0]?.ok !== true) {
        const holder = await client.query(
          `SELECT a.application_name AS who FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.objid::bigint = (hashtext(current_schema())::bigint & 4294967295) AND l.granted LIMIT 1`,
          [NODE_LOCK],
        );
        const who = String(holder.rows[0]?.who ?? 'holder unknown');
        throw new DataDirInUse(`the PostgreSQL store ${db.name} is already served by another pasarela serve (${who}); one node per store until several nodes are supported`, who);
      }
      return new PgNodeLock(client);
    } catch (err) {
      client.release(true);
      throw err;
    }
  }

  async release(): Promise<void> {
    // Ending the connection drops the lock with it.
    this.client.release(true);
  }
}
