import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { API } from '../../core/api/api-routes.js';
import { ERRORS } from '../../core/api/errors.js';
import type { ApiClient } from '../client.js';
import { ApiError, CliError } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import { retryPlan } from '../retry.js';
import type { MediaKind, Prepared } from './rows.js';

/** One NDJSON line of `send bulk` (docs/design.md §10): the row's outcome. */
export interface RowOutcome {
  row: number;
  destinatario: string;
  ok: boolean;
  msg_id: string | null;
  modo: string | null;
  http: number | null;
  api_codigo: number | null;
  error: string | null;
  /** Present (true) when the server gave a first answer again (`Idempotent-Replayed`): an earlier run sent this row; nothing was sent now. */
  replayed?: true;
}

/** Why a row's answer ends the whole run: every later row would get the same. */
export type StopReason = 'balance' | 'auth' | 'refused_now' | 'unreachable';

export interface RowResult {
  outcome: RowOutcome;
  /** Set when the answer stops the run (402, bad key, line or client not active, no server). */
  stop?: StopReason;
  /** The row was not sent (the run stopped while it waited): reported as not sent, not as refused. */
  unsent?: boolean;
}

const BY_URL: Record<MediaKind, string> = {
  image: API.mensajeImagen,
  document: API.mensajeDocumento,
  audio: API.mensajeAudio,
  video: API.mensajeVideo,
  sticker: API.mensajeSticker,
};
const BY_BASE64: Record<MediaKind, { path: string; field: string }> = {
  image: { path: API.mensajeImagenBase64, field: 'imageBase64' },
  document: { path: API.mensajeDocumentoBase64, field: 'documentBase64' },
  audio: { path: API.mensajeAudioBase64, field: 'audioBase64' },
  video: { path: API.mensajeVideoBase64, field: 'videoBase64' },
  sticker: { path: API.mensajeStickerBase64, field: 'stickerBase64' },
};

/** The largest local file per kind: the server's own table (loaded once, only with media). */
async function base64Max(kind: MediaKind): Promise<number> {
  const { MEDIA_RULES } = await import('../../core/media/media.js');
  const tipo = { image: 'imagen', document: 'documento', audio: 'audio', video: 'video', sticker: 'sticker' } as const;
  return MEDIA_RULES[tipo[kind]].base64MaxBytes;
}

/** A local file's problem (missing, empty, too big), or undefined; checked in the first pass and again before sending. */
export async function localFileProblem(source: string, kind: MediaKind): Promise<string | undefined> {
  const info = await stat(source).catch((err: NodeJS.ErrnoException) => err);
  if (info instanceof Error) return `cannot read ${source}: ${info.code === 'ENOENT' ? 'no such file' : info.message}`;
  if (!info.isFile()) return `${source} is not a file`;
  if (info.size === 0) return `${source} is empty`;
  const max = await base64Max(kind);
  if (info.size > max) return `${source} is ${info.size} bytes; a ${kind} sent as a file may be at most ${max}`;
  return undefined;
}

/** The request of a prepared row: the endpoint and its JSON body; a string is the row's local problem. */
export async function requestOf(
  p: Extract<Prepared, { ok: true }>,
  common: Record<string, unknown>,
): Promise<{ path: string; json: Record<string, unknown> } | string> {
  const { celular_id, ...rest } = common;
  const base = {
    destinatario: p.destinatario,
    ...(p.grupo !== undefined ? { ...rest, grupo: p.grupo } : { ...rest, ...(celular_id !== undefined ? { celular_id } : {}) }),
    ...(p.vigencia !== undefined ? { vigencia: p.vigencia } : {}),
    ...(p.enviar_en ? { enviar_en: p.enviar_en } : {}),
  };
  if (!p.media) return { path: API.mensajeTexto, json: { ...base, mensaje: p.texto } };
  const { source, kind } = p.media;
  const caption = p.texto !== '' ? { caption: p.texto } : {};
  if (/^https?:\/\//i.test(source)) return { path: BY_URL[kind], json: { ...base, url: source, ...caption } };
  const problem = await localFileProblem(source, kind);
  if (problem) return problem;
  const bytes = await readFile(source);
  const { path, field } = BY_BASE64[kind];
  return { path, json: { ...base, [field]: bytes.toString('base64'), filename: basename(source), ...caption } };
}

/**
 * A pause every worker honours: a 429 with retry_after holds all rows for
 * that long (the cap is the line's, not the row's), instead of each worker
 * finding out on its own.
 */
export class Gate {
  private pause: Promise<void> | undefined;
  constructor(private readonly sleep: (ms: number) => Promise<void>) {}
  hold(ms: number): Promise<void> {
    this.pause ??= this.sleep(ms).finally(() => (this.pause = undefined));
    return this.pause;
  }
  async pass(): Promise<void> {
    while (this.pause) await this.pause;
  }
}

const REPLAYED = { replayed: true } as const;

/** A duplicate block (306) is a row repeated in the file, not a rate: the row is refused, not retried. */
const CODIGO_DUPLICATE = ERRORS.DUPLICATE_BLOCK.codigo;

function stopOf(err: CliError): StopReason | undefined {
  switch (err.exitCode) {
    case EXIT.BALANCE:
      return 'balance';
    case EXIT.AUTH:
      return 'auth';
    case EXIT.REFUSED_NOW:
      return 'refused_now';
    case EXIT.UNREACHABLE:
      return 'unreachable';
    default:
      return undefined;
  }
}

export interface SendRowDeps {
  client: ApiClient;
  key: string;
  gate: Gate;
  /** Waits between retries of 5xx and lost connections (rejects when the run stops). */
  sleep: (ms: number) => Promise<void>;
  /** Retries of 5xx, a lost connection or a send in flight (429s are waited for without limit). */
  retries: number;
  stopped: () => boolean;
  /** Said once per wait (stderr). */
  note: (text: string) => void;
}

interface SendBody {
  msg_id: string;
  modo: string;
  /** Set by the client when the answer was a replay. */
  replayed?: boolean;
}

/** Sends one row under its key, waiting out 429s and retrying what may succeed later; never throws for the server's answer. */
export async function sendRow(
  d: SendRowDeps,
  p: Extract<Prepared, { ok: true }>,
  req: { path: string; json: Record<string, unknown> },
  idemKey: string,
): Promise<RowResult> {
  const base = { row: p.row, destinatario: p.destinatario };
  let attempt = 0;
  for (;;) {
    try {
      await d.gate.pass();
    } catch {
      return { outcome: { ...base, ok: false, msg_id: null, modo: null, http: null, api_codigo: null, error: 'not sent: the run stopped' }, unsent: true };
    }
    if (d.stopped())
      return { outcome: { ...base, ok: false, msg_id: null, modo: null, http: null, api_codigo: null, error: 'not sent: the run stopped' }, unsent: true };
    try {
      const b = await d.client.call<SendBody>('POST', req.path, { key: d.key, json: req.json, headers: { 'Idempotency-Key': idemKey }, timeoutMs: 120_000 });
      return {
        outcome: { ...base, ok: true, msg_id: b.msg_id, modo: b.modo, http: 200, api_codigo: null, error: null, ...(b.replayed === true ? REPLAYED : {}) },
      };
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      const api = err instanceof ApiError ? err : undefined;
      const plan = retryPlan(err);
      try {
        if (api?.status === 429 && api.apiCodigo !== CODIGO_DUPLICATE && plan.kind === 'retry') {
          const ms = (api.retryAfter ?? 1) * 1000;
          d.note(`${api.reason}; waiting ${Math.ceil(ms / 1000)} s (retry_after) before sending more`);
          await d.gate.hold(ms);
          continue;
        }
        if (plan.kind === 'retry' && attempt < d.retries) {
          const ms = plan.seconds !== undefined ? plan.seconds * 1000 : Math.min(60_000, 1000 * 2 ** attempt);
          attempt += 1;
          await d.sleep(ms);
          continue;
        }
      } catch {
        // The wait was cut short by a stop: the row was never taken.
        return { outcome: { ...base, ok: false, msg_id: null, modo: null, http: null, api_codigo: null, error: 'not sent: the run stopped' }, unsent: true };
      }
      const body = (api?.body ?? {}) as { msg_id?: unknown };
      const outcome: RowOutcome = {
        ...base,
        ok: false,
        msg_id: typeof body.msg_id === 'string' ? body.msg_id : null,
        modo: null,
        http: api?.status ?? null,
        api_codigo: api?.apiCodigo ?? null,
        error: err.message,
        ...(api?.replayed ? REPLAYED : {}),
      };
      const stop = stopOf(err);
      return stop ? { outcome, stop } : { outcome };
    }
  }
}
