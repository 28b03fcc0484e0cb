import type Database from 'better-sqlite3';
import type { GrupoPatch, GrupoRow, GruposStore, GrupoWrite, NewGrupo } from '../../core/ports/grupos.js';
import { immediate, stmt } from './statements.js';

/** Pools of lines and their recipient-to-line maps, in SQLite. */
type DB = Database.Database;
type GrupoBase = Omit<GrupoRow, 'celulares'>;

function withMembers(db: DB, g: GrupoBase | undefined): GrupoRow | null {
  if (!g) return null;
  const ids = stmt(db, 'SELECT celular_id FROM grupo_celulares WHERE grupo_id = ? ORDER BY celular_id').all(g.id) as Array<{ celular_id: number }>;
  return { ...g, celulares: ids.map((r) => r.celular_id) };
}

const byId = (db: DB, id: number) => withMembers(db, stmt(db, 'SELECT * FROM grupos WHERE id = ?').get(id) as GrupoBase | undefined);

function setMembers(db: DB, id: number, celulares: number[]): void {
  const keep = new Set(celulares);
  const old = stmt(db, 'SELECT celular_id FROM grupo_celulares WHERE grupo_id = ?').all(id) as Array<{ celular_id: number }>;
  for (const { celular_id } of old) {
    if (keep.has(celular_id)) continue;
    stmt(db, 'DELETE FROM grupo_celulares WHERE grupo_id = ? AND celular_id = ?').run(id, celular_id);
    stmt(db, 'DELETE FROM grupo_fijos WHERE celular_id = ? AND grupo_id = ?').run(celular_id, id);
  }
  for (const c of keep) stmt(db, 'INSERT OR IGNORE INTO grupo_celulares (grupo_id, celular_id) VALUES (?, ?)').run(id, c);
}

/** The GruposStore port over one connection. */
export function grupos(db: DB): GruposStore {
  return {
    async listGrupos(clienteId: number): Promise<GrupoRow[]> {
      const rows = stmt(db, 'SELECT * FROM grupos WHERE cliente_id = ? ORDER BY nombre').all(clienteId) as GrupoBase[];
      return rows.map((g) => withMembers(db, g)!);
    },
    async getGrupo(id: number): Promise<GrupoRow | null> {
      return byId(db, id);
    },
    async grupoByNombre(clienteId: number, nombre: string): Promise<GrupoRow | null> {
      return withMembers(db, stmt(db, 'SELECT * FROM grupos WHERE cliente_id = ? AND nombre = ?').get(clienteId, nombre) as GrupoBase | undefined);
    },
    async createGrupo(input: NewGrupo, now: number): Promise<GrupoWrite> {
      return immediate(db, (): GrupoWrite => {
        if (stmt(db, 'SELECT 1 FROM grupos WHERE cliente_id = ? AND nombre = ?').get(input.cliente_id, input.nombre)) return { ok: false, reason: 'nombre' };
        const info = stmt(db, 'INSERT INTO grupos (cliente_id, nombre, conmutacion_s, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(
          input.cliente_id,
          input.nombre,
          input.conmutacion_s,
          now,
          now,
        );
        const id = Number(info.lastInsertRowid);
        setMembers(db, id, input.celulares);
        return { ok: true, grupo: byId(db, id)! };
      });
    },
    async updateGrupo(id: number, patch: GrupoPatch, now: number): Promise<GrupoWrite> {
      return immediate(db, (): GrupoWrite => {
        const g = stmt(db, 'SELECT * FROM grupos WHERE id = ?').get(id) as GrupoBase | undefined;
        if (!g) return { ok: false, reason: 'no_existe' };
        if (patch.nombre !== undefined && patch.nombre !== g.nombre) {
          if (stmt(db, 'SELECT 1 FROM grupos WHERE cliente_id = ? AND nombre = ?').get(g.cliente_id, patch.nombre)) return { ok: false, reason: 'nombre' };
        }
        stmt(db, 'UPDATE grupos SET nombre = ?, conmutacion_s = ?, updated_at = ? WHERE id = ?').run(
          patch.nombre ?? g.nombre,
          patch.conmutacion_s === undefined ? g.conmutacion_s : patch.conmutacion_s,
          now,
          id,
        );
        if (patch.celulares) setMembers(db, id, patch.celulares);
        return { ok: true, grupo: byId(db, id)! };
      });
    },
    async deleteGrupo(id: number): Promise<boolean> {
      return immediate(db, () => stmt(db, 'DELETE FROM grupos WHERE id = ?').run(id).changes > 0);
    },
    async grupoFijo(grupoId: number, destinatario: string): Promise<number | null> {
      const r = stmt(db, 'SELECT celular_id FROM grupo_fijos WHERE grupo_id = ? AND destinatario = ?').get(grupoId, destinatario) as
        | { celular_id: number }
        | undefined;
      return r?.celular_id ?? null;
    },
    async fijarGrupo(grupoId: number, destinatario: string, celularId: number, now: number): Promise<void> {
      immediate(db, () =>
        stmt(
          db,
          `INSERT INTO grupo_fijos (grupo_id, destinatario, celular_id, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (grupo_id, destinatario) DO UPDATE SET celular_id = excluded.celular_id, updated_at = excluded.updated_at`,
        ).run(grupoId, destinatario, celularId, now),
      );
    },
  };
}
