import type { Core } from './context.js';
import { SESSION_STATUSES, type MensajeEstado } from './ports/model.js';
import type { FailingWebhook } from './ports/webhooks.js';

/**
 * The operator's overview (the panel's first page): the state of the whole
 * deployment at a glance. It reads what /health, the /metrics store gauges
 * and the operator API read, each an indexed statement whose cost follows the
 * live state (queue, backlog, lines, the last hour), never the history, so
 * polling it every few seconds costs the same on a store of any age.
 */

export const OVERVIEW_WINDOW_MS = 60 * 60 * 1000;
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
  webhooks: { pendientes: number; vencidas: number };
  /** Messages created in the last hour, by estado (every estado, 0 when none). */
  ultima_hora: Record<MensajeEstado, number>;
  /** Lines by estado, and by last known session status (`unknown` when none is known). */
  lineas: { total: number; por_estado: Record<string, number>; por_sesion: Record<string, number> };
  servidores: Array<{ nombre: string; estado: string; lineas: number; max_lineas: number | null }>;
  webhooks_fallando: Array<FailingWebhook & { nombre: string | null }>;
}

export async function overview(core: Core): Promise<Overview> {
  const now = core.clock.now();
  const s = core.store;
  const [nodes, queue, outbox, recent, counts, servers, failing] = await Promise.all([
    s.nodes(now),
    s.queueDepth(),
    s.outboxDepth(now),
    s.recentByEstado(now - OVERVIEW_WINDOW_MS),
    s.lineCounts(),
    s.listGatewayServers(),
    s.failingWebhooks(FAILING_WEBHOOKS_SHOWN),
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
    webhooks: { pendientes: outbox.pending, vencidas: outbox.due },
    ultima_hora,
    lineas: { total, por_estado, por_sesion },
    servidores: servers.map((g) => ({ nombre: g.nombre, estado: g.estado, lineas: g.lineas, max_lineas: g.max_lineas })),
    webhooks_fallando: failing.map((f, i) => ({ ...f, nombre: names[i]?.nombre ?? null })),
  };
}
