import type { Core } from '../context.js';
import type { HolderChange } from './engine-keeper.js';
import type { EngineHold } from '../ports/engine-holds.js';
import type { NodeRow } from '../ports/leases.js';

/**
 * Which node holds each line's engine session, as people see it (D-137):
 * the API's `motor_nodo`, `celular status`, the panel; and each change of
 * holder written to the audit trail and published on the bus. Only the
 * in-process engine (`--gateway baileys`) has holders: with any other
 * gateway the field is absent, and with the engine a line nobody holds
 * (never linked, given back, its holder stopped) has null.
 */

/** A line's holder: the node's id, its label (host and pid; null once the node has left the store) and whether it beats. */
export interface MotorNodo {
  id: string;
  etiqueta: string | null;
  presente: boolean;
}

/** Whether lines have holders here: the in-process engine runs. */
export const runsEngine = (core: Pick<Core, 'gateway'>): boolean => core.gateway.name === 'baileys';

const labelsOf = (nodes: NodeRow[]) => new Map(nodes.map((n) => [n.id, n.label]));

function holderView(h: EngineHold | null | undefined, labels: ReadonlyMap<string, string>): MotorNodo | null {
  if (!h || h.nodo === null) return null;
  return { id: h.nodo, etiqueta: labels.get(h.nodo) ?? null, presente: h.presente };
}

/** Engine nodes with the lines each holds, for the overview. */
export interface HolderCount extends MotorNodo {
  lineas: number;
}

/** Every line's holder, read once for a whole page (two statements, whatever the number of lines). */
export interface Holders {
  /** A line's holder by its `gateway_instancia` (null: no session yet, or nobody holds it). */
  of(instancia: string | null): MotorNodo | null;
  /** The nodes holding lines, most lines first, and the lines with stored state that nobody holds. */
  summary(): { nodos: HolderCount[]; libres: number };
}

/** Every line's holder; undefined when the engine does not run here. */
export async function engineHolders(core: Pick<Core, 'gateway' | 'store' | 'clock'>): Promise<Holders | undefined> {
  if (!runsEngine(core)) return undefined;
  const now = core.clock.now();
  const [holds, nodes] = await Promise.all([core.store.holdsAll(now), core.store.nodes(now)]);
  const labels = labelsOf(nodes);
  const byInstancia = new Map(holds.map((h) => [h.instancia, h]));
  return {
    of: (instancia) => (instancia === null ? null : holderView(byInstancia.get(instancia), labels)),
    summary: () => {
      const counts = new Map<string, HolderCount>();
      let libres = 0;
      for (const h of holds) {
        const v = holderView(h, labels);
        if (!v) libres += 1;
        else {
          const c = counts.get(v.id) ?? { ...v, lineas: 0 };
          c.lineas += 1;
          counts.set(v.id, c);
        }
      }
      const nodos = [...counts.values()].sort((a, b) => b.lineas - a.lineas || (a.etiqueta ?? a.id).localeCompare(b.etiqueta ?? b.id));
      return { nodos, libres };
    },
  };
}

/** One line's holder (two primary-key reads): undefined when the engine does not run here, null when nobody holds it. */
export async function engineHolderOf(core: Pick<Core, 'gateway' | 'store' | 'clock'>, instancia: string | null): Promise<MotorNodo | null | undefined> {
  if (!runsEngine(core)) return undefined;
  if (instancia === null || instancia === '') return null;
  const now = core.clock.now();
  const [h, nodes] = await Promise.all([core.store.holdOf(instancia, now), core.store.nodes(now)]);
  return holderView(h, labelsOf(nodes));
}

/** The actor of what a node does by itself (the ledger's word for the system's own movements). */
export const SYSTEM_ACTOR = 'sistema';

/**
 * Reports the changes of holder this node makes (the keeper calls it only
 * on the node that took or gave a line, so nothing is reported twice): at
 * once on the bus (`session.holder`, counted and logged), then in the audit
 * trail, one record at a time in the order they happened. A line whose
 * celular row is gone is published but not audited (no client to file it
 * under).
 */
export class HolderReports {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly core: Pick<Core, 'store' | 'bus' | 'clock'>,
    private readonly onError: (err: unknown) => void,
  ) {}

  report(c: HolderChange): void {
    const at = this.core.clock.now();
    this.core.bus.publish('session.holder', {
      gateway_instancia: c.instancia,
      celular_id: c.celularId,
      nodo_anterior: c.from,
      nodo: c.to,
      motivo: c.reason,
      fecha: new Date(at).toISOString(),
    });
    this.chain = this.chain.then(() => this.audit(c, at).catch(this.onError));
  }

  /** Resolves once every record reported so far is written (or failed): a stop waits for it before the store closes. */
  idle(): Promise<void> {
    return this.chain;
  }

  private async audit(c: HolderChange, at: number): Promise<void> {
    const s = this.core.store;
    const [celular, nodes] = await Promise.all([
      c.celularId !== null ? s.getCelular(c.celularId) : s.getCelularByInstancia(c.instancia),
      s.nodes(this.core.clock.now()),
    ]);
    if (!celular) return;
    const labels = labelsOf(nodes);
    const side = (id: string | null) => ({ nodo: id === null ? null : (labels.get(id) ?? id), nodo_id: id });
    await s.audit(
      {
        actor: SYSTEM_ACTOR,
        accion: 'celular.motor_nodo',
        objeto_tipo: 'celular',
        objeto_id: celular.id,
        cliente_id: celular.cliente_id,
        detalle: { antes: side(c.from), despues: side(c.to), motivo: c.reason },
      },
      at,
    );
  }
}
