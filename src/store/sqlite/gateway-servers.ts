import type { GatewayServerLoad, GatewayServersStore, NewGatewayServer } from '../../core/ports/gateway-servers.js';
import type Database from 'better-sqlite3';
import type { CelularRow, GatewayServerEstado, GatewayServerRow } from '../../core/ports/model.js';
import { immediate, stmt } from './statements.js';

/** The gateway servers table (migration 11) for the SQLite store; the rules that pick a server are the core's. */

const LOADS = `SELECT g.*, (SELECT COUNT(*) FROM celulares c WHERE c.servidor_id = g.id) AS lineas
  FROM gateway_servidores g ORDER BY g.id`;

function getServer(db: Database.Database, id: number): GatewayServerRow | null {
  return (stmt(db, 'SELECT * FROM gateway_servidores WHERE id = ?').get(id) as GatewayServerRow | undefined) ?? null;
}

function getServerByNombre(db: Database.Database, nombre: string): GatewayServerRow | null {
  return (stmt(db, 'SELECT * FROM gateway_servidores WHERE nombre = ?').get(nombre) as GatewayServerRow | undefined) ?? null;
}

function listServers(db: Database.Database): GatewayServerLoad[] {
  return stmt(db, LOADS).all() as GatewayServerLoad[];
}

/** The GatewayServersStore port over one connection. */
export function gatewayServers(db: Database.Database): GatewayServersStore {
  return {
    async getGatewayServer(id: number): Promise<GatewayServerRow | null> {
      return getServer(db, id);
    },
    async getGatewayServerByNombre(nombre: string): Promise<GatewayServerRow | null> {
      return getServerByNombre(db, nombre);
    },
    async listGatewayServers(): Promise<GatewayServerLoad[]> {
      return listServers(db);
    },
    async celularesOnServer(servidorId: number, limit: number): Promise<CelularRow[]> {
      return stmt(db, 'SELECT * FROM celulares WHERE servidor_id = ? ORDER BY id LIMIT CAST(? AS INTEGER)').all(servidorId, limit) as CelularRow[];
    },
    async addGatewayServer(input: NewGatewayServer, now: number): Promise<{ ok: true; servidor: GatewayServerRow } | { ok: false; reason: 'taken' }> {
      return immediate(db, () => {
        if (getServerByNombre(db, input.nombre)) return { ok: false as const, reason: 'taken' as const };
        const info = stmt(
          db,
          `INSERT INTO gateway_servidores (nombre, tipo, url, key, estado, max_lineas, created_at, updated_at)
       VALUES (@nombre, @tipo, @url, @key, 'activo', @max_lineas, @now, @now)`,
        ).run({ ...input, now });
        return { ok: true as const, servidor: getServer(db, Number(info.lastInsertRowid))! };
      });
    },
    async putGatewayServer(input: Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key'>, now: number): Promise<GatewayServerRow> {
      return immediate(db, () => {
        stmt(
          db,
          `INSERT INTO gateway_servidores (nombre, tipo, url, key, estado, max_lineas, created_at, updated_at)
       VALUES (@nombre, @tipo, @url, @key, 'activo', NULL, @now, @now)
       ON CONFLICT (nombre) DO UPDATE SET tipo = excluded.tipo, url = excluded.url, key = excluded.key, updated_at = excluded.updated_at`,
        ).run({ ...input, now });
        return getServerByNombre(db, input.nombre)!;
      });
    },
    async setGatewayServerEstado(id: number, estado: GatewayServerEstado, now: number): Promise<GatewayServerRow | null> {
      stmt(db, 'UPDATE gateway_servidores SET estado = ?, updated_at = ? WHERE id = ?').run(estado, now, id);
      return getServer(db, id);
    },
    async assignGatewayServer(celularId: number, choose: (servers: GatewayServerLoad[]) => number | null, now: number): Promise<number | null> {
      return immediate(db, () => {
        const cel = stmt(db, 'SELECT servidor_id FROM celulares WHERE id = ?').get(celularId) as { servidor_id: number | null } | undefined;
        if (!cel) return null;
        if (cel.servidor_id !== null) return cel.servidor_id;
        const id = choose(listServers(db));
        if (id === null) return null;
        stmt(db, 'UPDATE celulares SET servidor_id = ?, updated_at = ? WHERE id = ?').run(id, now, celularId);
        return id;
      });
    },
    async adoptUnassignedLines(servidorId: number, now: number): Promise<number> {
      return stmt(db, 'UPDATE celulares SET servidor_id = ?, updated_at = ? WHERE servidor_id IS NULL').run(servidorId, now).changes;
    },
  };
}
