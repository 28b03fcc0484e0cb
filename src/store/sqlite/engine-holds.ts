import { holdTakable } from '../../core/engine/engine-holds.js';
import type { EngineAuthStore } from '../../core/ports/engine-auth.js';
import type { EngineHold, EngineHoldsStore } from '../../core/ports/engine-holds.js';

/**
 * Engine sessions of a store one process serves alone (SQLite), in memory
 * as its leases are (sqlite/leases.ts): its node holds every line, and
 * after a restart nothing is held. Seeded from the lines with stored state.
 */
export function engineHolds(auth: Pick<EngineAuthStore, 'authInstancias'>): EngineHoldsStore {
  const rows = new Map<string, { nodo: string | null; token: number; desde: number }>();
  const view = (instancia: string, r: { nodo: string | null; token: number; desde: number }, now: number): EngineHold => ({
    instancia,
    nodo: r.nodo,
    token: r.token,
    presente: r.nodo !== null,
    held_ms: Math.max(0, now - r.desde),
    url: null,
  });
  return {
    async holdSeed(): Promise<void> {
      for (const i of await auth.authInstancias()) if (!rows.has(i)) rows.set(i, { nodo: null, token: 0, desde: 0 });
    },
    async holdsAll(now: number): Promise<EngineHold[]> {
      return [...rows.keys()].sort().map((i) => view(i, rows.get(i)!, now));
    },
    async holdOf(instancia: string, now: number): Promise<EngineHold | null> {
      const r = rows.get(instancia);
      return r ? view(instancia, r, now) : null;
    },
    async holdTake(nodeId: string, instancias: string[], now: number, opts: { create?: boolean } = {}) {
      const out: Array<{ instancia: string; token: number; from: string | null }> = [];
      for (const i of instancias) {
        if (!rows.has(i) && opts.create === false) continue;
        const r = rows.get(i) ?? { nodo: null, token: 0, desde: now };
        if (!holdTakable({ nodo: r.nodo, presente: r.nodo !== null }, nodeId)) continue;
        const from = r.nodo;
        if (from !== nodeId) rows.set(i, { nodo: nodeId, token: r.token + 1, desde: now });
        out.push({ instancia: i, token: rows.get(i)!.token, from });
      }
      return out;
    },
    async holdGive(nodeId: string, instancias: string[]): Promise<void> {
      for (const i of instancias) {
        const r = rows.get(i);
        if (r?.nodo === nodeId) r.nodo = null;
      }
    },
    async holdForget(instancia: string): Promise<void> {
      rows.delete(instancia);
    },
  };
}
