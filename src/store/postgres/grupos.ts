import type { GrupoMove, GrupoPatch, GrupoRow, GruposStore, GrupoWrite, NewGrupo } from '../../core/ports/grupos.js';
import { moveCharge } from '../../core/billing/recipes.js';
import type { MensajeRow } from '../../core/ports/model.js';
import { balanceSet } from '../recipe-sql.js';
import { type Db, ph, type Queryable, row, rows } from './db.js';
import { writeMovement } from './messages.js';

/** Pools of lines, in PostgreSQL (a pool's writes lock its client's row: names stay unique). */
type GrupoBase = Omit<GrupoRow, 'celulares'>;

async function withMembers(q: Queryable, g: GrupoBase | null): Promise<GrupoRow | null> {
  if (!g) return null;
  const ids = await rows<{ celular_id: number }>(q, 'SELECT celular_id FROM grupo_celulares WHERE grupo_id = $1 ORDER BY celular_id', [g.id]);
  return { ...g, celulares: ids.map((r) => r.celular_id) };
}

const byId = async (q: Queryable, id: number) => withMembers(q, await row<GrupoBase>(q, 'SELECT * FROM grupos WHERE id = $1', [id]));

async function setMembers(q: Queryable, id: number, celulares: number[]): Promise<void> {
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
      // One round trip a pool send (D-179): the pool and its members together.
      const g = await db.one<GrupoBase & { miembros: string }>(
        `SELECT g.*, array_to_string(ARRAY(SELECT celular_id FROM grupo_celulares WHERE grupo_id = g.id ORDER BY celular_id), ',') AS miembros
         FROM grupos g WHERE g.cliente_id = $1 AND g.nombre = $2`,
        [clienteId, nombre],
      );
      if (!g) return null;
      const { miembros, ...base } = g;
      return { ...base, celulares: miembros === '' ? [] : miembros.split(',').map(Number) };
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
    async lineaReciente(clienteId: number, destinatario: string): Promise<number | null> {
      const r = await db.one<{ celular_id: number | null }>(
        'SELECT celular_id FROM mensajes WHERE cliente_id = $1 AND destinatario = $2 ORDER BY created_at DESC, seq DESC LIMIT 1',
        [clienteId, destinatario],
      );
      return r?.celular_id ?? null;
    },
    async gruposConConmutacion(): Promise<GrupoRow[]> {
      const gs = await db.q<GrupoBase>('SELECT * FROM grupos WHERE conmutacion_s IS NOT NULL ORDER BY id');
      return Promise.all(gs.map(async (g) => (await withMembers(db, g))!));
    },
    async lineaCaida(celularId: number, caida: boolean, now: number): Promise<number | null> {
      if (!caida) {
        await db.query('DELETE FROM lineas_caidas WHERE celular_id = $1', [celularId]);
        return null;
      }
      await db.query('INSERT INTO lineas_caidas (celular_id, desde) VALUES ($1, $2) ON CONFLICT (celular_id) DO NOTHING', [celularId, now]);
      return (await db.one<{ desde: number }>('SELECT desde FROM lineas_caidas WHERE celular_id = $1', [celularId]))?.desde ?? null;
    },
    async moverCola(grupoId: number, from: number, to: number, limit: number, now: number): Promise<GrupoMove[]> {
      return db.tx(async (c) => {
        // The client, then its lines in id order (docs/store-locks.md): a concurrent move of the same line waits here and finds it moved.
        const owner = await row<{ cliente_id: number }>(c, 'SELECT cliente_id FROM celulares WHERE id = $1', [from]);
        if (!owner) return [];
        await c.query('SELECT 1 FROM clientes WHERE id = $1 FOR UPDATE', [owner.cliente_id]);
        await c.query('SELECT 1 FROM celulares WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [[from, to]]);
        type Row = Pick<MensajeRow, 'msg_id' | 'destinatario' | 'cliente_id' | 'celular_id' | 'cobrado' | 'cargo'> & { seq: number };
        const found = await rows<Row>(
          c,
          `SELECT p.seq, m.msg_id, m.destinatario, m.cliente_id, m.celular_id, m.cobrado, m.cargo FROM mensajes_pendientes p
           JOIN mensajes m ON m.msg_id = p.msg_id
           WHERE p.celular_id = $1 AND p.modo = 'cola' AND m.estado = 'pendiente' AND m.lease_until IS NULL ORDER BY p.seq LIMIT $2`,
          [from, limit],
        );
        const moved: GrupoMove[] = [];
        for (const m of found) {
          const read = await row<{ vieja: number; nueva: number; global: number }>(
            c,
            'SELECT a.saldo_actual AS vieja, b.saldo_actual AS nueva, k.saldo_global AS global FROM celulares a, celulares b, clientes k WHERE a.id = $1 AND b.id = $2 AND k.id = $3',
            [from, to, m.cliente_id],
          );
          const plan = read && moveCharge(m, to, { saldoVieja: read.vieja, saldoNueva: read.nueva, saldoGlobal: read.global });
          if (!plan) break;
          // Claimed meanwhile by a worker (it does not take the line's lock): left where it is.
          const took = await c.query("UPDATE mensajes SET celular_id = $1, cargo = $2 WHERE msg_id = $3 AND estado = 'pendiente' AND lease_until IS NULL", [
            to,
            plan.cargo,
            m.msg_id,
          ]);
          if (!took.rowCount) continue;
          for (const w of plan.writes) {
            await c.query(balanceSet(w.balance, ph), [w.saldo, w.balance.id]);
            await writeMovement(c, w.movement, now);
          }
          await c.query('UPDATE mensajes_pendientes SET celular_id = $1 WHERE seq = $2', [to, m.seq]);
          moved.push({ msg_id: m.msg_id, destinatario: m.destinatario });
        }
        if (moved.length > 0) {
          await c.query('UPDATE celulares SET pendientes = pendientes - $1 WHERE id = $2', [moved.length, from]);
          await c.query('UPDATE celulares SET pendientes = pendientes + $1 WHERE id = $2', [moved.length, to]);
        }
        return moved;
      });
    },
  };
}
