import { FIELD_LIMITS } from '../../core/api/limits.js';
import { validFor } from '../duration.js';
import { httpUrl, phone } from '../parse.js';
import { missingColumns, render, type Piece } from './template.js';
import { parseInstant } from '../../core/time/instant.js';

/** The optional column that schedules a row (the API's `enviar_en`, D-162). */
export const ENVIAR_EN = 'enviar_en';

/** The column that gives a row's validity (docs/validity.md), read when the file has it. */
export const VIGENCIA_COLUMN = 'vigencia';

/** What a row sends: text, or a file (by URL or from disk) with the text as its caption. */
export type MediaKind = 'image' | 'document' | 'audio' | 'video' | 'sticker';
export const MEDIA_KINDS: readonly MediaKind[] = ['image', 'document', 'audio', 'video', 'sticker'];

/** How rows become messages: the command's flags, checked. */
export interface BulkSpec {
  /** `--text`: the parsed template. */
  template?: Piece[];
  /** `--text-column`: the text as it is in that column. */
  textColumn?: string;
  /** `--to-column` (default `destinatario`). */
  toColumn: string;
  /** `--media-column`: a URL or a local file per row. */
  mediaColumn?: string;
  /** `--media-type`; absent: from each file's extension. */
  mediaType?: MediaKind;
}

/** One row ready to send, or the reason it cannot be (reported for that row; the others go on). */
export type Prepared =
  | {
      ok: true;
      row: number;
      destinatario: string;
      texto: string;
      media?: { source: string; kind: MediaKind };
      vigencia?: number | string;
      grupo?: string;
      enviar_en?: string;
    }
  | { ok: false; row: number; destinatario: string; error: string };

/** The columns the flags name that the header lacks: checked before any send (exit 2). */
export function specMissing(spec: BulkSpec, header: readonly string[]): string[] {
  const named = [spec.toColumn, ...(spec.textColumn ? [spec.textColumn] : []), ...(spec.mediaColumn ? [spec.mediaColumn] : [])];
  const have = new Set(header);
  const fromFlags = named.filter((c) => !have.has(c));
  const fromTemplate = spec.template ? missingColumns(spec.template, header) : [];
  return [...new Set([...fromFlags, ...fromTemplate])];
}

const EXTENSIONS: Record<string, MediaKind> = {
  jpg: 'image',
  jpeg: 'image',
  png: 'image',
  gif: 'image',
  webp: 'image',
  mp3: 'audio',
  ogg: 'audio',
  opus: 'audio',
  m4a: 'audio',
  aac: 'audio',
  wav: 'audio',
  mp4: 'video',
  mov: 'video',
  '3gp': 'video',
  webm: 'video',
};

/** The kind of a file by its extension (of a URL's path too); anything else goes as a document. */
export function mediaKindOf(source: string): MediaKind {
  let path = source;
  if (/^https?:\/\//i.test(source)) {
    try {
      path = new URL(source).pathname;
    } catch {
      return 'document';
    }
  }
  const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase() ?? '';
  return EXTENSIONS[ext] ?? 'document';
}

const isUrl = (s: string) => /^https?:\/\//i.test(s);
const MAX_TEXT = FIELD_LIMITS.mensaje;
const MAX_CAPTION = FIELD_LIMITS.caption;
const checkPhone = phone(FIELD_LIMITS.destinatario);
const checkUrl = httpUrl(FIELD_LIMITS.url);

/** The server's own reading of a recipient (`--dry-run`): undefined when it takes the number, else why not. */
export type NumeroCheck = (destinatario: string) => string | undefined;

/**
 * A row as the message it sends; what the server would refuse for its shape
 * is refused here, before sending. With `numero` (the dry run) the recipient
 * is also read as the server reads it.
 */
export function prepareRow(spec: BulkSpec, row: number, record: Readonly<Record<string, string>>, numero?: NumeroCheck): Prepared {
  const destinatario = (record[spec.toColumn] ?? '').trim();
  const refuse = (error: string): Prepared => ({ ok: false, row, destinatario, error });
  if (destinatario === '') return refuse(`no recipient in column "${spec.toColumn}"`);
  try {
    checkPhone(destinatario);
  } catch (err) {
    return refuse(`recipient "${destinatario}": ${(err as Error).message}`);
  }
  const why = numero?.(destinatario);
  if (why !== undefined) return refuse(`recipient ${why}`);
  // The column `vigencia`, when the file has one: the row's validity (as --valid-for, or an instant as --valid-until; empty: none).
  const validez = (record[VIGENCIA_COLUMN] ?? '').trim();
  let vigencia: { vigencia?: number | string } = {};
  if (validez !== '') {
    try {
      vigencia = { vigencia: parseInstant(validez) === null ? validFor(validez) : validez };
    } catch (err) {
      return refuse(`${VIGENCIA_COLUMN} "${validez}": ${(err as Error).message}`);
    }
  }
  // A column `enviar_en` schedules its row (`send --at`); empty: as soon as possible.
  const enviarEn = (record[ENVIAR_EN] ?? '').trim();
  if (enviarEn !== '' && parseInstant(enviarEn) === null)
    return refuse(`enviar_en "${enviarEn}" is not an RFC 3339 instant with its zone, such as 2026-12-01T09:30:00-03:00`);
  const at = enviarEn === '' ? {} : { enviar_en: enviarEn };
  const texto = spec.template ? render(spec.template, record) : spec.textColumn ? (record[spec.textColumn] ?? '') : '';
  // A `grupo` column: the row goes through that pool (docs/pools.md) instead of the run's line.
  const pool = (record.grupo ?? '').trim() === '' ? {} : { grupo: (record.grupo ?? '').trim() };
  const source = spec.mediaColumn ? (record[spec.mediaColumn] ?? '').trim() : undefined;
  const chars = [...texto].length;
  if (source === undefined) {
    if (texto.trim() === '') return refuse('the text is empty');
    if (chars > MAX_TEXT) return refuse(`the text has ${chars} characters; at most ${MAX_TEXT}`);
    return { ok: true, row, destinatario, texto, ...vigencia, ...pool, ...at };
  }
  if (source === '') return refuse(`no file or URL in column "${spec.mediaColumn}"`);
  if (isUrl(source)) {
    try {
      checkUrl(source);
    } catch (err) {
      return refuse(`media "${source}": ${(err as Error).message}`);
    }
  }
  const kind = spec.mediaType ?? mediaKindOf(source);
  if ((kind === 'audio' || kind === 'sticker') && texto !== '') return refuse(`${kind} has no caption; send it without --text`);
  if (chars > MAX_CAPTION) return refuse(`the caption has ${chars} characters; at most ${MAX_CAPTION}`);
  return { ok: true, row, destinatario, texto, media: { source, kind }, ...vigencia, ...pool, ...at };
}
