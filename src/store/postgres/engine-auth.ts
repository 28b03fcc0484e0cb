import type { EngineAuthStore } from '../../core/ports/engine-auth.js';
import { HoldLost } from '../../core/ports/engine-holds.js';
import { AUTH_INSTANCIAS, lastOfEach } from '../engine-auth-sql.js';
import type { Db } from './db.js';

/**
 * The engine's sealed state in PostgreSQL (table motor_auth, migration 24).
 * A write is one statement (its removals in a WITH), so it is one
 * transaction without a round trip to open one; its rows are taken in key
 * order, so two writes of one line never wait on each other in a cycle.
 */
export function engineAuth(db: Db): EngineAuthStore {
  return {
    async readAuth(instancia: string, kind: string, ids: string[]): Promise<Map<string, Buffer>> {
      if (ids.length === 0) return new Map();
      const rows = await db.q<{ id: string; valor: Buffer }>('SELECT id, valor FROM motor_auth WHERE instancia = $1 AND kind = $2 AND id = ANY($3::text[])', [
        instancia,
        kind,
        ids,
      ]);
      return new Map(rows.map((r) => [r.id, r.valor]));
    },

    async readAuthKind(instancia: string, kind: string): Promise<Map<string, Buffer>> {
      const rows = await db.q<{ id: string; valor: Buffer }>('SELECT id, valor FROM motor_auth WHERE instancia = $1 AND kind = $2', [instancia, kind]);
      return new Map(rows.map((r) => [r.id, r.valor]));
    },

    async writeAuth(instancia, rows, fence): Promise<void> {
      const all = lastOfEach(rows).sort((a, b) => (a.kind === b.kind ? cmp(a.id, b.id) : cmp(a.kind, b.kind)));
      if (all.length === 0) return;
      const put = all.filter((r) => r.value !== null);
      const del = all.filter((r) => r.value === null);
      const params = [instancia, put.map((r) => r.kind), put.map((r) => r.id), put.map((r) => r.value), del.map((r) => r.kind), del.map((r) => r.id)];
      if (!fence) {
        await db.q(`WITH d AS (${DELETE_ROWS}) ${INSERT_ROWS}`, params);
        return;
      }
      // The hold's row is share-locked for the statement: a take waits for this write, or this write sees the take.
      const r = await db.q<{ held: boolean }>(
        `WITH f AS (SELECT 1 FROM motor_sesiones WHERE instancia = $1 AND nodo = $7 AND token = $8 FOR SHARE),
         d AS (${DELETE_ROWS} AND EXISTS (SELECT 1 FROM f)),
         i AS (${INSERT_ROWS.replace('FROM unnest($2::text[], $3::text[], $4::bytea[])', 'FROM unnest($2::text[], $3::text[], $4::bytea[]) WHERE EXISTS (SELECT 1 FROM f)')})
         SELECT EXISTS (SELECT 1 FROM f) AS held`,
        [...params, fence.nodo, fence.token],
      );
      if (!r[0]?.held) throw new HoldLost(instancia);
    },

    async clearAuth(instancia: string): Promise<void> {
      await db.q('DELETE FROM motor_auth WHERE instancia = $1', [instancia]);
    },

    async authInstancias(): Promise<string[]> {
      return (await db.q<{ instancia: string }>(AUTH_INSTANCIAS)).map((r) => r.instancia);
    },
  };
}

const DELETE_ROWS = 'DELETE FROM motor_auth WHERE instancia = $1 AND (kind, id) IN (SELECT * FROM unnest($5::text[], $6::text[]))';
const INSERT_ROWS = `INSERT INTO motor_auth (instancia, kind, id, valor) SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bytea[])
  ON CONFLICT (instancia, kind, id) DO UPDATE SET valor = excluded.valor`;

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
