import type { Core } from '../context.js';
import { engineHolders, type HolderCount } from '../engine/engine-holders.js';
import { SESSION_STATUSES, type MensajeEstado } from '../ports/model.js';
import type { FailingWebhook } from '../ports/webhooks.js';

/**
 * The operator's overview (the panel's first page): the state of the whole
 * deployment at a glance. It reads what /health, the /metrics store gauges
 * and the operator API read, each an indexed statement whose cost follows the
 * live state (queue, backlog, lines, the last hour), never the history, so
 * polling it every few seconds costs the same on a store of any age.
 */

export const OVERVIEW_WINDOW_MS = 60 * 60 * 1000;
/** At most this many lines are listed with their queue (most pending first). */
export const QUEUED_LINES_SHOWN = 20;
/** At most this many failing webhooks are listed (most backlog first). */
export const FAILING_WEBHOOKS_SHOWN = 10;

const SESSIONS: ReadonlySet<string> = new Set(SESSION_STATUSES);

export interface Overview {
  at: number;
  nodos_vivos: number;
  store: string;
  counters: string;
  gateway: string;
  simulado: boolean;
  cola: { pendientes: number; mas_antiguo_s: number | null };
  /** The lines with a queue, most pending first (at most QUEUED_LINES_SHOWN), and how many lines have one. */
  cola_por_linea: { lineas: number; mostradas: QueuedLine[] };
  webhooks: { pendientes: number; vencidas: number };
  /** Messages created in the last hour, by estado (every estado, 0 when none). */
  ultima_hora: Record<MensajeEstado, number>;
  /** Lines by estado, and by last known session status (`unknown` when none is known). */
  lineas: { total: number; por_estado: Record<string, number>; por_sesion: Record<string, number> };
  servidores: Array<{ nombre: string; estado: string; lineas: number; max_lineas: number | null }>;
  webhooks_fallando: Array<FailingWebhook & { nombre: string | null }>;
  /** With the in-process engine (D-137): the nodes holding lines' sessions, with how many each, and the lines nobody holds; null otherwise. */
  motor: { nodos: HolderCount[]; libres: number } | null;
}

export interface QueuedLine {
  cliente_id: number;
  celular_id: number;
  pendientes: number;
  /** Seconds its oldest queued message has waited. */
  mas_antiguo_s: number;
}

/**
 * Each line's queue depth: the lines with a backlog as the worker finds
 * them (queueHeads, one index seek per such line), then each one's kept
 * counter (queueSizes, a primary-key read per line): the cost follows the
 * lines with a queue, never the queue's length or the history.
 */
async function queuedLines(core: Pick<Core, 'store'>, now: number): Promise<Overview['cola_por_linea']> {
  const heads = await core.store.queueHeads();
  if (heads.length === 0) return { lineas: 0, mostradas: [] };
  const sizes = new Map((await core.store.queueSizes(heads.map((h) => h.celular_id))).map((r) => [r.celular_id, r.pendientes]));
  const lines = heads.map((h) => ({
    cliente_id: h.cliente_id,
    celular_id: h.celular_id,
    // The counter is kept with the queue; a head read before a concurrent write still counts as one.
    pendientes: Math.max(1, sizes.get(h.celular_id) ?? 1),
    mas_antiguo_s: Math.max(0, Math.round((now - h.created_at) / 1000)),
  }));
  lines.sort((a, b) => b.pendientes - a.pendientes || b.mas_antiguo_s - a.mas_antiguo_s || a.celular_id - b.celular_id);
  return { lineas: lines.length, mostradas: lines.slice(0, QUEUED_LINES_SHOWN) };
}

export async function overview(core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock'>): Promise<Overview> {
  const now = core.clock.now();
  const s = core.store;
  const [nodes, queue, perLine, outbox, recent, counts, servers, failing, holders] = await Promise.all([
    s.nodes(now),
    s.queueDepth(),
    queuedLines(core, now),
    s.outboxDepth(now),
    s.recentByEstado(now - OVERVIEW_WINDOW_MS),
    s.lineCounts(),
    s.listGatewayServers(),
    s.failingWebhooks(FAILING_WEBHOOKS_SHOWN),
    engineHolders(core),
  ]);
  const ultima_hora: Record<MensajeEstado, number> = { pendiente: 0, enviado: 0, entregado: 0, leido: 0, error: 0 };
  for (const r of recent) ultima_hora[r.estado] = (ultima_hora[r.estado] ?? 0) + r.n;
  const por_estado: Record<string, number> = {};
  const por_sesion: Record<string, number> = {};
  let total = 0;
  for (const c of counts) {
    // As the metrics label it: a status pasarela does not name (or none yet) is `unknown`.
    const session = c.last_status !== null && SESSIONS.has(c.last_status) ? c.last_status : 'unknown';
    por_estado[c.estado] = (por_estado[c.estado] ?? 0) + c.n;
    por_sesion[session] = (por_sesion[session] ?? 0) + c.n;
    total += c.n;
  }
  const names = await Promise.all(failing.map((f) => s.getCliente(f.cliente_id)));
  return {
    at: now,
    nodos_vivos: nodes.filter((n) => n.alive).length,
    store: s.caps.label,
    counters: core.counters.backend(),
    gateway: core.gateway.name,
    simulado: core.gateway.simulated,
    cola: { pendientes: queue.pending, mas_antiguo_s: queue.oldest_at === null ? null : Math.max(0, Math.round((now - queue.oldest_at) / 1000)) },
    cola_por_linea: perLine,
    webhooks: { pendientes: outbox.pending, vencidas: outbox.due },
    ultima_hora,
    lineas: { total, por_estado, por_sesion },
    servidores: servers.map((g) => ({ nombre: g.nombre, estado: g.estado, lineas: g.lineas, max_lineas: g.max_lineas })),
    webhooks_fallando: failing.map((f, i) => ({ ...f, nombre: names[i]?.nombre ?? null })),
    motor: holders?.summary() ?? null,
  };
}
