import { createHash, type Hash } from 'node:crypto';
import { fail } from '../api/errors.js';
import type { MediaTipo } from './media.js';
import { tooLarge } from './media-size.js';

/**
 * Strict base64 (raw or a `data:<mime>;base64,` URI) decoded piece by piece:
 * the text may arrive in any number of pieces, cut anywhere, and is never
 * held whole. Each piece is checked before it is decoded (alphabet, where
 * '=' may stand, the decoded size against the limit), so a piece that breaks
 * a rule is refused without decoding it, and the size limit is enforced as
 * soon as it is passed. The SHA-256 of the bytes is computed on the way.
 */

// 1 for the standard alphabet (A-Z a-z 0-9 + /), 2 for '=', 3 for ignorable whitespace.
const B64 = new Uint8Array(128);
for (let c = 65; c <= 90; c++) B64[c] = 1;
for (let c = 97; c <= 122; c++) B64[c] = 1;
for (let c = 48; c <= 57; c++) B64[c] = 1;
B64[43] = 1;
B64[47] = 1;
B64[61] = 2;
for (const c of [9, 10, 11, 12, 13, 32]) B64[c] = 3;

const NOT_ALPHABET = /[^A-Za-z0-9+/]/g;

/** What String.prototype.trim removes: leading and trailing runs of these never count. */
const TRIMMED = /\s/;

/** A data URI's comma must come within this many characters (the header is small). */
const DATA_URI_MAX_HEADER = 512;

function describeChar(c: number): string {
  if (c >= 33 && c <= 126) return `'${String.fromCharCode(c)}'`;
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Lower case, no parameters; undefined when empty. */
export function normalizeMime(m: string | undefined): string | undefined {
  const v = m?.split(';')[0]?.trim().toLowerCase();
  return v ? v : undefined;
}

export interface Base64Result {
  /** Decoded size in bytes. */
  size: number;
  sha256: string;
  /** The MIME of a data URI (normalised), if the text was one. */
  uriMime: string | undefined;
}

export class Base64Decoder {
  private readonly hash: Hash = createHash('sha256');
  /** Characters seen after the leading whitespace: offsets in messages count from there. */
  private offset = 0;
  private started = false;
  private finished = false;
  /** The start of the text while deciding whether it is a data URI. */
  private head: string | null = '';
  private uriMime: string | undefined;
  /** Significant characters (alphabet and '='), and how many of them were '='. */
  private n = 0;
  private pad = 0;
  private size = 0;
  /** A space followed by data (a trailing one is trimmed, as by String.trim). */
  private spaceSeen = false;
  private spacePending = false;
  /** A non-ASCII whitespace character (offset, code): an error unless only whitespace follows it. */
  private trailingAt = -1;
  private trailingChar = 0;
  /** Significant characters not yet decoded (fewer than a quartet). */
  private carry = '';

  /**
   * @param tipo names the type in the size message
   * @param maxBytes the decoded size refused past
   * @param onUri called once the data URI header is read (a MIME check may refuse it early)
   */
  constructor(
    private readonly tipo: MediaTipo,
    private readonly maxBytes: number,
    private readonly onUri?: (mime: string | undefined) => void,
  ) {}

  /**
   * Checks and decodes one piece; returns the bytes it completes (maybe none).
   * `final` marks the last piece: the length checks then come before the
   * size check, as for a text checked whole.
   */
  write(text: string, final = false): Buffer {
    if (this.finished) throw new Error('Base64Decoder: write after the end');
    this.finished = final;
    let s = text;
    if (!this.started) {
      let i = 0;
      while (i < s.length && TRIMMED.test(s[i]!)) i++;
      s = s.slice(i);
      if (s === '' && !final) return EMPTY;
      this.started = true;
    }
    if (this.head !== null) {
      const h = (this.head += s);
      if (!final && this.mayBeDataUriHeader(h)) return EMPTY;
      this.head = null;
      s = this.splitDataUri(h);
    }
    return this.decode(s, final);
  }

  /** The end of the text (if `write(..., true)` did not mark it): the checks, the last bytes, the result. */
  end(): Base64Result & { tail: Buffer } {
    const tail = this.finished ? EMPTY : this.write('', true);
    return { tail, size: this.size, sha256: this.hash.digest('hex'), uriMime: this.uriMime };
  }

  /** True while `h` could still be the start of a data URI whose comma has not come yet. */
  private mayBeDataUriHeader(h: string): boolean {
    if (h.length < 5) return 'data:'.startsWith(h.toLowerCase());
    return /^data:/i.test(h) && h.indexOf(',', 5) < 0 && h.length <= DATA_URI_MAX_HEADER;
  }

  /** Splits a `data:<mime>[;param];base64,` header off `h`; returns the base64 after it. */
  private splitDataUri(h: string): string {
    if (!/^data:/i.test(h.slice(0, 5))) return h;
    const comma = h.indexOf(',', 5);
    if (comma < 0 || comma > DATA_URI_MAX_HEADER) fail('BASE64_INVALID', "invalid data URI: expected 'data:<mime>;base64,<data>'");
    const parts = h
      .slice(5, comma)
      .split(';')
      .map((p) => p.trim().toLowerCase());
    if (!parts.slice(1).includes('base64')) fail('BASE64_INVALID', "invalid data URI: only base64 data URIs are accepted ('data:<mime>;base64,<data>')");
    this.uriMime = normalizeMime(parts[0]);
    this.onUri?.(this.uriMime);
    this.offset = comma + 1;
    return h.slice(comma + 1);
  }

  private decode(s: string, final: boolean): Buffer {
    // The hot loop keeps its counters in locals and writes them back once.
    let ws = false;
    let n = this.n;
    let pad = this.pad;
    const base = this.offset;
    for (let i = 0; i < s.length; i++) {
      if (pad === 0 && this.trailingAt < 0 && !this.spacePending) {
        // Runs of the alphabet, the bulk of the text, are skipped by the regex engine.
        NOT_ALPHABET.lastIndex = i;
        const m = NOT_ALPHABET.exec(s);
        const j = m ? m.index : s.length;
        n += j - i;
        i = j;
        if (i === s.length) break;
      }
      const c = s.charCodeAt(i);
      const k = c < 128 ? B64[c]! : 0;
      if (k === 3) {
        ws = true;
        if (c === 32) this.spacePending = true;
        continue;
      }
      if (k === 0 && TRIMMED.test(s[i]!)) {
        if (this.trailingAt < 0) {
          this.trailingAt = base + i;
          this.trailingChar = c;
        }
        ws = true;
        continue;
      }
      if (this.trailingAt >= 0) this.badChar(this.trailingChar, this.trailingAt);
      if (this.spacePending) {
        this.spaceSeen = true;
        this.spacePending = false;
      }
      if (k === 1) {
        if (pad > 0) fail('BASE64_INVALID', `invalid base64: '=' padding may only stand at the end (data continues at offset ${base + i})`);
        n++;
      } else if (k === 2) {
        pad++;
        n++;
        if (pad > 2) fail('BASE64_INVALID', `invalid base64: more than two '=' padding characters (offset ${base + i})`);
      } else {
        this.badChar(c, base + i);
      }
    }
    this.n = n;
    this.pad = pad;
    this.offset += s.length;
    if (final) {
      if (this.n === 0) fail('BASE64_INVALID', 'invalid base64: the content is empty');
      if (this.n % 4 !== 0) {
        // An unencoded '+' in a form body arrives as a space, which we ignore, so the length breaks.
        const hint = this.spaceSeen ? " (a '+' sent unencoded in a form body becomes a space)" : '';
        fail('BASE64_INVALID', `invalid base64: length ${this.n} is not a multiple of 4 (missing or extra '=' padding?)${hint}`);
      }
    }
    const decodedSoFar = Math.floor((this.n * 3) / 4) - this.pad;
    if (decodedSoFar > this.maxBytes) tooLarge(this.tipo, decodedSoFar, this.maxBytes, 'file');

    const clean = this.carry + (ws ? s.replace(/[\s]+/g, '') : s);
    const whole = final ? clean.length : clean.length - (clean.length % 4);
    this.carry = clean.slice(whole);
    if (whole === 0) return EMPTY;
    const bytes = Buffer.from(whole === clean.length ? clean : clean.slice(0, whole), 'base64');
    this.size += bytes.length;
    this.hash.update(bytes);
    return bytes;
  }

  private badChar(c: number, at: number): never {
    const hint = c === 45 || c === 95 ? " (base64url is not accepted: use '+' and '/')" : '';
    return fail('BASE64_INVALID', `invalid base64: character ${describeChar(c)} at offset ${at} is not in the standard alphabet${hint}`);
  }
}

const EMPTY = Buffer.alloc(0);
