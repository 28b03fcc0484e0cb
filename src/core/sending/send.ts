import { celularInScope, type ClientPrincipal } from '../auth/auth.js';
import { slotClaim } from './caps.js';
import type { Core } from '../context.js';
import { checkDuplicate, DUPE_MAX, DUPE_WINDOW_MS, identityHash } from './dedupe.js';
import { AppError, ERRORS, fail } from '../api/errors.js';
import { sendingWindow } from '../time/hours.js';
import {
  huella,
  IDEM_TTL_MS,
  keptAnswer,
  keptRefusal,
  priorAnswer,
  REFUSED_FOR_GOOD,
  uncertainSend,
  type Answer,
  type PendingSender,
  type Replayer,
} from './idempotency.js';
import { recoverOne } from './direct-recovery.js';
import { failureClase } from './failure-class.js';
import { countLineFailure, endedFallido } from '../accounts/line-brake.js';
import { poolLine } from '../accounts/grupos.js';
import { dueTime } from './schedule.js';
import { checkVigencia, validityEnd, type Vigencia } from './validity.js';
import { parseInstant } from '../time/instant.js';
import { newMsgId } from './ids.js';
import { checkMediaUrl, type MediaTipo, type TempFiles } from '../media/media.js';
export type { MediaTipo };
import { publishMessageStatus } from '../events/message-events.js';
import { outbound } from './outbound.js';
import { countryOf, normalizeNumero } from '../accounts/phone.js';
import { iso } from '../time/clock.js';
import { FIELD_LIMITS } from '../api/limits.js';
import type { NodePresence } from '../nodes/node-presence.js';
import { GatewayFailure } from '../ports/gateway.js';
import type { AcceptedMedia } from '../ports/media.js';
import type { CelularRow, MensajePayload, MensajeRow, Tipo } from '../ports/model.js';

/**
 * One send, from a request to a committed message (docs/design.md §5): who sends,
 * to whom, what, whether it may go now, what it costs. Every HTTP send
 * endpoint, the legacy one included, ends here.
 */
export interface SendRequest {
  tipo: Tipo;
  destinatario: string;
  directo: boolean;
  /** With a client key: the line to send from. */
  celular_id?: number;
  /** With a client key, instead of `celular_id`: the pool whose line sends it (core/accounts/grupos.ts). */
  grupo?: string;
  texto?: string;
  preview_url?: boolean;
  url?: string;
  /** Base64 content already decoded and checked into its temp file (see MediaFile). */
  file?: MediaFile;
  mime?: string;
  filename?: string;
  caption?: string;
  ptt?: boolean;
  /** An Idempotency-Key (core/sending/idempotency.ts) and the endpoint it came to (aliases of one endpoint share its name). */
  idem?: { clave: string; endpoint: string };
  /** The failed message this send retries (core/queue/cola.ts): kept on the new row. */
  reintento_de?: string;
  /** Seconds a queued send may wait to be handed to the gateway (VIGENCIA_S, docs/validity.md); ignored with `directo`. */
  /** Seconds, or an RFC 3339 instant (core/sending/validity.ts). */
  vigencia?: Vigencia;
  /** The instant to send it (RFC 3339, at most 30 days ahead; core/sending/schedule.ts): a queued send only. */
  enviar_en?: string;
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
  /** A queued send accepted while the line's allowed hours are closed: when they open, and it may go (ISO). */
  envio_desde?: string;
  /** A scheduled send: its due time (ISO). */
  enviar_en?: string;
  /** A send to a pool (`grupo`): the line it picked. */
  celular_id?: number;
}

/** How the route shows a successful send (its success envelope); what a key's kept answer holds. */
export type Render = (r: SendResult) => Record<string, unknown>;

/** What the route answers: a send's success, or the answer given again for a repeated Idempotency-Key. */
export interface SendAnswer extends Answer {
  replayed: boolean;
}

/** The part of a direct send's answer known at acceptance, kept with its key until the gateway answers. */
type AcceptedPart = Pick<SendResult, 'msg_id' | 'anti_dupe' | 'saldo' | 'envio_desde' | 'enviar_en' | 'celular_id'>;

const queuedResult = (part: AcceptedPart): SendResult => ({ ...part, modo: 'cola', estado: 'pendiente' });
const directResult = (part: AcceptedPart, gatewayMsgId: string): SendResult => ({ ...part, modo: 'directo', gateway_msg_id: gatewayMsgId, estado: 'enviado' });

type Outcome = { result: SendResult } | { replay: Answer };

/** A request's key in use: the client's key and the hash of the request it names. */
interface KeyUse {
  clave: string;
  huella: string;
}

export interface SendDeps {
  /** Where uploads are staged, on this node's disk. */
  tmp: TempFiles;
  /** Where a queued message's bytes are kept until its send ends. */
  media: AcceptedMedia;
  /** Wakes the queue worker when a message is queued on a line (`m`: the accepted row, which may be sent without a look). */
  queued(celularId: number, m?: MensajeRow): void;
  /** Direct sends this process has in flight, which the recovery of stranded ones leaves alone. */
  inFlight: Set<string>;
  /** Idempotency-Keys (client and key) of requests between their key's look-up and their acceptance on this node. */
  keysAccepting: Map<string, Promise<void>>;
  /** This node among the store's (core/nodes/node-presence.ts): key turns name their holder, and a gone holder's turn is taken over. */
  node?: Pick<NodePresence, 'info' | 'holderWaitMs'>;
}

async function sendingLine(core: Pick<Core, 'store' | 'lines'>, p: ClientPrincipal, celularId: number | undefined): Promise<CelularRow> {
  if (p.kind === 'celular') return celularId === undefined || celularId === p.celular.id ? p.celular : celularInScope(core, p, celularId);
  if (celularId === undefined) fail('INVALID_PARAMS', 'celular_id is required when sending with a client key');
  // Read as a celular key's line is (its principal, D-67): kept ten seconds on a shared store, dropped by any node's change (D-80).
  const celular = await core.lines.celular(celularId);
  if (!celular || celular.cliente_id !== p.cliente.id) fail('CELULAR_NOT_FOUND', `celular ${celularId} not found`);
  return celular;
}

/** The line a request sends from: the named one, or its pool's pick for the recipient. */
async function requestLine(core: Pick<Core, 'store' | 'lines' | 'clock' | 'config'>, p: ClientPrincipal, req: SendRequest): Promise<CelularRow> {
  if (req.grupo === undefined) return sendingLine(core, p, req.celular_id);
  if (req.celular_id !== undefined) fail('INVALID_PARAMS', 'give celular_id or grupo, not both');
  return (await poolLine(core, p, req.grupo, req.destinatario, req.directo)).celular;
}

export async function send(
  core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'lines'>,
  deps: SendDeps,
  p: ClientPrincipal,
  req: SendRequest,
  render: Render,
): Promise<SendAnswer> {
  // The bytes' reference: the staged file, until a queued message has them kept.
  const bytes = { ref: req.file?.path ?? '' };
  let o: Outcome;
  try {
    o = await sendChecked(core, deps, p, req, render, bytes);
  } catch (err) {
    if (req.file) {
      // Refused: the bytes are done. But kept bytes whose acceptance may have committed (the store failed
      // mid-answer) stay: if the row exists they are its; if not, the start-up sweep takes them.
      const unknown = !(err instanceof AppError) || err.row === ERRORS.STORE_UNAVAILABLE;
      if (!(unknown && bytes.ref !== req.file.path)) await deps.media.remove(bytes.ref);
    }
    throw err;
  }
  // Sent directly, or answered again without a send: the bytes are done. A queued message's are the worker's now.
  if (req.file && ('replay' in o || o.result.modo === 'directo')) await deps.media.remove(bytes.ref);
  return 'replay' in o ? { ...o.replay, replayed: true } : { status: 200, body: render(o.result), replayed: false };
}

/** The request's canonical fields, normalised as the send uses them: what makes a repeat "the same request". */
function requestHuella(req: SendRequest, endpoint: string, celular: CelularRow): string {
  const dest = normalizeNumero(req.destinatario, countryOf(celular.numero));
  const opt = (v: string | undefined) => (v === undefined || v === '' ? null : v);
  return huella({
    endpoint,
    celular_id: celular.id,
    // A pool's send is the same request whichever line the pick names.
    ...(req.grupo !== undefined ? { celular_id: null, grupo: req.grupo.trim() } : {}),
    tipo: req.tipo,
    modo: req.directo ? 'directo' : 'cola',
    destinatario: dest.ok ? dest.numero : req.destinatario.trim(),
    texto: req.texto ?? null,
    preview_url: Boolean(req.preview_url),
    url: req.url ?? null,
    media: req.file ? `${req.file.mime} ${req.file.sha256}` : null,
    caption: opt(req.caption),
    filename: opt(req.filename),
    ptt: Boolean(req.ptt),
    // Only when given, so a key bound before the field existed names the same request.
    ...(req.vigencia !== undefined && !req.directo ? { vigencia: req.vigencia } : {}),
    ...(req.enviar_en ? { enviar_en: parseInstant(req.enviar_en) ?? req.enviar_en } : {}),
  });
}

/** How long a key's turn may be held across nodes if its holder dies before giving it back (and no node is told it is gone). */
const KEY_TURN_MS = 60_000;
/** The holder of this process's turns when it is no node of a store's (a server built without one). */
const THIS_PROCESS = newMsgId();

async function sendChecked(
  core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'lines'>,
  deps: SendDeps,
  p: ClientPrincipal,
  req: SendRequest,
  render: Render,
  bytes: { ref: string },
): Promise<Outcome> {
  if (!req.idem) return sendOnce(core, deps, p, req, render, bytes, async () => {});
  // A key's requests take turns from the key's look-up to the acceptance: a concurrent repeat then
  // finds the binding, instead of counting as a duplicate of the first for dedupe. On this node they
  // wait in line; across nodes the turn is a hold in the shared counters (Redis) naming its node, and
  // a repeat that finds it taken is answered from the binding or told to come back (608), never
  // counted. A turn whose node is gone (killed between look-up and acceptance) is taken over, and
  // one whose node has gone silent is answered with the wait until it counts as gone. A direct send
  // keeps its shared turn until the gateway answered, so a repeat that takes over a dead node's turn
  // knows nobody is sending the bound message any more and resolves it at once (N10).
  const slot = `${p.cliente.id}:${req.idem.clave}`;
  for (let held = deps.keysAccepting.get(slot); held; held = deps.keysAccepting.get(slot)) await held;
  let done!: () => void;
  const turn = new Promise<void>((r) => (done = r));
  deps.keysAccepting.set(slot, turn);
  // Not the counter key the turn once was (`idem-turn:`): a node of an older version must not find a name where it counts.
  const turnKey = `idem-hold:${slot}`;
  // Each request holds the turn under its own name on its node: a repeat on the same node is another holder.
  const me = `${deps.node?.info.id ?? THIS_PROCESS}/${newMsgId()}`;
  // Held through a direct send, whose deadline is well inside the lease (server/config.ts derivedLeaseMs).
  const turnMs = Math.max(KEY_TURN_MS, core.config.queue.leaseMs);
  let shared = false;
  let left = false;
  const releaseHere = () => {
    if (deps.keysAccepting.get(slot) === turn) deps.keysAccepting.delete(slot);
    done();
  };
  const leave = async () => {
    if (left) return;
    left = true;
    if (shared) await core.counters.unhold(turnKey, me).catch(() => undefined);
    releaseHere();
  };
  try {
    let held = await core.counters.hold(turnKey, me, turnMs);
    let waitMs = 1000;
    let tookOver = false;
    if (held.holder !== me && deps.node) {
      waitMs = await deps.node.holderWaitMs(nodeOfHolder(held.holder));
      if (waitMs === 0) {
        held = await core.counters.hold(turnKey, me, turnMs, held.holder);
        tookOver = held.holder === me;
      }
    }
    shared = held.holder === me;
    if (!shared) {
      const huella = requestHuella(req, req.idem.endpoint, await requestLine(core, p, req));
      const kept = await core.store.idemGet(p.cliente.id, req.idem.clave, core.clock.now());
      const again = await priorAnswer(core, kept, huella, deps.inFlight, { sent: directResult, render });
      // The real wait: a second for a live holder; until a silent one counts as gone; never past the hold's end.
      const retryAfter = Math.max(1, Math.ceil(Math.min(waitMs || 1000, held.resetAt - core.clock.now()) / 1000));
      return { replay: again ?? fail('IDEMPOTENCY_IN_PROGRESS', inProgress(retryAfter), { retryAfter }) };
    }
    // Holding the shared turn, nobody else can be sending a direct send bound to this key: its sender
    // died (a turn taken over) or its turn ran out. Counted in this node's memory alone, that is unknown.
    const sender: PendingSender | undefined = core.counters.degraded?.()
      ? undefined
      : { gone: tookOver ? 'holder' : 'nobody', recover: async (m) => void (await recoverOne(core, deps.media, m)) };
    return await sendOnce(core, deps, p, req, render, bytes, req.directo ? async () => releaseHere() : leave, sender);
  } finally {
    await leave();
  }
}

/** The node part of a turn's holder (`node/request`). */
const nodeOfHolder = (holder: string): string => holder.split('/')[0]!;

const inProgress = (retryAfter = 1) =>
  `a request with this Idempotency-Key is still being processed; retry in ${retryAfter === 1 ? 'a second' : `${retryAfter} s`} for its answer`;

async function sendOnce(
  core: Pick<Core, 'store' | 'counters' | 'gateway' | 'clock' | 'bus' | 'config' | 'lines'>,
  deps: SendDeps,
  p: ClientPrincipal,
  req: SendRequest,
  render: Render,
  bytes: { ref: string },
  acceptanceSettled: () => Promise<void>,
  sender?: PendingSender,
): Promise<Outcome> {
  const celular = await requestLine(core, p, req);
  // A repeated key is answered before anything else is checked, counted or charged.
  const replayer: Replayer<AcceptedPart, SendResult> = { sent: directResult, render };
  let key: KeyUse | undefined;
  const prior = async (k: KeyUse) =>
    priorAnswer(core, await core.store.idemGet(p.cliente.id, k.clave, core.clock.now()), k.huella, deps.inFlight, replayer, sender);
  if (req.idem) {
    key = { clave: req.idem.clave, huella: requestHuella(req, req.idem.endpoint, celular) };
    const again = await prior(key);
    if (again) return { replay: again };
  }
  // The route's schema refuses it first; the panel's form reaches this check.
  checkVigencia(req.vigencia);
  if (p.cliente.estado !== 'activo') fail('CLIENT_NOT_ACTIVE', `the client is ${p.cliente.estado}`);
  if (celular.estado !== 'activo') fail('CELULAR_NOT_ACTIVE', `celular ${celular.id} is ${celular.estado}; it must be activo (linked) to send`);
  if (req.directo && celular.frenado === 1)
    fail('LINE_BRAKED', `celular ${celular.id} is braked (${celular.frenado_motivo ?? 'its health crossed a threshold'}); resume it first, or queue the send`);
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
    // The routes' schemas refuse a longer one first (code points, as they count); the panel's form reaches this check.
    // No more UTF-16 units than the limit is no more code points: only a longer string is counted.
    if (req.texto.length > FIELD_LIMITS.mensaje && [...req.texto].length > FIELD_LIMITS.mensaje)
      fail('INVALID_PARAMS', `mensaje must be at most ${FIELD_LIMITS.mensaje} characters`);
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
  // A scheduled send (D-162): due then; its caps and hours are its line's then, its queue TTL counted from then.
  const due = dueTime(req.enviar_en, req.directo, now)?.due ?? null;
  const from = due ?? now;
  // A direct send is handed over at once: its validity is ignored, not refused (D-161).
  const vence = req.directo ? null : validityEnd(req.vigencia, from);
  const window = sendingWindow(celular.hora_inicio_permitido, celular.hora_fin_permitido, from, core.config.tz);
  // A queued send waits for the window; its answer says from when, so a script that forgot --directo learns it now.
  // The wait is whole seconds from now: the window opens on the second it lands in.
  const envioDesde = {
    ...(window.open ? {} : { envio_desde: iso(Math.floor((from + window.opensInMs) / 1000) * 1000) }),
    ...(due === null ? {} : { enviar_en: iso(due) }),
  };
  // A pool's pick is told: the client named no line.
  const picked = req.grupo === undefined ? {} : { celular_id: celular.id };
  if (req.directo) {
    if (!window.open) {
      const retryAfter = Math.ceil(window.opensInMs / 1000);
      fail(
        'OUTSIDE_HOURS',
        `outside the allowed hours ${celular.hora_inicio_permitido}-${celular.hora_fin_permitido} (${core.config.tz}); they open in ${retryAfter} s`,
        { retryAfter },
      );
    }
  }

  const dupe = await checkDuplicate(core, celular.id, identityHash({ tipo: req.tipo, destinatario, parts: identity }));
  const msgId = req.file?.msgId ?? newMsgId();
  const antiDupe = { count: dupe.count, max: DUPE_MAX, window_s: DUPE_WINDOW_MS / 1000 };
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
        expira_at: req.directo ? null : from + core.config.queue.ttlMs,
        ...(req.reintento_de ? { reintento_de: req.reintento_de } : {}),
        ...(vence === null ? {} : { vigencia_hasta: vence }),
        ...(due === null ? {} : { enviar_en: due }),
      },
      {
        charge: p.cliente.plan === 'medido',
        maxPending: req.directo ? null : core.config.queue.maxPending,
        // A direct send takes its slot in the caps in the same transaction, so nothing racing it can pass them together.
        ...(req.directo ? { slot: slotClaim(celular, now, core.config.queue.leaseMs, core.config.tz) } : {}),
        // The key is bound with the message; a queued send's answer is final at once and kept with it.
        ...(key
          ? {
              idem: {
                ...key,
                expira_at: now + IDEM_TTL_MS,
                answer: (acc) => {
                  const part: AcceptedPart = { msg_id: msgId, anti_dupe: antiDupe, saldo: acc.saldo_celular, ...envioDesde, ...picked };
                  return req.directo ? { status: null, body: JSON.stringify(part) } : keptAnswer(200, render(queuedResult(part)));
                },
              },
            }
          : {}),
      },
      now,
    );
    await acceptanceSettled();
    if (!res.ok) {
      if (res.reason === 'idempotencia' && key) {
        // A request with the same key was accepted meanwhile: this one is its repeat.
        const again = await prior(key);
        return {
          replay: again ?? fail('IDEMPOTENCY_IN_PROGRESS', inProgress(), { retryAfter: 1 }),
        };
      }
      if (res.reason === 'saldo') fail('INSUFFICIENT_BALANCE', "insufficient balance: the celular and the client's global balance are both 0", { saldo: 0 });
      if (res.reason === 'cap') {
        const retryAfter = Math.ceil(res.retryAfterMs / 1000);
        fail('RATE_CAP', `celular ${celular.id} reached its cap of ${res.cap} sends ${res.which}; retry in ${retryAfter} s`, { retryAfter });
      }
      if (res.reason === 'cola_llena')
        fail('QUEUE_FULL', `celular ${celular.id} already has ${core.config.queue.maxPending} messages waiting`, { retryAfter: 60 });
      fail('CELULAR_NOT_FOUND', `celular ${celular.id} not found`);
    }
    accepted = true;
    publishMessageStatus(core, res.mensaje, null);
    const part: AcceptedPart = { msg_id: msgId, anti_dupe: antiDupe, saldo: res.saldo_celular, ...envioDesde, ...picked };
    if (!req.directo) {
      deps.queued(celular.id, res.mensaje);
      return { result: queuedResult(part) };
    }
    deps.inFlight.add(msgId);
    try {
      const keyed = key && { cliente_id: p.cliente.id, clave: key.clave, render };
      return { result: await sendNow(core, celular, msgId, req.tipo, destinatario, payload, part, keyed, () => dupe.release()) };
    } finally {
      deps.inFlight.delete(msgId);
    }
  } finally {
    if (!accepted) await dupe.release();
  }
}

/** Keeping a key's answer is best effort: without it, the key's message says the same (core/sending/idempotency.ts). */
const quietly = (p: Promise<void>) => p.catch(() => undefined);

async function sendNow(
  core: Pick<Core, 'store' | 'gateway' | 'clock' | 'bus'>,
  celular: CelularRow,
  msgId: string,
  tipo: Tipo,
  destinatario: string,
  payload: MensajePayload,
  part: AcceptedPart,
  key: { cliente_id: number; clave: string; render: Render } | undefined,
  /** Gives the duplicate count back: a send that provably never went out is not a send to dedupe. */
  uncount: () => Promise<void>,
): Promise<SendResult> {
  try {
    if (!celular.gateway_instancia) throw new GatewayFailure(`celular ${celular.id} has no gateway session`, 'transient');
    const { gatewayMsgId } = await core.gateway.send(celular.gateway_instancia, outbound(msgId, tipo, destinatario, payload));
    const after = await core.store.markSent(msgId, gatewayMsgId, core.clock.now()).catch((err: unknown) => {
      // It went, but the store cannot record it now: say so; the recovery of stranded direct sends records it later.
      if (err instanceof AppError && err.row === ERRORS.STORE_UNAVAILABLE) {
        fail(
          'STORE_UNAVAILABLE',
          `${err.message}; msg_id ${msgId} was sent (gateway id ${gatewayMsgId}) and its state is resolved once the store takes writes again`,
        );
      }
      throw err;
    });
    if (after) publishMessageStatus(core, after, 'pendiente');
    // A failure report parked before this record and applied by it: counted as a direct send's failures are.
    if (after && endedFallido(after, 'pendiente')) await quietly(countLineFailure(core, celular.id, 'fallido'));
    const result = directResult(part, gatewayMsgId);
    if (key) await quietly(core.store.idemFinish(key.cliente_id, key.clave, msgId, keptAnswer(200, key.render(result))));
    return result;
  } catch (err) {
    if (err instanceof AppError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    // The recorded reason says a refusal for good, so a key whose answer was not kept is answered 502/704 again (core/sending/idempotency.ts).
    const clase = failureClase(err);
    const after = await core.store.failMensaje(msgId, clase === 'rechazado' ? `${REFUSED_FOR_GOOD}${reason}` : reason, clase, core.clock.now());
    if (after) publishMessageStatus(core, after, 'pendiente');
    const saldo = (await core.store.getCelular(celular.id))?.saldo_actual ?? null;
    const refusal = gatewayRefusal(err, reason, msgId, saldo);
    // Provably never sent (refused as rate-limited, or the gateway never reached): a retry under the key
    // may send. Anything else may have reached the recipient, or will be refused again: the key keeps this answer.
    const unsent = clase === 'no_enviado';
    // Nothing reached the recipient (unsent, or refused for good): retries of it never trip duplicate protection.
    if (unsent || clase === 'rechazado') await quietly(uncount());
    // Counted toward the line's health (core/accounts/line-brake.ts); weighed by its next queued failure or the health pass.
    await quietly(countLineFailure(core, celular.id, clase));
    if (key) {
      await quietly(
        unsent ? core.store.idemRelease(key.cliente_id, key.clave, msgId) : core.store.idemFinish(key.cliente_id, key.clave, msgId, keptRefusal(refusal)),
      );
    }
    throw refusal;
  }
}

/** A failure that proves the message was refused and never went (a retry fails again). */

/**
 * A direct send's gateway failure as its answer: rate-limited (429), refused
 * for good (502/704), outcome unknown (502/705: it may have gone), or failed
 * before anything went out (502/700).
 */
function gatewayRefusal(err: unknown, reason: string, msgId: string, saldo: number | null): AppError {
  if (err instanceof GatewayFailure && err.kind === 'rate_limited') {
    const retryAfter = Math.max(1, Math.ceil((err.retryAfterMs ?? 60_000) / 1000));
    return new AppError(
      'GATEWAY_RATE_LIMITED',
      `the messaging network is rate-limiting this line: ${reason} (msg_id ${msgId}; the charge was refunded); retry in ${retryAfter} s`,
      {
        saldo,
        retryAfter,
      },
    );
  }
  if (!(err instanceof GatewayFailure) || err.mayHaveSent) return uncertainSend(reason, msgId, saldo);
  if (err.kind === 'permanent') {
    return new AppError(
      'GATEWAY_REFUSED',
      `the messaging network refused the message for good: ${reason} (msg_id ${msgId}; the charge was refunded); sending it again will fail again`,
      { saldo },
    );
  }
  return new AppError(
    'GATEWAY_ERROR',
    `the messaging network failed the send before it went out: ${reason} (msg_id ${msgId}; nothing was sent; the charge was refunded)`,
    { saldo },
  );
}
