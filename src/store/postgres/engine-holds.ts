import type { EngineHold, EngineHoldsStore } from '../../core/ports/engine-holds.js';
import { AUTH_INSTANCIAS } from '../engine-auth-sql.js';
import type { Db } from './db.js';
import { DB_NOW } from './leases.js';

/**
 * Engine sessions in PostgreSQL (table motor_sesiones, migration 25; the
 * rule is core/engine/engine-holds.ts). A holder counts while it beats within its
 * own margin, on the database's clock. A take locks the rows it can have
 * with SKIP LOCKED, so two nodes asking at once never wait on each other
 * and never both get a line.
 */
const PRESENT = `EXISTS (SELECT 1 FROM nodos d WHERE d.id = s.nodo AND d.heartbeat_at + d.margen_ms > ${DB_NOW})`;
const COLUMNS = `s.instancia, s.nodo, s.token, s.nodo IS NOT NULL AND ${PRESENT} AS presente, GREATEST(0, ${DB_NOW} - s.desde) AS held_ms,
  (SELECT d.motor_url FROM nodos d WHERE d.id = s.nodo) AS url`;

export function engineHolds(db: Db): EngineHoldsStore {
  return {
    async holdSeed(): Promise<void> {
      await db.q(`INSERT INTO motor_sesiones (instancia) SELECT instancia FROM (${AUTH_INSTANCIAS}) a ON CONFLICT (instancia) DO NOTHING`);
    },
    async holdsAll(): Promise<EngineHold[]> {
      return db.q<EngineHold>(`SELECT ${COLUMNS} FROM motor_sesiones s ORDER BY s.instancia`);
    },
    async holdOf(instancia: string): Promise<EngineHold | null> {
      return db.one<EngineHold>(`SELECT ${COLUMNS} FROM motor_sesiones s WHERE s.instancia = $1`, [instancia]);
    },
    async holdTake(nodeId: string, instancias: string[], _now: number, opts: { create?: boolean } = {}) {
      if (instancias.length === 0) return [];
      // New rows go in in name order: two takers inserting the same new lines in their own (shuffled) orders deadlocked.
      const made =
        opts.create === false
          ? []
          : await db.q<{ instancia: string; token: number }>(
              `INSERT INTO motor_sesiones (instancia, nodo, token, desde) SELECT i, $1, 1, ${DB_NOW} FROM unnest($2::text[]) AS i ORDER BY i
         ON CONFLICT (instancia) DO NOTHING RETURNING instancia, token`,
              [nodeId, instancias],
            );
      const taken = await db.q<{ instancia: string; token: number; from: string | null }>(
        `WITH c AS (
           SELECT s.instancia, s.nodo FROM motor_sesiones s
           WHERE s.instancia = ANY($2::text[]) AND (s.nodo IS NULL OR s.nodo = $1 OR NOT ${PRESENT})
           FOR UPDATE OF s SKIP LOCKED
         )
         UPDATE motor_sesiones m SET nodo = $1,
           token = CASE WHEN c.nodo IS NOT DISTINCT FROM $1 THEN m.token ELSE m.token + 1 END,
           desde = CASE WHEN c.nodo IS NOT DISTINCT FROM $1 THEN m.desde ELSE ${DB_NOW} END
         FROM c WHERE m.instancia = c.instancia AND NOT (m.instancia = ANY($3::text[]))
         RETURNING m.instancia, m.token, c.nodo AS from`,
        [nodeId, instancias, made.map((r) => r.instancia)],
      );
      return [...made.map((r) => ({ ...r, from: null })), ...taken];
    },
    async holdGive(nodeId: string, instancias: string[]): Promise<void> {
      if (instancias.length === 0) return;
      await db.q('UPDATE motor_sesiones SET nodo = NULL WHERE nodo = $1 AND instancia = ANY($2::text[])', [nodeId, instancias]);
    },
    async holdForget(instancia: string): Promise<void> {
      await db.q('DELETE FROM motor_sesiones WHERE instancia = $1', [instancia]);
    },
  };
}
