import type { CredentialTarget } from '../auth/credential-cache.js';
import { listenCredentialDrops } from '../auth/credential-cache.js';
import type { CelularRow, ClienteRow } from '../ports/model.js';
import type { Signals } from '../ports/signals.js';
import type { Store } from '../ports/store.js';

export const LINE_READS_TTL_MS = 10_000;
const MAX = 10_000;

interface Entry<T> {
  row: T;
  expires: number;
}

/**
 * The queue worker's and the gateway events' reads of a line and its client
 * (by id, by gateway instance), kept ten seconds where every read is a
 * round trip to a shared store (PostgreSQL: five a message before; with a
 * one-second TTL a line sent on less often than each second still cost one
 * a message). Dropped
 * by the same signals that drop cached credentials (D-67: every write of an
 * estado, plan, caps, hours, the line's session, server or existence), so
 * any node's change reaches every node's copy at once; the TTL bounds a lost
 * signal. On a store served alone (SQLite) the worker runs on a thread whose
 * signals do not hear the request thread's writes, and a read costs
 * microseconds: there it reads through.
 */
export class LineReads {
  private readonly celulares = new Map<number, Entry<CelularRow>>();
  private readonly instancias = new Map<string, number>();
  private readonly clientes = new Map<number, Entry<ClienteRow>>();
  private gen = 0;
  private readonly on: boolean;

  constructor(
    private readonly store: Pick<Store, 'getCelular' | 'getCelularByInstancia' | 'getCliente' | 'caps'>,
    private readonly ticks: () => number,
    private readonly ttlMs = LINE_READS_TTL_MS,
  ) {
    this.on = store.caps.shared;
  }

  listen(signals: Signals): () => void {
    return listenCredentialDrops(signals, this);
  }

  async celular(id: number): Promise<CelularRow | null> {
    const hit = this.fresh(this.celulares.get(id));
    if (hit) return hit;
    const gen = this.gen;
    return this.keepCelular(await this.store.getCelular(id), gen);
  }

  async byInstancia(instancia: string): Promise<CelularRow | null> {
    const id = this.instancias.get(instancia);
    const hit = id === undefined ? null : this.fresh(this.celulares.get(id));
    if (hit && hit.gateway_instancia === instancia) return hit;
    const gen = this.gen;
    return this.keepCelular(await this.store.getCelularByInstancia(instancia), gen);
  }

  async cliente(id: number): Promise<ClienteRow | null> {
    const hit = this.fresh(this.clientes.get(id));
    if (hit) return hit;
    const gen = this.gen;
    const row = await this.store.getCliente(id);
    if (row && this.on && gen === this.gen) this.put(this.clientes, id, row);
    return row;
  }

  invalidate(target: CredentialTarget): void {
    this.gen++;
    if ('celular' in target) {
      this.celulares.delete(target.celular);
      return;
    }
    this.clientes.delete(target.cliente);
    for (const [id, e] of this.celulares) if (e.row.cliente_id === target.cliente) this.celulares.delete(id);
  }

  clear(): void {
    this.gen++;
    this.celulares.clear();
    this.instancias.clear();
    this.clientes.clear();
  }

  private fresh<T>(e: Entry<T> | undefined): T | null {
    return e && this.ticks() < e.expires ? e.row : null;
  }

  /** Kept only when nothing was dropped while it was read (the read may predate the change). */
  private keepCelular(row: CelularRow | null, gen: number): CelularRow | null {
    if (row && this.on && gen === this.gen) {
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
