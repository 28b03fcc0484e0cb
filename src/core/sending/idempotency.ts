import { createHash } from 'node:crypto';
import type { Core } from '../context.js';
import { AppError, errorBody, fail } from '../api/errors.js';
import type { IdemAnswer, IdemRow } from '../ports/messages.js';
import type { MensajeRow } from '../ports/model.js';

/**
 * Idempotent sends (docs/decisions.md D-29). A client may name
 * a send with a key; the key is bound to the message in the transaction that
 * accepts it, per client, for 24 h. A repeat with the same request gets the
 * first answer again and sends, counts and charges nothing; the same key with
 * another request is a conflict; a repeat while a direct send is in flight is
 * told to retry in a second. Refusals before acceptance bind nothing. A
 * direct send that provably never went out (the gateway unreachable before
 * the call, or rate-limited, refunded) unbinds its key, so a retry under it
 * sends anew; every other outcome stays bound: a key never yields two sends
 * that could both reach the recipient. One that may have gone is answered
 * 502/705 (outcome unknown), one that provably did not 502/700.
 */

export const IDEM_TTL_MS = 24 * 3_600_000;
/** Expired keys removed by each acceptance that binds one: the table stays about a day of keys. */
export const IDEM_PURGE_BATCH = 4;

/** 1 to 255 printable ASCII characters, no space at either end (read by the route schemas). */
export const IDEM_KEY = { minLength: 1, maxLength: 255, pattern: '^[!-~]([ -~]{0,253}[!-~])?$' } as const;
const KEY_RE = new RegExp(IDEM_KEY.pattern);
const RULE = `1 to ${IDEM_KEY.maxLength} printable ASCII characters, with no space at either end`;

/**
 * The key of a request: the `Idempotency-Key` header, or the `idempotency_key`
 * field for clients that cannot set headers. Both given must agree.
 */
export function idemKeyOf(header: unknown, field: unknown): string | undefined {
  const h = header === undefined ? undefined : checked(Array.isArray(header) ? header.join(', ') : header, 'the Idempotency-Key header');
  const f = field === undefined || field === null ? undefined : checked(field, 'idempotency_key');
  if (h !== undefined && f !== undefined && h !== f) {
    fail('INVALID_PARAMS', 'idempotency_key: the Idempotency-Key header and the idempotency_key field differ; send the key once');
  }
  return h ?? f;
}

function checked(v: unknown, name: string): string {
  if (typeof v !== 'string' || !KEY_RE.test(v)) fail('INVALID_PARAMS', `${name} must be ${RULE}`);
  return v;
}

/** The hash of a request's canonical fields (what the send uses, normalised): equal requests, equal hashes. */
export function huella(fields: Record<string, unknown>): string {
  const canonical = Object.keys(fields)
    .sort()
    .map((k) => [k, fields[k] ?? null]);
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/** An answer as the route gives it: status and JSON body. */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** What the core needs to answer a key again: the part of the send's answer kept at acceptance, and how a success is shown. */
export interface Replayer<Accepted, Result> {
  /** A direct send's final success from what was kept at acceptance and its gateway id. */
  sent(accepted: Accepted, gatewayMsgId: string): Result;
  render(result: Result): Record<string, unknown>;
}

/**
 * What a request with a key already bound gets: the stored answer; when the
 * send has no final answer yet (a direct send in flight), 409
 * IDEMPOTENCIA_EN_CURSO; and when it was resolved without its answer being
 * kept (a crash, a store failure mid-answer), the answer its message says.
 * Null when the key is free (never used, expired, or released).
 */
export async function priorAnswer<Accepted, Result>(
  core: Pick<Core, 'store' | 'clock'>,
  row: IdemRow | null,
  huellaNow: string,
  inFlight: ReadonlySet<string>,
  how: Replayer<Accepted, Result>,
  sender?: PendingSender,
): Promise<Answer | null> {
  if (!row) return null;
  if (row.huella !== huellaNow) {
    fail('IDEMPOTENCY_CONFLICT', `this Idempotency-Key was used for a different request (msg_id ${row.msg_id}); use a new key for a new message`);
  }
  if (row.status !== null) return { status: row.status, body: JSON.parse(row.body) as Record<string, unknown> };
  let m = inFlight.has(row.msg_id) ? null : await core.store.getMensaje(row.msg_id);
  let retryAfter = 1;
  if (m && m.estado === 'pendiente' && m.modo === 'directo' && sender) {
    // Nobody is sending it (see PendingSender): resolved now when its sender is known dead or its slot
    // (past any live send's deadline) has ended, as the recovery pass would later; else the real wait.
    const now = core.clock.now();
    if (sender.gone === 'holder' || (m.cupo_at !== null && m.cupo_at <= now)) {
      await sender.recover(m).catch(() => undefined);
      m = await core.store.getMensaje(row.msg_id);
    } else if (m.cupo_at !== null) retryAfter = Math.max(1, Math.ceil((m.cupo_at - now) / 1000));
  }
  if (!m || m.estado === 'pendiente') {
    const wait = retryAfter === 1 ? 'a second' : `${retryAfter} s`;
    fail('IDEMPOTENCY_IN_PROGRESS', `a request with this Idempotency-Key is still being processed (msg_id ${row.msg_id}); retry in ${wait} for its answer`, {
      retryAfter,
    });
  }
  if (m.enviado_at !== null && m.gateway_msg_id) {
    return { status: 200, body: how.render(how.sent(JSON.parse(row.body) as Accepted, m.gateway_msg_id)) };
  }
  // Ended in error with no answer kept, told by its class (core/sending/failure-class.ts): refused for good says
  // so (502/704), and so does a send that never reached the network, as when a crash stopped it (502/700); otherwise it may have gone (a crash mid-send, a failure whose
  // answer was not kept), so the outcome is unknown (502/705). The key stays bound either way.
  const saldo = (await core.store.getCelular(m.celular_id))?.saldo_actual ?? null;
  const reason = m.error ?? 'unknown';
  const said = `the direct send bound to this Idempotency-Key (msg_id ${m.msg_id}) ended in error: ${reason} (the charge was refunded)`;
  const err =
    m.error_clase === 'rechazado'
      ? new AppError('GATEWAY_REFUSED', `${said}; sending it again will fail again`, { saldo })
      : m.error_clase === 'no_enviado'
        ? new AppError('GATEWAY_ERROR', `${said}; nothing was sent; send it again with a new Idempotency-Key`, { saldo })
        : uncertainSend(`the direct send bound to this Idempotency-Key ended in error: ${reason}`, m.msg_id, saldo);
  return { status: err.status, body: errorBody(err) };
}

/**
 * What a repeat knows of whoever sends the pending direct send bound to its key, when it holds the
 * key's shared turn itself (core/sending/send.ts: a direct send keeps its turn until the gateway answered):
 * `holder`, it took the turn over from a node that is gone; `nobody`, no turn was held (it ran out,
 * which a live send never lets happen; or the counters lost it, so only the slot's end is trusted).
 */
export interface PendingSender {
  gone: 'holder' | 'nobody';
  /** Resolves the stranded send now (core/sending/direct-recovery.ts). */
  recover(m: MensajeRow): Promise<void>;
}

/** How the recorded reason of a send the gateway refused for good begins, for people (code reads `error_clase`). */
export const REFUSED_FOR_GOOD = 'refused for good: ';

/** A direct send that may have gone (502/705): what the client can and cannot learn, and what a new send risks. */
export function uncertainSend(reason: string, msgId: string, saldo: number | null): AppError {
  return new AppError(
    'GATEWAY_UNCERTAIN',
    `the outcome of the send is unknown, it may have been delivered: ${reason} (msg_id ${msgId} is recorded as error and the charge was refunded; ` +
      "pasarela cannot learn later whether it went): check the recipient's chat before sending it again with a new Idempotency-Key; a repeat under this key gives this answer again",
    { saldo },
  );
}

/** A final answer as kept with its key. */
export function keptAnswer(status: number, body: Record<string, unknown>): IdemAnswer {
  return { status, body: JSON.stringify(body) };
}

/** A refusal as kept with its key (the body the error handler would give). */
export function keptRefusal(err: AppError): IdemAnswer {
  return keptAnswer(err.status, errorBody(err));
}
