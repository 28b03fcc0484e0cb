import type { GrupoPatch, GrupoRow, GruposStore, GrupoWrite, NewGrupo } from '../../core/ports/grupos.js';
import { type Db, type Queryable, row, rows } from './db.js';

/** Pools of lines and their recipient-to-line maps, in PostgreSQL (a pool's writes lock its client's row: names stay unique). */
type GrupoBase = Omit<GrupoRow, 'celulares'>;

async function withMembers(q: Queryable, g: GrupoBase | null): Promise<GrupoRow | null> {
  if (!g) return null;
  const ids = await rows<{ celular_id: number }>(q, 'SELECT celular_id FROM grupo_celulares WHERE grupo_id = $1 ORDER BY celular_id', [g.id]);
  return { ...g, celulares: ids.map((r) => r.celular_id) };
}

const byId = async (q: Queryable, id: number) => withMembers(q, await row<GrupoBase>(q, 'SELECT * FROM grupos WHERE id = $1', [id]));

async function setMembers(q: Queryable, id: number, celulares: number[]): Promise<void> {
  await q.query('DELETE FROM grupo_fijos WHERE grupo_id = $1 AND NOT (celular_id = ANY($2::bigint[]))', [id, celulares]);
  await q.query('DELETE FROM grupo_celulares WHERE grupo_id = $1 AND NOT (celular_id = ANY($2::bigint[]))', [id, celulares]);
  await q.query('INSERT INTO grupo_celulares (grupo_id, celular_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING', [id, celulares]);
}

/** The GruposStore port over one pool. */
export function grupos(db: Db): GruposStore {
  return {
    async listGrupos(clienteId: number): Promise<GrupoRow[]> {
      const gs = await db.q<GrupoBase>('SELECT * FROM grupos WHERE cliente_id = $1 ORDER BY nombre', [clienteId]);
      return Promise.all(gs.map(async (g) => (await withMembers(db, g))!));
    },
    async getGrupo(id: number): Promise<GrupoRow | null> {
      return byId(db, id);
    },
    async grupoByNombre(clienteId: number, nombre: string): Promise<GrupoRow | null> {
      return withMembers(db, await db.one<GrupoBase>('SELECT * FROM grupos WHERE cliente_id = $1 AND nombre = $2', [clienteId, nombre]));
    },
    async createGrupo(input: NewGrupo, now: number): Promise<GrupoWrite> {
      return db.tx(async (c): Promise<GrupoWrite> => {
        const g = await row<{ id: number }>(
          c,
          `INSERT INTO grupos (cliente_id, nombre, conmutacion_s, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
           ON CONFLICT (cliente_id, nombre) DO NOTHING RETURNING id`,
          [input.cliente_id, input.nombre, input.conmutacion_s, now],
        );
        if (!g) return { ok: false, reason: 'nombre' };
        await setMembers(c, g.id, input.celulares);
        return { ok: true, grupo: (await byId(c, g.id))! };
      });
    },
    async updateGrupo(id: number, patch: GrupoPatch, now: number): Promise<GrupoWrite> {
      return db.tx(async (c): Promise<GrupoWrite> => {
        const g = await row<GrupoBase>(c, 'SELECT * FROM grupos WHERE id = $1 FOR UPDATE', [id]);
        if (!g) return { ok: false, reason: 'no_existe' };
        if (patch.nombre !== undefined && patch.nombre !== g.nombre) {
          // Two renames to one name: the client's row makes them take turns, so the second sees the first.
          await c.query('SELECT 1 FROM clientes WHERE id = $1 FOR UPDATE', [g.cliente_id]);
          if (await row(c, 'SELECT 1 FROM grupos WHERE cliente_id = $1 AND nombre = $2', [g.cliente_id, patch.nombre])) return { ok: false, reason: 'nombre' };
        }
        await c.query('UPDATE grupos SET nombre = $2, conmutacion_s = $3, updated_at = $4 WHERE id = $1', [
          id,
          patch.nombre ?? g.nombre,
          patch.conmutacion_s === undefined ? g.conmutacion_s : patch.conmutacion_s,
          now,
        ]);
        if (patch.celulares) await setMembers(c, id, patch.celulares);
        return { ok: true, grupo: (await byId(c, id))! };
      });
    },
    async deleteGrupo(id: number): Promise<boolean> {
      return ((await db.query('DELETE FROM grupos WHERE id = $1', [id])).rowCount ?? 0) > 0;
    },
    async grupoFijo(grupoId: number, destinatario: string): Promise<number | null> {
      return (await db.one<{ celular_id: number }>('SELECT celular_id FROM grupo_fijos WHERE grupo_id = $1 AND destinatario = $2', [grupoId, destinatario]))?.celular_id ?? null;
    },
    async fijarGrupo(grupoId: number, destinatario: string, celularId: number, now: number): Promise<void> {
      await db.query(
        `INSERT INTO grupo_fijos (grupo_id, destinatario, celular_id, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (grupo_id, destinatario) DO UPDATE SET celular_id = excluded.celular_id, updated_at = excluded.updated_at
         WHERE grupo_fijos.celular_id <> excluded.celular_id`,
        [grupoId, destinatario, celularId, now],
      );
    },
  };
}
