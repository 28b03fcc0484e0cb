import type { GatewayServerLoad, GatewayServersStore, NewGatewayServer } from '../../core/ports/gateway-servers.js';
import type { CelularRow, GatewayServerEstado, GatewayServerRow } from '../../core/ports/model.js';
import { LOCK, row, rows, type Db } from './db.js';

/**
 * The gateway servers table (PostgreSQL migration 2, SQLite's 11). The rules
 * that pick a server are the core's; picking and assigning run under one
 * transaction-scoped advisory lock, so two nodes placing lines at once see
 * each other's choices and the least-loaded rule holds across nodes.
 */

const LOADS = `SELECT g.*, (SELECT COUNT(*) FROM celulares c WHERE c.servidor_id = g.id) AS lineas
  FROM gateway_servidores g ORDER BY g.id`;

/** The GatewayServersStore port over one pool. */
export function gatewayServers(db: Db): GatewayServersStore {
  return {
    async getGatewayServer(id: number): Promise<GatewayServerRow | null> {
      return db.one<GatewayServerRow>('SELECT * FROM gateway_servidores WHERE id = $1', [id]);
    },
    async getGatewayServerByNombre(nombre: string): Promise<GatewayServerRow | null> {
      return db.one<GatewayServerRow>('SELECT * FROM gateway_servidores WHERE nombre = $1', [nombre]);
    },
    async listGatewayServers(): Promise<GatewayServerLoad[]> {
      return db.q<GatewayServerLoad>(LOADS);
    },
    async celularesOnServer(servidorId: number, limit: number): Promise<CelularRow[]> {
      return db.q<CelularRow>('SELECT * FROM celulares WHERE servidor_id = $1 ORDER BY id LIMIT $2', [servidorId, limit]);
    },
    async addGatewayServer(input: NewGatewayServer, now: number): Promise<{ ok: true; servidor: GatewayServerRow } | { ok: false; reason: 'taken' }> {
      const r = await db.one<GatewayServerRow>(
        `INSERT INTO gateway_servidores (nombre, tipo, url, key, estado, max_lineas, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'activo', $5, $6, $6) ON CONFLICT (nombre) DO NOTHING RETURNING *`,
        [input.nombre, input.tipo, input.url, input.key, input.max_lineas, now],
      );
      return r ? { ok: true, servidor: r } : { ok: false, reason: 'taken' };
    },
    async putGatewayServer(input: Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key'>, now: number): Promise<GatewayServerRow> {
      return (await db.one<GatewayServerRow>(
        `INSERT INTO gateway_servidores (nombre, tipo, url, key, estado, max_lineas, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'activo', NULL, $5, $5)
     ON CONFLICT (nombre) DO UPDATE SET tipo = excluded.tipo, url = excluded.url, key = excluded.key, updated_at = excluded.updated_at
     RETURNING *`,
        [input.nombre, input.tipo, input.url, input.key, now],
      ))!;
    },
    async setGatewayServerEstado(id: number, estado: GatewayServerEstado, now: number): Promise<GatewayServerRow | null> {
      return db.one<GatewayServerRow>('UPDATE gateway_servidores SET estado = $2, updated_at = $3 WHERE id = $1 RETURNING *', [id, estado, now]);
    },
    async assignGatewayServer(celularId: number, choose: (servers: GatewayServerLoad[]) => number | null, now: number): Promise<number | null> {
      return db.tx(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK.placement]);
        const cel = await row<{ servidor_id: number | null }>(c, 'SELECT servidor_id FROM celulares WHERE id = $1 FOR NO KEY UPDATE', [celularId]);
        if (!cel) return null;
        if (cel.servidor_id !== null) return cel.servidor_id;
        const id = choose(await rows<GatewayServerLoad>(c, LOADS));
        if (id === null) return null;
        await c.query('UPDATE celulares SET servidor_id = $2, updated_at = $3 WHERE id = $1', [celularId, id, now]);
        return id;
      });
    },
    async adoptUnassignedLines(servidorId: number, now: number): Promise<number> {
      return (await db.query('UPDATE celulares SET servidor_id = $1, updated_at = $2 WHERE servidor_id IS NULL', [servidorId, now])).rowCount ?? 0;
    },
  };
}
