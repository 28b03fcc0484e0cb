import { createHash } from 'node:crypto';
import { chmodSync, constants as fsConstants, mkdirSync } from 'node:fs';
import { open, readdir, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fail } from './errors.js';
import { sniffMime } from './media-sniff.js';
import { probeUrl } from './media-url.js';
import type { Tipo } from './ports.js';

/**
 * Media rules for sends (spec, Limits; DESIGN §5): per-type size limits and
 * MIME lists, strict base64 decoding with the MIME sniffed from the bytes,
 * media URL checks, and the temp files that hold decoded bytes until sent.
 */

export type MediaTipo = Exclude<Tipo, 'texto'>;

export interface MediaRule {
  base64MaxBytes: number;
  urlMaxBytes: number;
  mimes: readonly string[];
}

const MB = 1024 * 1024;

export const MEDIA_RULES: Record<MediaTipo, MediaRule> = {
  imagen: { urlMaxBytes: 5 * MB, base64MaxBytes: 16 * MB, mimes: ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] },
  documento: {
    // The spec gives no limit for documents by URL; 100 MB is ours (the usual network limit for documents).
    urlMaxBytes: 100 * MB,
    base64MaxBytes: 50 * MB,
    mimes: [
      'application/pdf',
      'application/msword',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/vnd.ms-excel',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'application/vnd.ms-powerpoint',
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
      'text/plain',
      'text/csv',
      'application/zip',
    ],
  },
  audio: { urlMaxBytes: 16 * MB, base64MaxBytes: 16 * MB, mimes: ['audio/mpeg', 'audio/ogg', 'audio/opus', 'audio/wav', 'audio/mp4', 'audio/aac'] },
  // The spec gives no limit for video by URL; 50 MB is ours, the same as base64.
  video: { urlMaxBytes: 50 * MB, base64MaxBytes: 50 * MB, mimes: ['video/mp4', 'video/quicktime', 'video/3gpp', 'video/webm'] },
  // The spec gives no limit for stickers by URL; 1 MB is ours, the same as base64.
  sticker: { urlMaxBytes: 1 * MB, base64MaxBytes: 1 * MB, mimes: ['image/webp', 'image/png'] },
};

/** "17.2 MB"; whole megabytes without decimals; bytes when one decimal would hide the excess (1 MB + 1 byte). */
function sizeText(bytes: number, max: number): { size: string; max: string } {
  const maxText = max % MB === 0 ? `${max / MB} MB` : `${(max / MB).toFixed(1)} MB`;
  const rounded = (bytes / MB).toFixed(1);
  if (Number(rounded) * MB <= max) return { size: `${bytes} bytes`, max: `${maxText} (${max} bytes)` };
  return { size: `${rounded} MB`, max: maxText };
}

function tooLarge(tipo: MediaTipo, bytes: number, max: number, what: string): never {
  const t = sizeText(bytes, max);
  fail('MEDIA_TOO_LARGE', `${what} too large: ${t.size}; the maximum for ${tipo} is ${t.max}`);
}

/** Lower case, no parameters; undefined when empty. */
function normalizeMime(m: string | undefined): string | undefined {
  const v = m?.split(';')[0]?.trim().toLowerCase();
  return v ? v : undefined;
}

// 1 for the standard alphabet (A-Z a-z 0-9 + /), 2 for '=', 3 for ignorable whitespace.
const B64 = new Uint8Array(128);
for (let c = 65; c <= 90; c++) B64[c] = 1;
for (let c = 97; c <= 122; c++) B64[c] = 1;
for (let c = 48; c <= 57; c++) B64[c] = 1;
B64[43] = 1;
B64[47] = 1;
B64[61] = 2;
for (const c of [9, 10, 11, 12, 13, 32]) B64[c] = 3;

function describeChar(c: number): string {
  if (c >= 33 && c <= 126) return `'${String.fromCharCode(c)}'`;
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * One pass over the text, no allocation: checks the alphabet and where '='
 * may stand, and counts significant characters so the decoded size is known
 * before decoding.
 */
function scanBase64(s: string, start: number): { n: number; pad: number; hasWhitespace: boolean; hasSpace: boolean } {
  let n = 0;
  let pad = 0;
  let hasWhitespace = false;
  let hasSpace = false;
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const k = c < 128 ? B64[c] : 0;
    if (k === 1) {
      if (pad > 0) fail('BASE64_INVALID', `invalid base64: '=' padding may only stand at the end (data continues at offset ${i})`);
      n++;
    } else if (k === 2) {
      pad++;
      n++;
      if (pad > 2) fail('BASE64_INVALID', `invalid base64: more than two '=' padding characters (offset ${i})`);
    } else if (k === 3) {
      hasWhitespace = true;
      if (c === 32) hasSpace = true;
    } else {
      const hint = c === 45 || c === 95 ? " (base64url is not accepted: use '+' and '/')" : '';
      fail('BASE64_INVALID', `invalid base64: character ${describeChar(c)} at offset ${i} is not in the standard alphabet${hint}`);
    }
  }
  return { n, pad, hasWhitespace, hasSpace };
}

/** Splits a `data:<mime>[;param];base64,` prefix off; `start` is where the base64 begins. */
function splitDataUri(input: string): { start: number; mime: string | undefined } {
  if (!/^data:/i.test(input.slice(0, 5))) return { start: 0, mime: undefined };
  const comma = input.indexOf(',', 5);
  if (comma < 0 || comma > 512) fail('BASE64_INVALID', "invalid data URI: expected 'data:<mime>;base64,<data>'");
  const parts = input.slice(5, comma).split(';').map((p) => p.trim().toLowerCase());
  if (!parts.slice(1).includes('base64')) fail('BASE64_INVALID', "invalid data URI: only base64 data URIs are accepted ('data:<mime>;base64,<data>')");
  return { start: comma + 1, mime: normalizeMime(parts[0]) };
}

const allowedList = (rule: MediaRule): string => rule.mimes.join(', ');

/**
 * Strict base64 (data URI or raw; whitespace ignored) to bytes, refusing
 * before decoding what is too large, then sniffing the MIME from the bytes.
 */
export function decodeBase64Media(tipo: MediaTipo, input: string, declaredMime?: string): { bytes: Buffer; mime: string; sha256: string } {
  const rule = MEDIA_RULES[tipo];
  const text = input.trim();
  if (text === '') fail('BASE64_INVALID', 'invalid base64: the content is empty');
  const { start, mime: uriMime } = splitDataUri(text);
  const { n, pad, hasWhitespace, hasSpace } = scanBase64(text, start);
  if (n === 0) fail('BASE64_INVALID', 'invalid base64: the content is empty');
  if (n % 4 !== 0) {
    // An unencoded '+' in a form body arrives as a space, which we ignore, so the length breaks.
    const hint = hasSpace ? " (a '+' sent unencoded in a form body becomes a space)" : '';
    fail('BASE64_INVALID', `invalid base64: length ${n} is not a multiple of 4 (missing or extra '=' padding?)${hint}`);
  }
  const size = (n / 4) * 3 - pad;
  if (size > rule.base64MaxBytes) tooLarge(tipo, size, rule.base64MaxBytes, 'file');

  // DESIGN §5: a declared MIME outside the list is refused as well. application/octet-stream
  // says "type unknown", not a type, so it is treated as no declaration.
  const declaredParam = normalizeMime(declaredMime);
  for (const [m, where] of [
    [declaredParam, 'declared'],
    [uriMime, 'in the data URI'],
  ] as const) {
    if (m !== undefined && m !== 'application/octet-stream' && !rule.mimes.includes(m)) {
      fail('MEDIA_TYPE_NOT_ALLOWED', `MIME ${m} (${where}) is not allowed for ${tipo}; allowed: ${allowedList(rule)}`);
    }
  }
  const declared = [declaredParam, uriMime].find((m) => m !== undefined && m !== 'application/octet-stream');

  const data = start === 0 ? text : text.slice(start);
  const bytes = Buffer.from(hasWhitespace ? data.replace(/[\t\n\v\f\r ]+/g, '') : data, 'base64');
  if (bytes.length > rule.base64MaxBytes) tooLarge(tipo, bytes.length, rule.base64MaxBytes, 'file');

  const sniffed = sniffMime(bytes, { tipo, declared });
  // Only plain text can go unrecognised and still be what it says (a CSV in Latin-1, say).
  const mime = sniffed ?? (declared === 'text/plain' || declared === 'text/csv' ? declared : null);
  if (mime === null) {
    fail('MEDIA_TYPE_NOT_ALLOWED', `the content's type could not be recognised${declared ? ` (declared ${declared})` : ''}; allowed for ${tipo}: ${allowedList(rule)}`);
  }
  if (!rule.mimes.includes(mime)) {
    fail('MEDIA_TYPE_NOT_ALLOWED', `the content is ${mime}${declared && declared !== mime ? ` (declared ${declared})` : ''}, which is not allowed for ${tipo}; allowed: ${allowedList(rule)}`);
  }
  return { bytes, mime, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/**
 * Checks a media URL: http(s), not a private address (unless allowed), reachable,
 * and a declared size within the type's limit. The Content-Type is reported, not
 * judged (servers lie). `url` in the result is the address after redirects.
 */
export async function checkMediaUrl(
  tipo: MediaTipo,
  url: string,
  opts: { allowPrivate: boolean; timeoutMs?: number },
): Promise<{ url: string; bytes: number | null; mime: string | null }> {
  const rule = MEDIA_RULES[tipo];
  const probed = await probeUrl(url, { allowPrivate: opts.allowPrivate, timeoutMs: opts.timeoutMs, label: 'media URL' });
  if (probed.bytes !== null && probed.bytes > rule.urlMaxBytes) tooLarge(tipo, probed.bytes, rule.urlMaxBytes, 'media URL file');
  return probed;
}

const MSG_ID = /^[0-9a-f-]{36}$/;

/**
 * Temp files for decoded base64 media: `<dataDir>/tmp/<msg_id>.bin`, mode 0600,
 * never named after a client's filename. Removed when the send ends; `sweep`
 * at start-up removes whatever no pending message needs.
 */
export class TempFiles {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    try {
      chmodSync(this.dir, 0o700);
    } catch {
      // Not ours to tighten (another owner); the files themselves are still 0600.
    }
  }

  /** The path a message's file has (whether or not it exists). */
  pathFor(msgId: string): string {
    if (!MSG_ID.test(msgId)) throw new Error(`TempFiles: not a msg_id: ${JSON.stringify(msgId).slice(0, 60)}`);
    return join(this.dir, `${msgId}.bin`);
  }

  async write(msgId: string, bytes: Buffer): Promise<string> {
    const path = this.pathFor(msgId);
    // O_NOFOLLOW: never write through a symlink planted under the name.
    const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | (fsConstants.O_NOFOLLOW ?? 0);
    const fh = await open(path, flags, 0o600);
    try {
      await fh.chmod(0o600); // the file may have existed with other bits
      await fh.writeFile(bytes);
    } catch (err) {
      await fh.close().catch(() => {});
      await unlink(path).catch(() => {});
      throw err;
    }
    await fh.close();
    return path;
  }

  async remove(path: string): Promise<void> {
    const abs = resolve(path);
    if (dirname(abs) !== this.dir) throw new Error(`TempFiles: refusing to remove a path outside ${this.dir}`);
    try {
      await unlink(abs);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** Deletes every file in the directory not in `keep` (paths, or names relative to the directory). */
  async sweep(keep: Iterable<string>): Promise<number> {
    const kept = new Set<string>();
    for (const k of keep) kept.add(resolve(this.dir, k));
    let removed = 0;
    for (const entry of await readdir(this.dir, { withFileTypes: true })) {
      if (entry.isDirectory()) continue;
      const path = join(this.dir, entry.name);
      if (kept.has(path)) continue;
      try {
        await unlink(path);
        removed++;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return removed;
  }
}
