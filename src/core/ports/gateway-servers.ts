import type { CelularRow, GatewayServerEstado, GatewayServerRow } from './model.js';

/** A server with how many lines it holds now. */
export interface GatewayServerLoad extends GatewayServerRow {
  lineas: number;
}

export type NewGatewayServer = Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key' | 'max_lineas'>;

/** The gateway servers lines are spread over (core/accounts/gateway-servers.ts holds the rules). */
export interface GatewayServersStore {
  /** Atomic: inserts the server unless its name is taken. */
  addGatewayServer(input: NewGatewayServer, now: number): Promise<{ ok: true; servidor: GatewayServerRow } | { ok: false; reason: 'taken' }>;
  /** Atomic: inserts the server, or sets the kind, URL and key of the one with that name (its estado and max_lineas are kept). */
  putGatewayServer(input: Pick<GatewayServerRow, 'nombre' | 'tipo' | 'url' | 'key'>, now: number): Promise<GatewayServerRow>;
  getGatewayServer(id: number): Promise<GatewayServerRow | null>;
  getGatewayServerByNombre(nombre: string): Promise<GatewayServerRow | null>;
  /** Every server with how many lines it holds, in id order. */
  listGatewayServers(): Promise<GatewayServerLoad[]>;
  setGatewayServerEstado(id: number, estado: GatewayServerEstado, now: number): Promise<GatewayServerRow | null>;
  /** The lines a server holds, in id order, at most `limit` (the index on celulares.servidor_id). */
  celularesOnServer(servidorId: number, limit: number): Promise<CelularRow[]>;
  /**
   * Atomic: when the line has no server yet, `choose` picks one among every
   * server and its load (or none), and the line is given to it. Returns the
   * line's server id (the one it had, or the one chosen); null when the line
   * is gone or `choose` picked none.
   */
  assignGatewayServer(celularId: number, choose: (servers: GatewayServerLoad[]) => number | null, now: number): Promise<number | null>;
  /** Gives every line without a server to this one (the `--gateway-url` server at start); returns how many. */
  adoptUnassignedLines(servidorId: number, now: number): Promise<number>;
}
