import { celularInScope, type ClientPrincipal } from './auth.js';
import { slotClaim } from './caps.js';
import type { Core } from './context.js';
import { checkDuplicate, DUPE_MAX, DUPE_WINDOW_MS, identityHash } from './dedupe.js';
import { AppError, ERRORS, fail } from './errors.js';
import { sendingWindow } from './hours.js';
import { newMsgId } from './ids.js';
import { checkMediaUrl, type MediaTipo, type TempFiles } from './media.js';
export type { MediaTipo };
import { publishMessageStatus } from './message-events.js';
import { outbound } from './outbound.js';
import { countryOf, normalizeNumero } from './phone.js';
import { GatewayFailure, type AcceptedMedia, type CelularRow, type MensajePayload, type Tipo } from './ports.js';

/**
 * One send, from a request to a committed message (DESIGN §5): who sends,
 * to whom, what, whether it may go now, what it costs. Every HTTP send
 * endpoint, the legacy one included, ends here.
 */
export interface SendRequest {
  tipo: Tipo;
  destinatario: string;
  directo: boolean;
  /** With a client key: the line to send from. */
  celular_id?: number;
  texto?: string;
  preview_url?: boolean;
  url?: string;
  /** Base64 content already decoded and checked into its temp file (see MediaFile). */
  file?: MediaFile;
  mime?: string;
  filename?: string;
  caption?: string;
  ptt?: boolean;
}

/**
 * A decoded base64 file staged in `TempFiles` at the message's path: the
 * message takes the id its file was written under. send() owns it from the
 * call on: it removes it on any refusal and after a direct send; a queued
 * message has it kept (AcceptedMedia) until the worker is done.
 */
export interface MediaFile {
  msgId: string;
  path: string;
  bytes: number;
  mime: string;
  sha256: string;
}

export interface SendResult {
  msg_id: string;
  modo: 'cola' | 'directo';
  gateway_msg_id?: string;
  anti_dupe: { count: number; max: number; window_s: number };
  /** The line's balance after the charge. */
  saldo: number;
  estado: string;
}

export interface SendDeps {
  /** Where uploads are staged, on this node's disk. */
  tmp: TempFiles;
  /** Where a queued message's bytes are kept until its send ends. */
  media: AcceptedMedia;
  /** Wakes the queue worker when a message is queued on a line. */
  queued(celularId: number): void;
  /** Direct sends this process has in flight, which the recovery of stranded ones leaves alone. */
  inFlight: Set<string>;
}

async function sendingLine(core: Core, p: ClientPrincipal, celularId: number | undefined): Promise<CelularRow> {
  if (p.kind === 'celular') return celularId === undefined || celularId === p.celular.id ? p.celular : celularInScope(core, p, celularId);
  if (celularId === undefined) fail('INVALID_PARAMS', 'celular_id is required when sending with a client key');
  return celularInScope(core, p, celularId);
}

export async function send(core: Core, deps: SendDeps, p: ClientPrincipal, req: SendRequest): Promise<SendResult> {
  if (!req.file) return sendChecked(core, deps, p, req);
  // The bytes' reference: the staged file, until a queued message has them kept.
  const bytes = { ref: req.file.path };
  let r: SendResult;
  try {
    r = await sendChecked(core, deps, p, req, bytes);
  } catch (err) {
    // Refused: the bytes are done. But kept bytes whose acceptance may have committed (the store failed
    // mid-answer) stay: if the row exists they are its; if not, the start-up sweep takes them.
    const unknown = !(err instanceof AppError) || err.row === ERRORS.STORE_UNAVAILABLE;
    if (!(unknown && bytes.ref !== req.file.path)) await deps.media.remove(bytes.ref);
    throw err;
  }
  // Sent directly: the bytes are done. A queued message's are the worker's now.
  if (r.modo === 'directo') await deps.media.remove(bytes.ref);
  return r;
}

async function sendChecked(core: Core, deps: SendDeps, p: ClientPrincipal, req: SendRequest, bytes = { ref: '' }): Promise<SendResult> {
  const celular = await sendingLine(core, p, req.celular_id);
  if (p.cliente.estado !== 'activo') fail('CLIENT_NOT_ACTIVE', `the client is ${p.cliente.estado}`);
  if (celular.estado !== 'activo') fail('CELULAR_NOT_ACTIVE', `celular ${celular.id} is ${celular.estado}; it must be activo (linked) to send`);
  const unsupported = core.gateway.capabilities.unsupported[req.tipo];
  if (unsupported) fail('GATEWAY_UNSUPPORTED', `the ${core.gateway.name} gateway cannot send ${req.tipo} messages: ${unsupported}`);

  const dest = normalizeNumero(req.destinatario, countryOf(celular.numero));
  if (!dest.ok) fail('INVALID_PARAMS', `destinatario: ${dest.reason}`);
  const destinatario = dest.numero;

  // What is sent, and what makes it "the same" for duplicate protection.
  const payload: MensajePayload = {};
  let identity: Array<string | undefined>;
  let media: Record<string, unknown> | null = null;
  if (req.tipo === 'texto') {
    if (!req.texto) fail('INVALID_PARAMS', 'mensaje is required');
    payload.texto = req.texto;
    if (req.preview_url) payload.preview_url = true;
    identity = [req.texto];
  } else if (req.url !== undefined) {
    const checked = await checkMediaUrl(req.tipo, req.url, { allowPrivate: core.config.allowPrivateUrls });
    Object.assign(payload, { url: checked.url, caption: req.caption, filename: req.filename, ptt: req.ptt, mime: checked.mime ?? undefined });
    media = { url: req.url, ...(req.filename ? { filename: req.filename } : {}) };
    // The identity is the URL as given (a redirect to a fresh signed URL must not defeat dedupe);
    // the gateway gets the checked address after redirects.
    identity = req.tipo === 'imagen' || req.tipo === 'video' ? [req.url, req.caption] : req.tipo === 'documento' ? [req.url, req.filename] : [req.url];
  } else if (req.file !== undefined) {
    const f = req.file;
    Object.assign(payload, { file: f.path, mime: f.mime, caption: req.caption, filename: req.filename, ptt: req.ptt });
    media = { mime: f.mime, bytes: f.bytes, ...(req.filename ? { filename: req.filename } : {}) };
    identity = [f.sha256];
  } else {
    fail('INVALID_PARAMS', 'url or base64 content is required');
  }

  const now = core.clock.now();
  if (req.directo) {
    const window = sendingWindow(celular.hora_inicio_permitido, celular.hora_fin_permitido, now, core.config.tz);
    if (!window.open) {
      const retryAfter = Math.ceil(window.opensInMs / 1000);
      fail('OUTSIDE_HOURS', `outside the allowed hours ${celular.hora_inicio_permitido}-${celular.hora_fin_permitido} (${core.config.tz}); they open in ${retryAfter} s`, { retryAfter });
    }
  }

  const dupe = await checkDuplicate(core, celular.id, identityHash({ tipo: req.tipo, destinatario, parts: identity }));
  const msgId = req.file?.msgId ?? newMsgId();
  let accepted = false;
  try {
    // Queued, any node may send it: its bytes are durable where every node reads them before its row commits.
    if (req.file && !req.directo) bytes.ref = payload.file = await deps.media.keep(msgId, req.file.path, now);
    const res = await core.store.acceptMensaje(
      {
        msg_id: msgId,
        cliente_id: p.cliente.id,
        celular_id: celular.id,
        destinatario,
        tipo: req.tipo,
        modo: req.directo ? 'directo' : 'cola',
        texto: req.tipo === 'texto' ? (req.texto ?? null) : (req.caption ?? null),
        media,
        payload,
        expira_at: req.directo ? null : now + core.config.queue.ttlMs,
      },
      {
        charge: p.cliente.plan === 'medido',
        maxPending: req.directo ? null : core.config.queue.maxPending,
        // A direct send takes its slot in the caps in the same transaction, so nothing racing it can pass them together.
        ...(req.directo ? { slot: slotClaim(celular, now, core.config.queue.leaseMs) } : {}),
      },
      now,
    );
    if (!res.ok) {
      if (res.reason === 'saldo') fail('INSUFFICIENT_BALANCE', 'insufficient balance: the celular and the client\'s global balance are both 0', { saldo: 0 });
      if (res.reason === 'cap') {
        const retryAfter = Math.ceil(res.retryAfterMs / 1000);
        fail('RATE_CAP', `celular ${celular.id} reached its cap of ${res.cap} sends ${res.which}; retry in ${retryAfter} s`, { retryAfter });
      }
      if (res.reason === 'cola_llena') fail('QUEUE_FULL', `celular ${celular.id} already has ${core.config.queue.maxPending} messages waiting`, { retryAfter: 60 });
      fail('CELULAR_NOT_FOUND', `celular ${celular.id} not found`);
    }
    accepted = true;
    publishMessageStatus(core, res.mensaje, null);
    const base = { msg_id: msgId, anti_dupe: { count: dupe.count, max: DUPE_MAX, window_s: DUPE_WINDOW_MS / 1000 }, saldo: res.saldo_celular };
    if (!req.directo) {
      deps.queued(celular.id);
      return { ...base, modo: 'cola', estado: 'pendiente' };
    }
    deps.inFlight.add(msgId);
    try {
      return { ...base, modo: 'directo', ...(await sendNow(core, celular, msgId, req.tipo, destinatario, payload)) };
    } finally {
      deps.inFlight.delete(msgId);
    }
  } finally {
    if (!accepted) await dupe.release();
  }
}

async function sendNow(core: Core, celular: CelularRow, msgId: string, tipo: Tipo, destinatario: string, payload: MensajePayload) {
  try {
    if (!celular.gateway_instancia) throw new GatewayFailure(`celular ${celular.id} has no gateway session`, 'transient');
    const { gatewayMsgId } = await core.gateway.send(celular.gateway_instancia, outbound(msgId, tipo, destinatario, payload));
    const after = await core.store.markSent(msgId, gatewayMsgId, core.clock.now()).catch((err: unknown) => {
      // It went, but the store cannot record it now: say so; the recovery of stranded direct sends records it later.
      if (err instanceof AppError && err.row === ERRORS.STORE_UNAVAILABLE) {
        fail('STORE_UNAVAILABLE', `${err.message}; msg_id ${msgId} was sent (gateway id ${gatewayMsgId}) and its state is resolved once the store takes writes again`);
      }
      throw err;
    });
    if (after) publishMessageStatus(core, after, 'pendiente');
    return { gateway_msg_id: gatewayMsgId, estado: 'enviado' };
  } catch (err) {
    if (err instanceof AppError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    const after = await core.store.failMensaje(msgId, reason, core.clock.now());
    if (after) publishMessageStatus(core, after, 'pendiente');
    const saldo = (await core.store.getCelular(celular.id))?.saldo_actual ?? null;
    if (err instanceof GatewayFailure && err.kind === 'rate_limited') {
      const retryAfter = Math.max(1, Math.ceil((err.retryAfterMs ?? 60_000) / 1000));
      fail('GATEWAY_RATE_LIMITED', `the messaging network is rate-limiting this line: ${reason} (msg_id ${msgId}; the charge was refunded); retry in ${retryAfter} s`, {
        saldo,
        retryAfter,
      });
    }
    fail('GATEWAY_ERROR', `the messaging network refused the message: ${reason} (msg_id ${msgId}; the charge was refunded)`, { saldo });
  }
}
