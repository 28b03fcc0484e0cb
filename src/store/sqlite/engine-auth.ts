import type Database from 'better-sqlite3';
import type { EngineAuthStore } from '../../core/ports/engine-auth.js';
import { AUTH_INSTANCIAS, lastOfEach } from '../engine-auth-sql.js';
import { grouped, stmt } from './statements.js';

/** The engine's sealed state in SQLite (table motor_auth, migration 28). */
export function engineAuth(db: Database.Database): EngineAuthStore {
  return {
    async readAuth(instancia: string, kind: string, ids: string[]): Promise<Map<string, Buffer>> {
      if (ids.length === 0) return new Map();
      // One statement for any number of ids: the list as one JSON parameter, each id a probe of the primary key.
      const rows = stmt(db, 'SELECT id, valor FROM motor_auth WHERE instancia = ? AND kind = ? AND id IN (SELECT value FROM json_each(?))').all(
        instancia,
        kind,
        JSON.stringify(ids),
      ) as Array<{ id: string; valor: Buffer }>;
      return new Map(rows.map((r) => [r.id, r.valor]));
    },

    async readAuthKind(instancia: string, kind: string): Promise<Map<string, Buffer>> {
      const rows = stmt(db, 'SELECT id, valor FROM motor_auth WHERE instancia = ? AND kind = ?').all(instancia, kind) as Array<{ id: string; valor: Buffer }>;
      return new Map(rows.map((r) => [r.id, r.valor]));
    },

    // Grouped: Baileys writes keys on every message; a burst of lines shares one commit, each call still all or nothing.
    writeAuth: (instancia, rows) =>
      grouped(db, () => {
        const put = stmt(
          db,
          'INSERT INTO motor_auth (instancia, kind, id, valor) VALUES (?, ?, ?, ?) ON CONFLICT (instancia, kind, id) DO UPDATE SET valor = excluded.valor',
        );
        const del = stmt(db, 'DELETE FROM motor_auth WHERE instancia = ? AND kind = ? AND id = ?');
        for (const r of lastOfEach(rows)) {
          if (r.value) put.run(instancia, r.kind, r.id, r.value);
          else del.run(instancia, r.kind, r.id);
        }
      }),

    clearAuth: (instancia) =>
      grouped(db, () => {
        stmt(db, 'DELETE FROM motor_auth WHERE instancia = ?').run(instancia);
      }),

    async authInstancias(): Promise<string[]> {
      return (stmt(db, AUTH_INSTANCIAS).all() as Array<{ instancia: string }>).map((r) => r.instancia);
    },
  };
}
