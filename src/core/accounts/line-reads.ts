import type { CredentialTarget } from '../auth/credential-cache.js';
import { listenCredentialDrops } from '../auth/credential-cache.js';
import type { GrupoRow } from '../ports/grupos.js';
import type { CelularRow, ClienteRow } from '../ports/model.js';
import type { Signals } from '../ports/signals.js';
import type { Store } from '../ports/store.js';
import { ChangeCount } from '../nodes/change-count.js';

export const LINE_READS_TTL_MS = 10_000;
/** How long a pool pick's guess of a line's room is kept, on the monotonic and on the injected clock (D-179). */
export const ROOM_GUESS_MS = 1_000;
const MAX = 10_000;

interface Entry<T> {
  row: T;
  expires: number;
}

/** A line's room as a queued pool pick guesses it: its tightest window's room and its queue, read at `at` (the injected clock). */
export interface RoomGuess {
  cliente_id: number;
  window: number;
  pendientes: number;
  at: number;
}

/**
 * The reads of a line and its client (by id, by gateway instance) by the
 * accept, the queue worker and the gateway events, kept ten seconds: on
 * PostgreSQL each was a round trip (five a message before); on SQLite a
 * primary-key read outside a transaction cost 58 us of each accept (D-141).
 * Dropped by the same signals that drop cached credentials (D-67: every
 * write of an estado, plan, caps, hours, the line's session, server or
 * existence), so any node's change reaches every node's copy at once; the
 * TTL bounds a lost signal. On SQLite, serve's two threads each count the
 * changes they make (server/background/changes.ts), and a copy `follow`ing
 * the other's count drops everything when it moved: a change there is seen
 * here at the next read, as a read through would.
 */
export class LineReads {
  private readonly celulares = new Map<number, Entry<CelularRow>>();
  private readonly instancias = new Map<string, number>();
  private readonly clientes = new Map<number, Entry<ClienteRow>>();
  private readonly rooms = new Map<number, Entry<RoomGuess>>();
  /** Pools by client and name (a pool send's definition, D-183); a missing pool is not kept. */
  private readonly grupos = new Map<string, Entry<GrupoRow>>();
  private gen = 0;
  private other: ChangeCount | undefined;

  constructor(
    private readonly store: Pick<Store, 'getCelular' | 'getCelularByInstancia' | 'getCliente' | 'grupoByNombre'>,
    private readonly ticks: () => number,
    private readonly ttlMs = LINE_READS_TTL_MS,
  ) {}

  listen(signals: Signals): () => void {
    return listenCredentialDrops(signals, this);
  }

  /** Another thread writing the same store: `count` says how many line and client changes it made. */
  follow(count: () => number): void {
    this.other = new ChangeCount(count);
  }

  async celular(id: number): Promise<CelularRow | null> {
    this.syncOther();
    const hit = this.fresh(this.celulares.get(id));
    if (hit) return hit;
    const gen = this.gen;
    return this.keepCelular(await this.store.getCelular(id), gen);
  }

  async byInstancia(instancia: string): Promise<CelularRow | null> {
    this.syncOther();
    const id = this.instancias.get(instancia);
    const hit = id === undefined ? null : this.fresh(this.celulares.get(id));
    if (hit && hit.gateway_instancia === instancia) return hit;
    const gen = this.gen;
    return this.keepCelular(await this.store.getCelularByInstancia(instancia), gen);
  }

  async cliente(id: number): Promise<ClienteRow | null> {
    this.syncOther();
    const hit = this.fresh(this.clientes.get(id));
    if (hit) return hit;
    const gen = this.gen;
    const row = await this.store.getCliente(id);
    if (row && this.unchangedSince(gen)) this.put(this.clientes, id, row);
    return row;
  }

  /**
   * A pool by its client and name, as a send to it names it (D-183): a pool's
   * create, edit and delete drop its client's pools on every node, as any
   * change of the client does (core/accounts/grupos.ts).
   */
  async grupo(clienteId: number, nombre: string): Promise<GrupoRow | null> {
    this.syncOther();
    const key = `${clienteId}\u0000${nombre}`;
    const hit = this.fresh(this.grupos.get(key));
    if (hit) return hit;
    const gen = this.gen;
    const row = await this.store.grupoByNombre(clienteId, nombre);
    if (row && this.unchangedSince(gen)) this.put(this.grupos, key, row);
    return row;
  }

  /**
   * A queued pool pick's guess of a line's room (core/accounts/grupos.ts,
   * D-179): read through `read` at most once a second (of either clock) and
   * dropped with the line, so a pool's pick costs no statement per member.
   * Only a guess: the acceptance still counts the line's caps exactly.
   */
  async room(c: CelularRow, now: number, read: () => Promise<{ window: number; pendientes: number }>): Promise<RoomGuess> {
    this.syncOther();
    const e = this.rooms.get(c.id);
    if (e && this.ticks() < e.expires && now >= e.row.at && now - e.row.at < ROOM_GUESS_MS) return e.row;
    const gen = this.gen;
    const r = await read();
    const row: RoomGuess = { cliente_id: c.cliente_id, window: r.window, pendientes: r.pendientes, at: now };
    if (this.unchangedSince(gen)) {
      this.rooms.delete(c.id);
      while (this.rooms.size >= MAX) this.rooms.delete(this.rooms.keys().next().value as number);
      this.rooms.set(c.id, { row, expires: this.ticks() + Math.min(ROOM_GUESS_MS, this.ttlMs) });
    }
    return row;
  }

  /** A line's queue grew or moved here (a pool's acceptance, a failover): its guess is dropped or told. */
  queued(celularId: number, n: number | null): void {
    const e = this.rooms.get(celularId);
    if (!e) return;
    if (n === null) this.rooms.delete(celularId);
    else e.row.pendientes += n;
  }

  invalidate(target: CredentialTarget): void {
    this.gen++;
    if ('celular' in target) {
      this.celulares.delete(target.celular);
      this.rooms.delete(target.celular);
      return;
    }
    this.clientes.delete(target.cliente);
    for (const [k, e] of this.grupos) if (e.row.cliente_id === target.cliente) this.grupos.delete(k);
    for (const [id, e] of this.celulares) if (e.row.cliente_id === target.cliente) this.celulares.delete(id);
    for (const [id, e] of this.rooms) if (e.row.cliente_id === target.cliente) this.rooms.delete(id);
  }

  clear(): void {
    this.gen++;
    this.celulares.clear();
    this.instancias.clear();
    this.clientes.clear();
    this.rooms.clear();
    this.grupos.clear();
  }

  private fresh<T>(e: Entry<T> | undefined): T | null {
    return e && this.ticks() < e.expires ? e.row : null;
  }

  /** What the other thread changed drops everything here before a look-up (and before a read is kept). */
  private syncOther(): void {
    if (this.other?.moved()) this.clear();
  }

  /** Nothing was dropped while it was read (the read may predate the change), here or on the other thread. */
  private unchangedSince(gen: number): boolean {
    this.syncOther();
    return gen === this.gen;
  }

  private keepCelular(row: CelularRow | null, gen: number): CelularRow | null {
    if (row && this.unchangedSince(gen)) {
      this.put(this.celulares, row.id, row);
      if (row.gateway_instancia) this.instancias.set(row.gateway_instancia, row.id);
    }
    return row;
  }

  private put<K, T>(map: Map<K, Entry<T>>, key: K, row: T): void {
    map.delete(key);
    // Oldest first out: a Map keeps insertion order.
    while (map.size >= MAX) map.delete(map.keys().next().value as K);
    if (this.instancias.size >= MAX) this.instancias.clear();
    map.set(key, { row, expires: this.ticks() + this.ttlMs });
  }
}
