import type { ClientPrincipal } from '../auth/auth.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { mensajeView, type MensajeView } from './historial.js';
import { mensajeRowById } from './mensaje.js';
import type { MensajeHechos } from '../ports/messages.js';
import type { MensajeRow } from '../ports/model.js';
import type { EntregaDeMensaje } from '../ports/webhooks.js';
import { chargeMotivo, refundMotivo } from '../billing/recipes.js';

/**
 * One message's story (issue 36, D-98): what happened to it, in order, each
 * step with its time and the node that took it where that is recorded. Made
 * from its own row, the facts its claim and failure keep (store
 * mensajeHechos), its ledger rows and its events' webhook deliveries, each
 * read through an index by its id and bounded: the cost is the message's, not
 * the history's. A message recorded before those facts were kept shows what is
 * known (a step whose time is not known has `at` null and goes last).
 */

/** The steps, in the order they happen when two share a time. */
export const PASOS = ['aceptado', 'cobro', 'encolado', 'reclamado', 'enviado', 'entregado', 'leido', 'error', 'reembolso', 'webhook'] as const;
export type Paso = (typeof PASOS)[number];

/** Deliveries of a message's events listed, and attempts of each: beyond these, the story says how many it left out. */
export const STORY_ENTREGAS_MAX = 10;
export const STORY_INTENTOS_MAX = 10;

export interface StoryStep {
  paso: Paso;
  /** ISO 8601 in UTC; null when the time was not recorded (a message older than the record of it). */
  at: string | null;
  /** The node (`serve` process id, as `/health` and the overview name them) that took the step, when recorded. */
  nodo: string | null;
  detalle: Record<string, string | number | null>;
}

export interface Story {
  timeline: StoryStep[];
  /** Webhook attempts the timeline leaves out (past the bounds above; at least this many). */
  timeline_omitidos: number;
}

interface Timed extends StoryStep {
  ms: number | null;
}

/** The story of a row and its facts; pure (core/message-story.test.ts). */
export function buildStory(m: MensajeRow, h: MensajeHechos | null, entregas: EntregaDeMensaje[], max = { entregas: STORY_ENTREGAS_MAX }): Story {
  const steps: Timed[] = [];
  const add = (paso: Paso, ms: number | null, nodo: string | null, detalle: StoryStep['detalle'] = {}) => {
    steps.push({ paso, ms, at: ms === null ? null : iso(ms), nodo, detalle });
  };
  // The node that claimed a queued send is the one that sent it (a claim taken over is a new claim: the last is kept).
  const nodo = h?.nodo ?? null;
  add('aceptado', m.created_at, null, { modo: m.modo, tipo: m.tipo, destinatario: m.destinatario });
  if (m.modo === 'cola') add('encolado', m.created_at, null, {});
  for (const mv of h?.movimientos ?? []) {
    const paso = mv.motivo === chargeMotivo(m.msg_id) ? 'cobro' : mv.motivo === refundMotivo(m.msg_id) ? 'reembolso' : null;
    if (paso) add(paso, mv.fecha, null, { monto: mv.monto, saldo: mv.saldo_resultante, balance: mv.celular_id === null ? 'global' : 'celular' });
  }
  // The last claim: a retried send's earlier claims are not kept (the send's attempts count them, `intentos`).
  if (h?.reclamado_at != null) add('reclamado', h.reclamado_at, nodo, {});
  if (m.enviado_at !== null) add('enviado', m.enviado_at, m.modo === 'cola' ? nodo : null, { gateway_msg_id: m.gateway_msg_id, intentos: m.intentos });
  if (m.entregado_at !== null) add('entregado', m.entregado_at, null, {});
  if (m.leido_at !== null) add('leido', m.leido_at, null, {});
  if (m.estado === 'error') add('error', h?.error_at ?? null, null, { error_clase: m.error_clase, error: m.error });
  let omitidos = 0;
  entregas.forEach((e, i) => {
    if (i >= max.entregas) {
      omitidos += e.intentos;
      return;
    }
    const listed = attemptsOf(e);
    omitidos += Math.max(0, e.intentos - listed.length);
    const estado = estadoOf(e.data);
    for (const a of listed) {
      add('webhook', a.fecha, a.nodo, {
        evento: e.evento,
        estado,
        intento: a.n,
        status: a.status,
        duracion_ms: a.duracion_ms,
        error: a.error,
        entrega: e.id,
      });
    }
  });
  const rank = (s: Timed) => PASOS.indexOf(s.paso);
  const order = steps.map((s, i) => ({ s, i }));
  order.sort((a, b) => (a.s.ms ?? Infinity) - (b.s.ms ?? Infinity) || rank(a.s) - rank(b.s) || a.i - b.i);
  return { timeline: order.map(({ s: { ms: _ms, ...step } }) => step), timeline_omitidos: omitidos };
}

/** A delivery's attempts: its failed ones' rows, then the one that delivered it, kept on its event row. */
function attemptsOf(e: EntregaDeMensaje): EntregaDeMensaje['fallidos'] {
  const failed = [...e.fallidos];
  if (e.entrega === 'entregado' && e.entregado_at !== null && !failed.some((f) => f.n === e.intentos)) {
    failed.push({ n: e.intentos, fecha: e.entregado_at, status: e.ultimo_status, duracion_ms: e.ultima_duracion_ms ?? 0, error: null, nodo: e.ultimo_nodo });
  }
  return failed;
}

/** The message's estado the event reported (`message.status`), or null for another kind. */
function estadoOf(data: string): string | null {
  try {
    const d = JSON.parse(data) as { estado?: unknown };
    return typeof d.estado === 'string' ? d.estado : null;
  } catch {
    return null;
  }
}

/** One message and its story, under the lookup's rules (core/history/mensaje.ts): the same refusals, then three reads by its id. */
export async function mensajeStory(core: Pick<Core, 'store'>, p: ClientPrincipal, msgId: string): Promise<{ mensaje: MensajeView } & Story> {
  const m = await mensajeRowById(core, p, msgId);
  const [h, entregas] = await Promise.all([
    core.store.mensajeHechos(m.cliente_id, m.msg_id),
    core.store.entregasDeMensaje(m.cliente_id, m.msg_id, { entregas: STORY_ENTREGAS_MAX, intentos: STORY_INTENTOS_MAX }),
  ]);
  return { mensaje: mensajeView(m), ...buildStory(m, h, entregas) };
}

/** A node's id as people compare it in a table: its first 8 characters (the answer's JSON has it whole). */
export const nodoCorto = (nodo: string): string => nodo.slice(0, 8);

/** A step's detail in a line of words, for the CLI's table and the panel. */
export function detalleText(s: Pick<StoryStep, 'paso' | 'detalle'>): string {
  const d = s.detalle;
  switch (s.paso) {
    case 'aceptado':
      return `${d.tipo ?? ''} to ${d.destinatario ?? ''} (${d.modo === 'cola' ? 'queued' : 'direct'})`;
    case 'encolado':
      return "in its line's queue";
    case 'cobro':
    case 'reembolso':
      return `${Number(d.monto) > 0 ? '+' : ''}${d.monto} on the ${d.balance} balance, now ${d.saldo}`;
    case 'reclamado':
      return 'by the queue worker';
    case 'enviado':
      return `${d.gateway_msg_id ? `gateway id ${d.gateway_msg_id}` : 'sent'}${Number(d.intentos) > 1 ? ` (attempt ${d.intentos})` : ''}`;
    case 'entregado':
      return 'delivery receipt';
    case 'leido':
      return 'read receipt';
    case 'error':
      return `${d.error_clase ?? ''}: ${d.error ?? ''}`;
    case 'webhook': {
      const answer = d.status !== null ? `HTTP ${d.status}` : `failed: ${d.error ?? 'no answer'}`;
      return `${d.evento}${d.estado ? ` (${d.estado})` : ''} attempt ${d.intento}: ${answer} in ${d.duracion_ms} ms`;
    }
  }
}
