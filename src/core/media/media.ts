import { randomUUID } from 'node:crypto';
import { chmodSync, constants as fsConstants, mkdirSync } from 'node:fs';
import { open, readdir, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Base64Decoder, normalizeMime } from './base64-stream.js';
import { fail } from '../api/errors.js';
import { tooLarge } from './media-size.js';
import { sniffMime } from './media-sniff.js';
import { probeUrl } from './media-url.js';
import type { Tipo } from '../ports/model.js';

/**
 * Media rules for sends (docs/design.md §5): per-type size limits and
 * MIME lists, the MIME checks of base64 content (decoded by base64-stream.ts),
 * media URL checks, and the temp files that hold decoded bytes until sent.
 */

export type MediaTipo = Exclude<Tipo, 'texto'>;

export interface MediaRule {
  base64MaxBytes: number;
  urlMaxBytes: number;
  mimes: readonly string[];
}

const MB = 1024 * 1024;

/** The largest media file any send carries (a call handed to another node's engine is bounded by it). */
export const MAX_MEDIA_BYTES = 100 * MB;

export const MEDIA_RULES: Record<MediaTipo, MediaRule> = {
  imagen: { urlMaxBytes: 5 * MB, base64MaxBytes: 16 * MB, mimes: ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] },
  documento: {
    // No limit is given for documents by URL; 100 MB is ours (the usual network limit for documents).
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
  // No limit is given for video by URL; 50 MB is ours, the same as base64.
  video: { urlMaxBytes: 50 * MB, base64MaxBytes: 50 * MB, mimes: ['video/mp4', 'video/quicktime', 'video/3gpp', 'video/webm'] },
  // No limit is given for stickers by URL; 1 MB is ours, the same as base64.
  sticker: { urlMaxBytes: 1 * MB, base64MaxBytes: 1 * MB, mimes: ['image/webp', 'image/png'] },
};

const allowedList = (rule: MediaRule): string => rule.mimes.join(', ');

/**
 * The declared types of a base64 file (the `mime` field, a data URI's type)
 * checked against the type's list; the one to trust when the bytes cannot
 * tell (docs/design.md §5). application/octet-stream says "type unknown", not a type,
 * so it counts as no declaration.
 */
export function checkDeclaredMime(tipo: MediaTipo, declaredParam: string | undefined, uriMime: string | undefined): string | undefined {
  const rule = MEDIA_RULES[tipo];
  for (const [m, where] of [
    [declaredParam, 'declared'],
    [uriMime, 'in the data URI'],
  ] as const) {
    if (m !== undefined && m !== 'application/octet-stream' && !rule.mimes.includes(m)) {
      fail('MEDIA_TYPE_NOT_ALLOWED', `MIME ${m} (${where}) is not allowed for ${tipo}; allowed: ${allowedList(rule)}`);
    }
  }
  return [declaredParam, uriMime].find((m) => m !== undefined && m !== 'application/octet-stream');
}

/** The type of the content given what the sniffer found (null: nothing); 415 when it is not allowed. */
export function acceptSniffed(tipo: MediaTipo, sniffed: string | null, declared: string | undefined): string {
  const rule = MEDIA_RULES[tipo];
  // Only plain text can go unrecognised and still be what it says (a CSV in Latin-1, say).
  const mime = sniffed ?? (declared === 'text/plain' || declared === 'text/csv' ? declared : null);
  if (mime === null) {
    fail(
      'MEDIA_TYPE_NOT_ALLOWED',
      `the content's type could not be recognised${declared ? ` (declared ${declared})` : ''}; allowed for ${tipo}: ${allowedList(rule)}`,
    );
  }
  if (!rule.mimes.includes(mime)) {
    fail(
      'MEDIA_TYPE_NOT_ALLOWED',
      `the content is ${mime}${declared && declared !== mime ? ` (declared ${declared})` : ''}, which is not allowed for ${tipo}; allowed: ${allowedList(rule)}`,
    );
  }
  return mime;
}

/**
 * Strict base64 (data URI or raw; whitespace ignored) to bytes in memory,
 * refusing before decoding what is too large, then sniffing the MIME from the
 * bytes. The HTTP routes decode to a file instead (same decoder and checks).
 */
export function decodeBase64Media(tipo: MediaTipo, input: string, declaredMime?: string): { bytes: Buffer; mime: string; sha256: string } {
  const rule = MEDIA_RULES[tipo];
  const decoder = new Base64Decoder(tipo, rule.base64MaxBytes);
  const bytes = decoder.write(input, true);
  const { sha256, uriMime } = decoder.end();
  const declared = checkDeclaredMime(tipo, normalizeMime(declaredMime), uriMime);
  const mime = acceptSniffed(tipo, sniffMime(bytes, { tipo, declared }), declared);
  return { bytes, mime, sha256 };
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

export interface TempFile {
  path: string;
  /** Appends; resolves once the bytes are handed to the file. */
  write(bytes: Buffer): Promise<void>;
  close(): Promise<void>;
  /** Closes (if open) and removes the file. */
  discard(): Promise<void>;
}

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

  /** A new file for a message, written piece by piece (an existing one is truncated). */
  async create(msgId: string): Promise<TempFile> {
    return this.open(this.pathFor(msgId));
  }

  /**
   * A new file under a fresh name, for bytes no message row points at (media
   * fetched at send time, a local copy of bytes kept elsewhere); the start-up
   * sweep removes any a crash left.
   */
  scratch(kind: 'fetch' | 'send' = 'fetch'): Promise<TempFile> {
    return this.open(join(this.dir, `${kind}-${randomUUID()}.bin`));
  }

  private async open(path: string): Promise<TempFile> {
    // O_NOFOLLOW: never write through a symlink planted under the name.
    const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | (fsConstants.O_NOFOLLOW ?? 0);
    const fh = await open(path, flags, 0o600);
    const discard = async () => {
      await fh.close().catch(() => {});
      await unlink(path).catch(() => {});
    };
    try {
      await fh.chmod(0o600); // the file may have existed with other bits
    } catch (err) {
      await discard();
      throw err;
    }
    return {
      path,
      write: async (bytes) => {
        for (let at = 0; at < bytes.length;) at += (await fh.write(bytes, at, bytes.length - at)).bytesWritten;
      },
      close: () => fh.close(),
      discard,
    };
  }

  async write(msgId: string, bytes: Buffer): Promise<string> {
    const file = await this.create(msgId);
    try {
      await file.write(bytes);
    } catch (err) {
      await file.discard();
      throw err;
    }
    await file.close();
    return file.path;
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
