import { slotClaim } from '../sending/caps.js';
import { sendingWindow } from '../time/hours.js';
import type { CelularRow, ClienteEstado } from '../ports/model.js';

/**
 * Why a queued message waits, and until about when (the queue view, D-95).
 * Pure: the caller reads the line, its caps' counts and last send once, and
 * the page of its queue in order; the answer follows the queue worker's own
 * tests (core/queue/queue-worker.ts) in the order it makes them, so the first
 * reason named is the one that holds the line now. Times are estimates: the
 * human gap is random, a send may fail and be retried, an edit of the line
 * changes everything.
 */
export type Motivo =
  /** A worker holds it: it is being sent now. */
  | 'enviando'
  /** The line (or its client) is not active, or has no session: it waits until reconnected (or its TTL). */
  | 'desconectado'
  /** The line is braked (core/accounts/line-brake.ts): it waits for a resume (or its TTL). */
  | 'frenado'
  /** Outside the line's allowed hours. */
  | 'fuera_de_horario'
  /** A failed attempt waits for its next one. */
  | 'reintento'
  /** A scheduled send waits for its time (`enviar_en`, D-162). */
  | 'programado'
  | 'cupo_minuto'
  | 'cupo_hora'
  | 'cupo_dia'
  /** The human-like gap after the line's last send. */
  | 'pausa_humana'
  /** Queued behind older messages of its line. */
  | 'en_turno'
  /** Nothing holds it: the worker takes it at its next look. */
  | 'listo';

export interface QueueLine {
  celular: Pick<
    CelularRow,
    | 'estado'
    | 'gateway_instancia'
    | 'hora_inicio_permitido'
    | 'hora_fin_permitido'
    | 'max_envios_por_minuto'
    | 'max_envios_por_hora'
    | 'max_envios_por_dia'
    | 'calentamiento'
    | 'calentamiento_desde'
  > &
    Partial<Pick<CelularRow, 'frenado'>>;
  clienteEstado: ClienteEstado;
  /** The line's slots in each window of `slotClaim(celular)` (its `windows` order), and its last send by now. */
  counts: Array<{ n: number; oldest: number | null }>;
  lastSend: number | null;
  /** Whether the first of `queue` is the line's head (a page after the first starts behind others). */
  firstIsHead: boolean;
}

export interface QueuedItem {
  lease_until: number | null;
  proximo_intento_at: number | null;
  intentos?: number;
  enviar_en?: number | null;
}

export interface QueueSettings {
  tz: string;
  gapMinMs: number;
  gapMaxMs: number;
}

const CAP_MOTIVO: Record<number, Motivo> = { 60_000: 'cupo_minuto', 3_600_000: 'cupo_hora', 86_400_000: 'cupo_dia' };

/**
 * Each message's estimated `due_at` (ms) and `motivo`, in the queue's order.
 * The head's due time is the latest of what holds it (hours, a retry, a cap
 * window rolling, the gap); each one behind it comes a mean gap after the one
 * before, and no earlier than its caps' windows allow. Null `due_at`: no time
 * can be told (the line is not active).
 */
export function whyWaiting<T extends QueuedItem>(line: QueueLine, queue: T[], now: number, s: QueueSettings): Array<{ due_at: number | null; motivo: Motivo }> {
  const { celular } = line;
  const meanGap = Math.round((s.gapMinMs + s.gapMaxMs) / 2);
  const blocked = line.clienteEstado !== 'activo' || celular.estado !== 'activo' || !celular.gateway_instancia;
  const claim = slotClaim(celular, now, 0, s.tz);
  const caps = claim.windows.map((ms, i) => ({ ms, cap: claim.room[i]! + 1, n: line.counts[i]?.n ?? 0, oldest: line.counts[i]?.oldest ?? null }));
  let prev: number | null = null;
  return queue.map((m, i) => {
    if (m.lease_until !== null && m.lease_until > now) {
      prev = now;
      return { due_at: now, motivo: 'enviando' };
    }
    const behind = i > 0 || !line.firstIsHead;
    if (blocked) return { due_at: null, motivo: behind ? 'en_turno' : 'desconectado' };
    if (celular.frenado === 1) return { due_at: null, motivo: behind ? 'en_turno' : 'frenado' };
    // The k-th send from now (0: the next) in each window: past the cap, it waits for the window to roll once per cap's worth.
    const k = i + (line.firstIsHead ? 0 : 1);
    const reasons: Array<{ at: number; motivo: Motivo }> = [];
    if (prev !== null) reasons.push({ at: prev + meanGap, motivo: 'en_turno' });
    else if (line.lastSend !== null) reasons.push({ at: line.lastSend + meanGap, motivo: behind ? 'en_turno' : 'pausa_humana' });
    // A message waiting for its own time (D-162) holds back none behind it: the chain goes on from the one before.
    const own = m.proximo_intento_at !== null && m.proximo_intento_at > now;
    const before = prev;
    if (own) reasons.push({ at: m.proximo_intento_at!, motivo: !m.intentos && m.enviar_en ? 'programado' : 'reintento' });
    for (const c of caps) {
      const rolls = Math.floor((c.n + k) / c.cap);
      if (rolls > 0) reasons.push({ at: (c.oldest ?? now) + c.ms * rolls, motivo: behind ? 'en_turno' : (CAP_MOTIVO[c.ms] ?? 'cupo_dia') });
    }
    let at = Math.max(now, ...reasons.map((r) => r.at));
    let motivo: Motivo = reasons.filter((r) => r.at > now).sort((a, b) => b.at - a.at)[0]?.motivo ?? (behind ? 'en_turno' : 'listo');
    // The window last: a send due after it closes waits for the next opening.
    const w = sendingWindow(celular.hora_inicio_permitido, celular.hora_fin_permitido, at, s.tz);
    if (!w.open) {
      at += w.opensInMs;
      if (!behind) motivo = 'fuera_de_horario';
    }
    prev = own ? before : at;
    return { due_at: at, motivo };
  });
}
