/** A client's pool of lines (docs/pools.md): a send naming it is sent from one of them (core/accounts/grupos.ts). */
export interface GrupoRow {
  id: number;
  cliente_id: number;
  nombre: string;
  /** Seconds a member stays disconnected before its queued messages move to another member; null: never. */
  conmutacion_s: number | null;
  /** The member lines' ids, ascending. */
  celulares: number[];
  created_at: number;
  updated_at: number;
}

export interface NewGrupo {
  cliente_id: number;
  nombre: string;
  conmutacion_s: number | null;
  celulares: number[];
}

export interface GrupoPatch {
  nombre?: string;
  conmutacion_s?: number | null;
  celulares?: number[];
}

/** A write refused because another pool of the client has the name. */
export type GrupoWrite = { ok: true; grupo: GrupoRow } | { ok: false; reason: 'nombre' | 'no_existe' };

/** A queued message of a pool's member moved to another member (failover). */
export interface GrupoMove {
  msg_id: string;
  destinatario: string;
}

/** Pools, their members and each pool's recipient-to-line map. Each method is one atomic operation. */
export interface GruposStore {
  listGrupos(clienteId: number): Promise<GrupoRow[]>;
  getGrupo(id: number): Promise<GrupoRow | null>;
  grupoByNombre(clienteId: number, nombre: string): Promise<GrupoRow | null>;
  createGrupo(input: NewGrupo, now: number): Promise<GrupoWrite>;
  /** Members, when given, replace the old ones. */
  updateGrupo(id: number, patch: GrupoPatch, now: number): Promise<GrupoWrite>;
  deleteGrupo(id: number): Promise<boolean>;
  /** The line of the client's latest message to the recipient, or null (one seek of the history's recipient index, D-184). */
  lineaReciente(clienteId: number, destinatario: string): Promise<number | null>;
  /** The pools with a failover wait (a read of the small pools table, once per health pass). */
  gruposConConmutacion(): Promise<GrupoRow[]>;
  /** A line seen down (kept since the first time) or up (forgotten): since when it has been down, or null. */
  lineaCaida(celularId: number, caida: boolean, now: number): Promise<number | null>;
  /**
   * One transaction: up to `limit` of line `from`'s queued messages that no
   * worker has claimed, oldest first, move to line `to` keeping their place
   * (their order per recipient holds); the lines' `pendientes` follow, each
   * message's charge moves as core/billing/recipes.ts `moveCharge` says (the
   * move stops at the first that cannot be paid), and the pool's recipients
   * of `from` now stick to `to`. Another node moving the same line at once
   * waits for the line's lock and finds them moved.
   */
  moverCola(grupoId: number, from: number, to: number, limit: number, now: number): Promise<GrupoMove[]>;
}
