import { randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { API } from '../../core/api/api-routes.js';
import { FIELD_LIMITS, FILENAME_PATTERN } from '../../core/api/limits.js';
import type { CelularView } from '../../core/api/views.js';
import type { Ctx } from '../context.js';
import { ApiError, CliError, CODIGO_UNCERTAIN, usage } from '../exit-codes.js';
import { EXIT } from '../../shared/exit-codes.js';
import type { FieldFlags } from '../field-errors.js';
import type { CtxOf } from '../main.js';
import { emit } from '../output.js';
import { checkArg, httpUrl, idempotencyKey, int, phone, positiveInt, text } from '../parse.js';
import { cappedSleep, withRetry } from '../retry.js';
import { duration, timerMs, validFor } from '../duration.js';
import { parseInstant } from '../../core/time/instant.js';
import { registerSendBulk } from './send-bulk.js';
import { fetchMensaje, printMensaje } from './mensaje.js';
import { WAIT_ESTADOS, waitForMensaje, type WaitEstado } from '../wait-delivery.js';

export { withRetry } from '../retry.js';

interface SendBody {
  msg_id: string;
  modo: string;
  estado: string;
  gateway_msg_id?: string;
  anti_dupe?: { count: number; max: number };
  saldo: number | null;
  /** Set by the client when the server replayed the key's first answer (Idempotent-Replayed). */
  replayed?: boolean;
  /** A queued send outside the line's hours: when they open. */
  envio_desde?: string;
  /** A scheduled send (--at): when it is due. */
  enviar_en?: string;
}

export interface Common {
  directo?: boolean;
  celular?: number;
  /** --grupo: a pool's name; the server picks its line (docs/pools.md). */
  grupo?: string;
  retry: number;
  idempotencyKey?: string;
  waitWindow?: boolean;
  /** ms */
  maxWait?: number;
  /** --wait: the state to wait for after acceptance (true: entregado). */
  wait?: WaitEstado | true;
  /** --timeout of --wait, ms (commander's default: 60 s). */
  timeout?: number;
  /** --valid-for: the send's `vigencia`, seconds (docs/validity.md). */
  validFor?: number;
  /** --valid-until: the send's `vigencia` as an RFC 3339 instant. */
  validUntil?: string;
  /** --at: the RFC 3339 instant to send it (`enviar_en`). */
  at?: string;
}

/** The endpoints by URL and by base64, the per-type base64 field and the core's media type of each kind. */
const KINDS = {
  image: { byUrl: API.mensajeImagen, byBase64: API.mensajeImagenBase64, field: 'imageBase64', tipo: 'imagen' },
  document: { byUrl: API.mensajeDocumento, byBase64: API.mensajeDocumentoBase64, field: 'documentBase64', tipo: 'documento' },
  audio: { byUrl: API.mensajeAudio, byBase64: API.mensajeAudioBase64, field: 'audioBase64', tipo: 'audio' },
  video: { byUrl: API.mensajeVideo, byBase64: API.mensajeVideoBase64, field: 'videoBase64', tipo: 'video' },
  sticker: { byUrl: API.mensajeSticker, byBase64: API.mensajeStickerBase64, field: 'stickerBase64', tipo: 'sticker' },
} as const;
export type Kind = keyof typeof KINDS;

/** The server's limits on a send (its route schemas). */
const { mensaje: MAX_TEXT, caption: MAX_CAPTION, url: MAX_URL, filename: MAX_FILENAME } = FIELD_LIMITS;
const FILENAME = new RegExp(FILENAME_PATTERN);

/** API fields of a send and what sets each, to explain a 400 in the command's terms. */
const SEND_FIELDS: FieldFlags = {
  destinatario: '<destinatario>',
  celular_id: '--celular',
  grupo: '--grupo',
  mensaje: '[texto]',
  preview_url: '--preview-url',
  url: '<archivo_o_url>',
  caption: '--caption',
  filename: '--filename',
  ptt: '--ptt',
  enviar_en: '--at',
  imageBase64: '<archivo_o_url>',
  documentBase64: '<archivo_o_url>',
  audioBase64: '<archivo_o_url>',
  videoBase64: '<archivo_o_url>',
  stickerBase64: '<archivo_o_url>',
  vigencia: '--valid-for or --valid-until',
};

async function readStdin(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function report(ctx: Ctx, b: SendBody): void {
  emit(ctx, b, () => {
    if (b.replayed) ctx.term.err(`replayed: this Idempotency-Key was answered before (msg_id ${b.msg_id}); nothing was sent now`);
    if (b.enviar_en) ctx.term.err(`scheduled: it stays pendiente until ${b.enviar_en} (cancel it with \`pasarela cola cancel ${b.msg_id}\`)`);
    if (b.envio_desde) ctx.term.err(`note: the line's allowed hours are closed; this queued message waits until they open (${b.envio_desde})`);
    if (ctx.term.io.stdoutIsTTY) {
      const what = b.modo === 'directo' ? ctx.term.color.green(`sent (gateway id ${b.gateway_msg_id ?? '?'})`) : ctx.term.color.cyan('queued');
      ctx.term.out(`${what}  msg_id ${b.msg_id}${b.anti_dupe ? `  (identical sends: ${b.anti_dupe.count}/${b.anti_dupe.max})` : ''}`);
    } else {
      ctx.term.out([b.msg_id, b.modo, b.estado, b.gateway_msg_id ?? ''].join('\t'));
    }
  });
}

/**
 * --wait: follows the accepted message to `target`; prints its record (exit
 * 0), or the record and why it failed (exit 10 refused for good, 7
 * otherwise), or on timeout the send's answer and where it stands (exit 11).
 */
async function settle(ctx: Ctx, b: SendBody, target: WaitEstado, timeoutMs: number): Promise<void> {
  const r = await waitForMensaje(ctx, b.msg_id, target, timeoutMs);
  if (r.kind === 'timeout') {
    report(ctx, b);
    throw new CliError(`msg_id ${b.msg_id} is ${r.estado ?? b.estado}, not ${target}, after ${Math.round(timeoutMs / 1000)} s (--timeout)`, EXIT.TIMEOUT);
  }
  printMensaje(ctx, r.answer);
  if (r.kind === 'error') {
    const m = r.answer.mensaje;
    // Its validity passed in the queue: said in words; the failure's exit code (docs/validity.md).
    if (m.error_clase === 'caducado')
      throw new CliError(`msg_id ${m.msg_id} expired: not sent within its validity (--valid-for, until ${m.vigencia_hasta ?? '?'}); refunded`, EXIT.SERVER);
    throw new CliError(
      `msg_id ${m.msg_id} ended in error (${m.error_clase ?? 'error'}): ${m.error ?? 'no reason given'}`,
      m.error_clase === 'rechazado' ? EXIT.REJECTED : EXIT.SERVER,
    );
  }
}

/** The msg_id a failed direct send's answer names: its body's field, or `msg_id ...` in its reason. */
function failedMsgId(err: ApiError): string | undefined {
  const field = (err.body as { msg_id?: unknown } | undefined)?.msg_id;
  return typeof field === 'string' ? field : /msg_id ([^\s);,]+)/.exec(err.reason)?.[1];
}

/** The record of the message a failed direct send names (`msg_id ...` in its reason), when the server has one. */
async function printFailedRecord(ctx: Ctx, err: ApiError): Promise<void> {
  const msgId = failedMsgId(err);
  if (!msgId) return;
  const record = await fetchMensaje(ctx, msgId).catch(() => null);
  if (record && !ctx.json) printMensaje(ctx, record);
}

const common = (cmd: Command) =>
  cmd
    .option('--directo', 'send now and wait for the gateway (default: the humanized queue)')
    .option('--celular <id>', "line to send from (with a client key; default: the client's only line)", positiveInt)
    .option('--grupo <nombre>', 'a pool of lines to send through instead of --celular (client key): the server picks the line')
    .addOption(
      new Option('--retry <n>', 'retries on 429, 5xx, a lost connection or a send still in flight, honouring retry_after (never on a refusal)')
        .default(0)
        .argParser(int(0, 10)),
    )
    .option(
      '--idempotency-key <key>',
      'key that makes a repeat of this send a replay of its first answer (default: a new one per invocation, the same on every retry)',
      idempotencyKey,
    )
    .option('--at <instant>', 'send it at this RFC 3339 instant, at most 30 days ahead (2026-12-01T09:30:00-03:00); queued sends only', instantArg)
    .option('--wait-window', "outside the line's allowed hours (with --directo), wait until they open and send then")
    .option('--max-wait <duration>', 'the most --retry and --wait-window may wait in all (30s, 2m); a longer wait fails at once instead', duration)
    .addOption(
      new Option('--wait [estado]', 'after acceptance, wait until the message is enviado, entregado (the default) or leido; print its record').choices(
        WAIT_ESTADOS,
      ),
    )
    .option(
      '--valid-for <duration>',
      'a queued send not handed to the gateway within this (5m, 90s, 1h; a bare number is seconds; 10s to 24h) ends in error caducado, refunded',
      validFor,
    )
    .option('--valid-until <instant>', 'the same, as the RFC 3339 instant it must be handed over by (10s to 24h after the send starts)', instantArg)
    .addOption(
      new Option('--timeout <duration>', 'how long --wait waits (60s, 5m; a bare number is seconds); then exit 11').default(60_000, '60s').argParser(seconds),
    );

/** --at: an RFC 3339 instant with its zone (the server checks how far ahead). */
function instantArg(v: string): string {
  if (parseInstant(v) === null)
    throw new InvalidArgumentError('not an RFC 3339 instant with its zone, such as 2026-12-01T09:30:00Z or 2026-12-01T06:30:00-03:00');
  return v.trim();
}

/** A duration; a bare number is seconds here (as `celular qr --timeout`). */
function seconds(v: string): number {
  return /^[0-9]+$/.test(v.trim()) ? timerMs(Number(v) * 1000) : duration(v);
}

/** A client key (WAC_...) sends from a line it names; a celular key or token is its own line. */
const isClientKey = (key: string) => /^WAC_[1-9][0-9]*_/.test(key);

/**
 * The line to send from. With a client key and no --celular: the client's
 * only line; several or none is a usage error that says what to do.
 */
export async function sendingLine(ctx: Ctx, o: Common, key: string, wait: (ms: number) => Promise<void>): Promise<number | undefined> {
  if (o.celular !== undefined || !isClientKey(key)) return o.celular;
  const b = await withRetry(ctx, o.retry, () => ctx.client().call<{ celulares: CelularView[] }>('GET', API.celulares, { key }), wait);
  const lines = b.celulares;
  if (lines.length === 1) {
    const only = lines[0]!;
    if (ctx.term.io.stderrIsTTY) ctx.term.err(`sending from celular ${only.id} (${only.numero}), this client's only line`);
    return only.id;
  }
  if (lines.length === 0)
    throw usage('this client has no line to send from; register one with `pasarela celular create NUMERO` and link it with `pasarela celular qr ID`');
  const shown = lines.slice(0, 20).map((c) => `  ${c.id}\t${c.numero}\t${c.estado}${c.nombre_interno ? `\t${c.nombre_interno}` : ''}`);
  const more = lines.length > shown.length ? `\n  ... and ${lines.length - shown.length} more (pasarela celular list)` : '';
  throw usage(`this client has ${lines.length} lines; choose one with --celular ID:\n${shown.join('\n')}${more}`);
}

/**
 * Sends one request with the invocation's Idempotency-Key, retried as --retry
 * and --wait-window allow; every attempt carries the same key, so a retry of a
 * send the server already took is answered with that first answer.
 */
async function deliver(ctx: Ctx, o: Common, endpoint: string, body: Record<string, unknown>, timeoutMs?: number): Promise<void> {
  const key = ctx.key();
  const wait = cappedSleep(ctx.env);
  if (o.grupo !== undefined && o.celular !== undefined) throw usage('give --celular or --grupo, not both');
  const celularId = o.grupo !== undefined ? undefined : await sendingLine(ctx, o, key, wait);
  const idemKey = o.idempotencyKey ?? `pasarela-${randomUUID()}`;
  if (o.at !== undefined && o.directo) throw usage('--at schedules a queued send; it cannot go with --directo, which sends now');
  if (o.validFor !== undefined && o.validUntil !== undefined) throw usage('give --valid-for or --valid-until, not both');
  const json = {
    ...body,
    ...(o.at !== undefined ? { enviar_en: o.at } : {}),
    ...(celularId !== undefined ? { celular_id: celularId } : {}),
    ...(o.grupo !== undefined ? { grupo: o.grupo } : {}),
    ...(o.validFor !== undefined ? { vigencia: o.validFor } : {}),
    ...(o.validUntil !== undefined ? { vigencia: o.validUntil } : {}),
  };
  try {
    const b = await withRetry(
      ctx,
      o.retry,
      () =>
        ctx
          .client()
          .call<SendBody>('POST', endpoint, { key, json, headers: { 'Idempotency-Key': idemKey }, fields: SEND_FIELDS, ...(timeoutMs ? { timeoutMs } : {}) }),
      wait,
      { waitWindow: Boolean(o.waitWindow), maxWaitMs: o.maxWait },
    );
    if (o.wait) await settle(ctx, b, o.wait === true ? 'entregado' : o.wait, o.timeout ?? 60_000);
    else report(ctx, b);
  } catch (err) {
    // --wait promised the record of a message that ended in error: a direct send refused at once has one too.
    if (o.wait && err instanceof ApiError && err.status >= 500) await printFailedRecord(ctx, err);
    if (err instanceof ApiError && err.apiCodigo === CODIGO_UNCERTAIN) {
      // The server answered: the key now only replays this; a new key sends a new message, maybe a second one.
      const which = failedMsgId(err) ?? 'the message';
      err.message = `${err.message}\n(msg_id ${which} may have been delivered; check \`pasarela historial\` and the recipient's chat before sending again (a new --idempotency-key sends a new message))`;
    } else if (err instanceof CliError && !(err instanceof ApiError) && err.exitCode === EXIT.UNREACHABLE && !err.neverSent && o.idempotencyKey === undefined) {
      // The CLI lost its own request (no answer, or one cut short): whether the server took it is unknown to the CLI,
      // and a repeat under the same key replays the server's answer or sends once.
      err.message = `${err.message}\n(to try again without sending it twice, repeat the command with --idempotency-key '${idemKey}')`;
    }
    throw err;
  }
}

const destinatarioArg = (v: string) => checkArg('destinatario', v, phone(40));

export interface SendTextOptions extends Common {
  destinatario: string;
  /** The text; absent or "-": read from stdin. */
  texto?: string;
  previewUrl?: boolean;
}

export async function runSendText(o: SendTextOptions, ctx: Ctx): Promise<void> {
  const { destinatario, texto } = o;
  destinatarioArg(destinatario);
  let mensaje = texto;
  if (mensaje === undefined || mensaje === '-') {
    if (mensaje === undefined && ctx.term.io.stdinIsTTY) throw usage('missing TEXTO (give it, or "-" to read it from stdin)');
    mensaje = await readStdin(ctx.term.io.stdin);
  }
  if (!mensaje) throw usage('the text is empty');
  const n = [...mensaje].length;
  if (n > MAX_TEXT) throw usage(`the text has ${n} characters; at most ${MAX_TEXT}`);
  await deliver(ctx, o, API.mensajeTexto, {
    destinatario,
    ...(o.directo ? { directo: 1 } : {}),
    mensaje,
    ...(o.previewUrl ? { preview_url: 1 } : {}),
  });
}

export interface SendMediaOptions extends Common {
  kind: Kind;
  destinatario: string;
  /** A local file (sent as base64) or an http(s) URL. */
  source: string;
  caption?: string;
  filename?: string;
  ptt?: boolean;
}

export async function runSendMedia(o: SendMediaOptions, ctx: Ctx): Promise<void> {
  const { kind, destinatario, source } = o;
  destinatarioArg(destinatario);
  const { byUrl, byBase64, field, tipo } = KINDS[kind];
  const base = { destinatario, ...(o.directo ? { directo: 1 } : {}) };
  const extra = {
    ...(o.caption !== undefined ? { caption: o.caption } : {}),
    ...(o.ptt ? { ptt: 1 } : {}),
  };
  if (/^https?:\/\//i.test(source)) {
    checkArg('archivo_o_url', source, httpUrl(MAX_URL));
    await deliver(ctx, o, byUrl, { ...base, url: source, ...extra, ...(o.filename ? { filename: o.filename } : {}) }, 120_000);
    return;
  }
  const cannot = (err: NodeJS.ErrnoException) => {
    throw new CliError(`cannot read ${source}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, EXIT.USAGE);
  };
  const info = await stat(source).catch(cannot);
  if (!info.isFile()) throw usage(`${source} is not a file`);
  if (info.size === 0) throw usage(`${source} is empty`);
  // Loaded here only: the limits are the server's own table.
  const { MEDIA_RULES } = await import('../../core/media/media.js');
  const max = MEDIA_RULES[tipo].base64MaxBytes;
  if (info.size > max) throw usage(`${source} is ${mb(info.size)}; ${noun(kind)} sent as a file may be at most ${mb(max)}`);
  const filename = o.filename ?? basename(source);
  if (kind === 'document' && o.filename === undefined && !FILENAME.test(filename)) {
    throw usage(`the document's name "${filename}" has no extension; give the name the recipient sees with --filename NAME.pdf`);
  }
  const bytes = await readFile(source).catch(cannot);
  await deliver(ctx, o, byBase64, { ...base, [field]: bytes.toString('base64'), filename, ...extra }, 120_000);
}

/** `pasarela send text|image|document|audio|video|sticker`: one message. */
export function registerSend(program: Command, ctxOf: CtxOf): void {
  const send = program.command('send').description('send a message (queued by default, --directo for now)');

  common(
    send
      .command('text <destinatario> [texto]')
      .description('send a text; TEXTO "-" (or none, off a TTY) reads it from stdin')
      .option('--preview-url', 'show a preview of the first link'),
  ).action((destinatario: string, texto: string | undefined, o: Omit<SendTextOptions, 'destinatario' | 'texto'>, cmd: Command) =>
    runSendText({ destinatario, texto, ...o }, ctxOf(cmd)),
  );

  for (const kind of Object.keys(KINDS) as Kind[]) {
    const cmd = common(
      send
        .command(`${kind} <destinatario> <archivo_o_url>`)
        .description(`send ${kind === 'image' ? 'an image' : kind === 'audio' ? 'audio' : `a ${kind}`}: a local file goes as base64, an http(s) URL by URL`),
    );
    if (kind !== 'sticker' && kind !== 'audio') cmd.option('--caption <texto>', `caption (up to ${MAX_CAPTION} characters)`, text(0, MAX_CAPTION));
    if (kind === 'document') {
      cmd.option('--filename <nombre>', "file name shown to the recipient, with its extension (default: the local file's name)", checkFilename);
    }
    if (kind === 'audio') cmd.option('--ptt', 'send as a voice note');
    cmd.action((destinatario: string, source: string, o: Omit<SendMediaOptions, 'kind' | 'destinatario' | 'source'>, c: Command) =>
      runSendMedia({ kind, destinatario, source, ...o }, ctxOf(c)),
    );
  }

  registerSendBulk(send, ctxOf);
}

/** --filename: what the server's pattern takes (a name with an extension, no path). */
function checkFilename(v: string): string {
  if (v.length > MAX_FILENAME || !FILENAME.test(v))
    throw new InvalidArgumentError(`expected a file name with its extension and no folder, such as factura.pdf (at most ${MAX_FILENAME} characters)`);
  return v;
}

const noun = (k: Kind) => (k === 'image' ? 'an image' : k === 'audio' ? 'an audio file' : `a ${k}`);
const mb = (n: number) => `${Math.round((n / (1024 * 1024)) * 10) / 10} MB`;
