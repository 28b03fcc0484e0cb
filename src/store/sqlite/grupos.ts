import type Database from 'better-sqlite3';
import type { GrupoMove, GrupoPatch, GrupoRow, GruposStore, GrupoWrite, NewGrupo } from '../../core/ports/grupos.js';
import { moveCharge } from '../../core/billing/recipes.js';
import type { MensajeRow } from '../../core/ports/model.js';
import { balanceSet } from '../recipe-sql.js';
import { writeMovement } from './messages.js';
import { grouped, immediate, ph, stmt } from './statements.js';
import { lineQueueSql } from './queue.js';

/** Pools of lines, in SQLite. */
type DB = Database.Database;
type GrupoBase = Omit<GrupoRow, 'celulares'>;

function withMembers(db: DB, g: GrupoBase | undefined): GrupoRow | null {
  if (!g) return null;
  const ids = stmt(db, 'SELECT celular_id FROM grupo_celulares WHERE grupo_id = ? ORDER BY celular_id').all(g.id) as Array<{ celular_id: number }>;
  return { ...g, celulares: ids.map((r) => r.celular_id) };
}

/** Members as one statement lists them (`1,2,3`), ascending. */
const idsOf = (miembros: string | null): number[] =>
  miembros
    ? miembros
        .split(',')
        .map(Number)
        .sort((a, b) => a - b)
    : [];

const byId = (db: DB, id: number) => withMembers(db, stmt(db, 'SELECT * FROM grupos WHERE id = ?').get(id) as GrupoBase | undefined);

function setMembers(db: DB, id: number, celulares: number[]): void {
  const keep = new Set(celulares);
  const old = stmt(db, 'SELECT celular_id FROM grupo_celulares WHERE grupo_id = ?').all(id) as Array<{ celular_id: number }>;
  for (const { celular_id } of old) {
    if (keep.has(celular_id)) continue;
    stmt(db, 'DELETE FROM grupo_celulares WHERE grupo_id = ? AND celular_id = ?').run(id, celular_id);
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
      // One statement a pool send (D-179): the pool and its members together.
      const g = stmt(
        db,
        `SELECT g.*, (SELECT group_concat(celular_id) FROM grupo_celulares WHERE grupo_id = g.id) AS miembros
         FROM grupos g WHERE g.cliente_id = ? AND g.nombre = ?`,
      ).get(clienteId, nombre) as (GrupoBase & { miembros: string | null }) | undefined;
      if (!g) return null;
      const { miembros, ...base } = g;
      return { ...base, celulares: idsOf(miembros) };
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
    lineaReciente(clienteId: number, destinatario: string): Promise<number | null> {
      // In the turn's group commit (D-189): alone, the seek paid a read transaction of its own (the WAL's locks),
      // most of its cost; in the batch it shares one and sees every write committed before it.
      return grouped(db, () => {
        const r = stmt(
          db,
          `SELECT celular_id FROM mensajes INDEXED BY mensajes_cliente_dest_fecha
           WHERE cliente_id = ? AND destinatario = ? ORDER BY created_at DESC LIMIT 1`,
        ).get(clienteId, destinatario) as { celular_id: number | null } | undefined;
        return r?.celular_id ?? null;
      });
    },
    async gruposConConmutacion(): Promise<GrupoRow[]> {
      const rows = stmt(db, 'SELECT * FROM grupos WHERE conmutacion_s IS NOT NULL ORDER BY id').all() as GrupoBase[];
      return rows.map((g) => withMembers(db, g)!);
    },
    async lineaCaida(celularId: number, caida: boolean, now: number): Promise<number | null> {
      return immediate(db, () => {
        if (!caida) {
          stmt(db, 'DELETE FROM lineas_caidas WHERE celular_id = ?').run(celularId);
          return null;
        }
        stmt(db, 'INSERT OR IGNORE INTO lineas_caidas (celular_id, desde) VALUES (?, ?)').run(celularId, now);
        return (stmt(db, 'SELECT desde FROM lineas_caidas WHERE celular_id = ?').get(celularId) as { desde: number }).desde;
      });
    },
    async moverCola(grupoId: number, from: number, to: number, limit: number, now: number): Promise<GrupoMove[]> {
      return immediate(db, () => {
        type Row = Pick<MensajeRow, 'msg_id' | 'destinatario' | 'cliente_id' | 'celular_id' | 'cobrado' | 'cargo'>;
        // The oldest `limit` unclaimed of the line's queue (both halves, D-186).
        const rows = stmt(
          db,
          lineQueueSql(
            'c.seq, m.msg_id, m.destinatario, m.cliente_id, m.celular_id, m.cobrado, m.cargo',
            "c.celular_id = @from AND m.estado = 'pendiente' AND m.lease_until IS NULL",
            'CAST(@limit AS INTEGER)',
          ),
        ).all({ from, limit }) as Row[];
        const moved: GrupoMove[] = [];
        for (const m of rows) {
          const read = stmt(
            db,
            'SELECT a.saldo_actual AS vieja, b.saldo_actual AS nueva, k.saldo_global AS global FROM celulares a, celulares b, clientes k WHERE a.id = ? AND b.id = ? AND k.id = ?',
          ).get(from, to, m.cliente_id) as { vieja: number; nueva: number; global: number } | undefined;
          const plan = read && moveCharge(m, to, { saldoVieja: read.vieja, saldoNueva: read.nueva, saldoGlobal: read.global });
          if (!plan) break;
          for (const w of plan.writes) {
            stmt(db, balanceSet(w.balance, ph)).run(w.saldo, w.balance.id);
            writeMovement(db, w.movement, now);
          }
          stmt(db, 'UPDATE mensajes SET celular_id = ?, cargo = ? WHERE msg_id = ?').run(to, plan.cargo, m.msg_id);
          stmt(db, 'UPDATE cola SET celular_id = ? WHERE msg_id = ?').run(to, m.msg_id);
          moved.push({ msg_id: m.msg_id, destinatario: m.destinatario });
        }
        if (moved.length > 0) {
          stmt(db, 'UPDATE celulares SET pendientes = pendientes - ? WHERE id = ?').run(moved.length, from);
          stmt(db, 'UPDATE celulares SET pendientes = pendientes + ? WHERE id = ?').run(moved.length, to);
        }
        return moved;
      });
    },
  };
}
