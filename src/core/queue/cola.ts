import { actorOf, celularInScope, type ClientPrincipal } from '../auth/auth.js';
import { slotClaim } from '../sending/caps.js';
import { effectiveCaps } from '../sending/warmup.js';
import { iso } from '../time/clock.js';
import type { Core } from '../context.js';
import { AppError, fail } from '../api/errors.js';
import { retryAllowed } from '../sending/failure-class.js';
import { mediaObject } from '../history/historial.js';
import { publishMessageStatus } from '../events/message-events.js';
import type { AcceptedMedia } from '../ports/media.js';
import type { CelularRow, MensajePayload, MensajeRow } from '../ports/model.js';
import type { CancelResult, QueuedRow } from '../ports/queue.js';
import { send, type SendDeps, type SendRequest } from '../sending/send.js';
import { whyWaiting, type Motivo } from './queue-wait.js';

/**
 * The queue as people act on it (issue 36, D-95..D-97): a line's (or a
 * client's) pending queued messages in order with why each waits; cancel one,
 * a selection or a whole line (each ends `error`, class `cancelado`, refunded
 * like any failure, its event sent); retry failed messages as new sends. The
 * API route, the CLI and the panel all call these.
 */

export const COLA_POR_PAGINA = 50;
export const COLA_POR_PAGINA_MAX = 500;
/** The most msg_ids one cancel or retry names. */
export const COLA_IDS_MAX = 500;
/** The longest msg_id looked up (core/history/mensaje.ts). */
const MSG_ID_MAX = 64;

export interface ColaItem {
  msg_id: string;
  celular_id: number;
  destinatario: string;
  tipo: string;
  texto: string | null;
  created_at: string;
  /** Estimated; null when no time can be told (the line is not active). */
  due_at: string | null;
  /** A scheduled send's due time (D-162); null otherwise. */
  enviar_en: string | null;
  motivo: Motivo;
  intentos: number;
  /** The last failed attempt's reason, while it waits for another. */
  error: string | null;
  /** Its place in the queue: `despues` for the next page. */
  seq: number;
}

/** The caps a line of the page meets now, its warm-up plan applied (docs/warm-up.md). */
export interface ColaLinea {
  celular_id: number;
  calentamiento: string | null;
  calentamiento_dia: number | null;
  max_envios_por_minuto_efectivo: number;
  max_envios_por_hora_efectivo: number;
  max_envios_por_dia_efectivo: number | null;
}

export interface ColaPage {
  /** Pending queued messages of the lines listed (their counters). */
  total: number;
  mensajes: ColaItem[];
  /** Each line with a message on this page, in celular_id order: the caps its messages wait under. */
  lineas: ColaLinea[];
  /** The `despues` of the next page; null on the last. */
  siguiente: number | null;
}

/** The lines a listing or cancel covers: the one named (in scope), else every line the credential sees. */
async function linesOf(core: Pick<Core, 'store'>, p: ClientPrincipal, celularId: number | undefined): Promise<CelularRow[]> {
  if (celularId !== undefined) return [await celularInScope(core, p, celularId)];
  if (p.kind === 'celular') return [p.celular];
  return core.store.listCelulares(p.cliente.id);
}

/** One page of the queue in queue order (keyset by `despues`), each message with its estimated due time and reason. */
export async function listCola(
  core: Pick<Core, 'store' | 'clock' | 'config'>,
  p: ClientPrincipal,
  q: { celular_id?: number; despues?: number; por_pagina?: number },
): Promise<ColaPage> {
  const porPagina = q.por_pagina ?? COLA_POR_PAGINA;
  if (!Number.isInteger(porPagina) || porPagina < 1 || porPagina > COLA_POR_PAGINA_MAX)
    fail('INVALID_PARAMS', `por_pagina must be 1 to ${COLA_POR_PAGINA_MAX}`);
  const lines = await linesOf(core, p, q.celular_id);
  const ids = lines.map((l) => l.id);
  if (ids.length === 0) return { total: 0, mensajes: [], lineas: [], siguiente: null };
  const now = core.clock.now();
  const [rows, sizes] = await Promise.all([core.store.listQueue(ids, q.despues ?? 0, porPagina + 1), core.store.queueSizes(ids)]);
  const more = rows.length > porPagina;
  const page = rows.slice(0, porPagina);
  const byLine = new Map<number, QueuedRow[]>();
  for (const r of page) byLine.set(r.celular_id, [...(byLine.get(r.celular_id) ?? []), r]);
  const why = new Map<string, { due_at: number | null; motivo: Motivo }>();
  const lineas: ColaLinea[] = [];
  const { tz, queue } = core.config;
  await Promise.all(
    [...byLine].map(async ([id, list]) => {
      const celular = lines.find((l) => l.id === id)!;
      const claim = slotClaim(celular, now, 0, tz);
      const e = effectiveCaps(celular, now, tz);
      lineas.push({
        celular_id: id,
        calentamiento: celular.calentamiento,
        calentamiento_dia: e.dia,
        max_envios_por_minuto_efectivo: e.max_envios_por_minuto,
        max_envios_por_hora_efectivo: e.max_envios_por_hora,
        max_envios_por_dia_efectivo: e.max_envios_por_dia,
      });
      const [slots, head, cliente] = await Promise.all([
        core.store.lineSlots(id, claim.windows, now),
        q.despues ? core.store.listQueue([id], 0, 1) : Promise.resolve(list.slice(0, 1)),
        p.cliente.id === celular.cliente_id ? Promise.resolve(p.cliente) : core.store.getCliente(celular.cliente_id),
      ]);
      const line = {
        celular,
        clienteEstado: cliente?.estado ?? 'baja',
        counts: slots.counts,
        lastSend: slots.last,
        firstIsHead: head[0]?.seq === list[0]!.seq,
      };
      const answers = whyWaiting(line, list, now, { tz, gapMinMs: queue.gapMinMs, gapMaxMs: queue.gapMaxMs });
      list.forEach((m, i) => why.set(m.msg_id, answers[i]!));
    }),
  );
  return {
    total: sizes.reduce((n, s) => n + s.pendientes, 0),
    mensajes: page.map((m) => {
      const w = why.get(m.msg_id)!;
      return {
        msg_id: m.msg_id,
        celular_id: m.celular_id,
        destinatario: m.destinatario,
        tipo: m.tipo,
        texto: m.texto,
        created_at: iso(m.created_at),
        due_at: w.due_at === null ? null : iso(w.due_at),
        enviar_en: m.enviar_en ? iso(m.enviar_en) : null,
        motivo: w.motivo,
        intentos: m.intentos,
        error: m.error,
        seq: m.seq,
      };
    }),
    lineas: lineas.sort((a, b) => a.celular_id - b.celular_id),
    siguiente: more ? page[page.length - 1]!.seq : null,
  };
}

export type CancelOutcome = 'cancelado' | 'enviando' | 'no_pendiente' | 'directo' | 'no_encontrado';

export interface CancelAnswer {
  cancelados: number;
  no_cancelados: number;
  /** Credits put back, in total (each to the balance that paid). */
  reembolso: number;
  resultados: Array<{ msg_id: string; resultado: CancelOutcome; reembolso: number }>;
}

/** A cancelled message's reason, as its history shows it. */
const CANCEL_REASON = 'cancelled while queued';

/** Checked ids: trimmed, non-empty, within bounds, no repeats. */
function msgIdsOf(raw: string[] | undefined): string[] {
  const ids = [...new Set((raw ?? []).map((s) => s.trim()).filter((s) => s.length > 0))];
  if (ids.length === 0) fail('INVALID_PARAMS', 'msg_ids: give at least one msg_id');
  if (ids.length > COLA_IDS_MAX) fail('INVALID_PARAMS', `msg_ids: at most ${COLA_IDS_MAX} at once`);
  const long = ids.find((s) => s.length > MSG_ID_MAX);
  if (long !== undefined) fail('INVALID_PARAMS', `msg_ids: an id is at most ${MSG_ID_MAX} characters`);
  return ids;
}

/** Whether the credential may act on the message: its client's, and its own line's for a celular key. */
function inScope(p: ClientPrincipal, m: MensajeRow | null): m is MensajeRow {
  return m !== null && m.cliente_id === p.cliente.id && (p.kind !== 'celular' || m.celular_id === p.celular.id);
}

/**
 * Cancels the named queued messages, or with `celular_id` and `todos` every
 * one of that line pending now (in batches of the listing's size). Each is
 * its own compare-and-set against the queue worker's claim: one being sent
 * is answered `enviando` and left alone. Audited once, with the counts.
 */
export async function cancelCola(
  core: Pick<Core, 'store' | 'clock' | 'bus'>,
  media: Pick<AcceptedMedia, 'remove'>,
  p: ClientPrincipal,
  q: { msg_ids?: string[]; celular_id?: number; todos?: boolean },
): Promise<CancelAnswer> {
  const answer: CancelAnswer = { cancelados: 0, no_cancelados: 0, reembolso: 0, resultados: [] };
  const one = async (m: MensajeRow) => {
    const r: CancelResult = await core.store.cancelQueued(m.msg_id, CANCEL_REASON, core.clock.now());
    if (r.ok) {
      publishMessageStatus(core, r.mensaje, 'pendiente');
      const file = (JSON.parse(r.mensaje.payload ?? '{}') as MensajePayload).file;
      if (file) await media.remove(file).catch(() => undefined);
      answer.cancelados++;
      answer.reembolso += r.reembolso;
      answer.resultados.push({ msg_id: m.msg_id, resultado: 'cancelado', reembolso: r.reembolso });
    } else {
      answer.no_cancelados++;
      answer.resultados.push({ msg_id: m.msg_id, resultado: r.reason, reembolso: 0 });
    }
  };
  let celularId: number | null = null;
  if (q.todos) {
    if (q.msg_ids?.length) fail('INVALID_PARAMS', 'give msg_ids or celular_id with todos=1, not both');
    if (q.celular_id === undefined) fail('INVALID_PARAMS', 'todos=1 needs celular_id: the line whose whole queue is cancelled');
    celularId = (await celularInScope(core, p, q.celular_id)).id;
    // Only what was pending when it started: the queue's order is arrival, so the first message accepted since ends it.
    const start = core.clock.now();
    for (let after = 0; ;) {
      const read = await core.store.listQueue([celularId], after, COLA_POR_PAGINA_MAX);
      const batch = read.filter((m) => m.created_at <= start);
      for (const m of batch) await one(m);
      if (read.length < COLA_POR_PAGINA_MAX || batch.length < read.length) break;
      after = batch[batch.length - 1]!.seq;
    }
  } else {
    if (q.celular_id !== undefined) fail('INVALID_PARAMS', 'celular_id cancels a whole line only with todos=1; to cancel some messages give msg_ids');
    for (const id of msgIdsOf(q.msg_ids)) {
      const m = await core.store.getMensaje(id);
      if (!inScope(p, m)) {
        answer.no_cancelados++;
        answer.resultados.push({ msg_id: id, resultado: 'no_encontrado', reembolso: 0 });
        continue;
      }
      await one(m);
    }
  }
  const cancelled = answer.resultados.filter((r) => r.resultado === 'cancelado').map((r) => r.msg_id);
  await core.store.audit(
    {
      actor: actorOf(p),
      accion: 'mensaje.cancelar',
      objeto_tipo: celularId === null ? 'mensaje' : 'celular',
      objeto_id: celularId,
      cliente_id: p.cliente.id,
      detalle: {
        todos: Boolean(q.todos),
        cancelados: answer.cancelados,
        no_cancelados: answer.no_cancelados,
        reembolso: answer.reembolso,
        msg_ids: cancelled.slice(0, COLA_IDS_MAX),
      },
    },
    core.clock.now(),
  );
  return answer;
}

export interface RetryAnswer {
  reintentados: number;
  rechazados: number;
  resultados: Array<{ msg_id: string; nuevo_msg_id: string; saldo: number } | { msg_id: string; api_codigo: number; api_texto: string; mensaje: string }>;
}

/** The send that retries a failed message: the same line, recipient and content, queued. Refused (630) when its class does not allow it. */
function retryRequest(m: MensajeRow): SendRequest {
  if (m.estado !== 'error') fail('RETRY_NOT_ALLOWED', `message ${m.msg_id} is ${m.estado}: only a failed message can be retried`);
  if (!retryAllowed(m.error_clase)) {
    const why =
      m.error_clase === 'rechazado'
        ? 'the network refused it for good'
        : m.error_clase === 'incierto'
          ? 'it may have reached the recipient'
          : 'its failure is not classified';
    fail('RETRY_NOT_ALLOWED', `message ${m.msg_id} cannot be retried: ${why} (error_clase ${m.error_clase ?? 'null'}); send it anew if you mean to`);
  }
  const payload = JSON.parse(m.payload ?? '{}') as MensajePayload;
  const media = mediaObject(m.media);
  const base = { tipo: m.tipo, destinatario: m.destinatario, directo: false, celular_id: m.celular_id, reintento_de: m.msg_id };
  if (m.tipo === 'texto') return { ...base, texto: m.texto ?? '', ...(payload.preview_url ? { preview_url: true } : {}) };
  const url = typeof media?.url === 'string' ? media.url : undefined;
  if (!url) fail('RETRY_NOT_ALLOWED', `message ${m.msg_id} cannot be retried: its uploaded media is not kept after the send; send it anew`);
  return {
    ...base,
    url,
    ...(m.texto !== null ? { caption: m.texto } : {}),
    ...(typeof media?.filename === 'string' ? { filename: media.filename } : {}),
    ...(payload.ptt ? { ptt: true } : {}),
  };
}

/**
 * Retries failed messages: each a new queued send of the same content from
 * the same line, charged as any send, its row naming the old one
 * (`reintento_de`). A message's retry is bound to an Idempotency-Key made
 * from its id, so retrying it again (a double click, two operators) answers
 * the same new msg_id while the key lives (24 h) instead of sending twice.
 * One msg_id refused is answered as that refusal; of several, each outcome
 * is listed.
 */
export async function retryMensajes(
  core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'lines'>,
  deps: SendDeps,
  p: ClientPrincipal,
  rawIds: string[] | undefined,
  endpoint: string,
): Promise<RetryAnswer> {
  const answer: RetryAnswer = { reintentados: 0, rechazados: 0, resultados: [] };
  const render = (r: { msg_id: string; saldo: number }) => ({ msg_id: r.msg_id, saldo: r.saldo });
  const ids = msgIdsOf(rawIds);
  for (const id of ids) {
    try {
      const m = await core.store.getMensaje(id);
      if (!inScope(p, m)) fail('MENSAJE_NOT_FOUND', `message ${id} not found`);
      const req = { ...retryRequest(m), idem: { clave: `reintento:${m.msg_id}`, endpoint } };
      const sent = await send(core, deps, p, req, render);
      const body = sent.body as { msg_id: string; saldo: number };
      answer.reintentados++;
      answer.resultados.push({ msg_id: id, nuevo_msg_id: body.msg_id, saldo: body.saldo });
    } catch (err) {
      // One message asked for: its refusal is the answer (a 409, a 402...); of several, each says its own.
      if (!(err instanceof AppError) || ids.length === 1) throw err;
      answer.rechazados++;
      answer.resultados.push({ msg_id: id, api_codigo: err.row.codigo, api_texto: err.row.texto, mensaje: err.message });
    }
  }
  const done = answer.resultados.flatMap((r) => ('nuevo_msg_id' in r ? [{ de: r.msg_id, nuevo: r.nuevo_msg_id }] : []));
  await core.store.audit(
    {
      actor: actorOf(p),
      accion: 'mensaje.reintentar',
      objeto_tipo: 'mensaje',
      objeto_id: null,
      cliente_id: p.cliente.id,
      detalle: { reintentados: answer.reintentados, rechazados: answer.rechazados, msg_ids: done },
    },
    core.clock.now(),
  );
  return answer;
}
