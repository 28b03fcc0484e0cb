import { isAscii } from 'node:buffer';
import { fail } from '../api/errors.js';

/**
 * Text reaches the store and the gateway exactly as the client meant it, or
 * not at all. A body is read in its declared charset: JSON only in UTF-8, a
 * form in UTF-8 (the default) or windows-1252 (which the labels latin1 and
 * iso-8859-1 also mean, as in browsers); another charset is refused (415).
 * Bytes that do not decode, a broken percent escape and an unpaired UTF-16
 * surrogate are refused (400) naming the field, never replaced or kept raw.
 */

export type TextCharset = 'utf-8' | 'windows-1252';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * windows-1252's 0x80-0x9F (WHATWG index); every other byte is its own code
 * point. Written out because Node's TextDecoder decodes this label as
 * ISO-8859-1 (0x80 gives U+0080, not the euro sign).
 */
const CP1252_HIGH =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

function decodeCp1252(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
    .toString('latin1')
    .replace(/[\x80-\x9f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

/** The charset parameter of a Content-Type, or undefined. */
function charsetParam(contentType: string | undefined): string | undefined {
  for (const p of (contentType ?? '').split(';').slice(1)) {
    const eq = p.indexOf('=');
    if (eq >= 0 && p.slice(0, eq).trim().toLowerCase() === 'charset')
      return p
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
  }
  return undefined;
}

/** The charset a JSON or form body is read in; 415 for any other it declares. */
export function bodyCharset(contentType: string | undefined, kind: 'json' | 'form'): TextCharset {
  const label = charsetParam(contentType);
  if (label === undefined) return 'utf-8';
  let encoding: string | undefined;
  try {
    // The WHATWG label table: latin1, iso-8859-1, us-ascii... all name windows-1252.
    encoding = new TextDecoder(label).encoding;
  } catch {
    encoding = undefined;
  }
  if (encoding === 'utf-8') return 'utf-8';
  if (kind === 'form' && encoding === 'windows-1252') return 'windows-1252';
  const shown = JSON.stringify(label.slice(0, 40));
  fail(
    'UNSUPPORTED_BODY',
    kind === 'json'
      ? `JSON bodies must be UTF-8; charset ${shown} is not accepted`
      : `form bodies are read as UTF-8 or windows-1252 (latin1, iso-8859-1); charset ${shown} is not accepted`,
  );
}

/** A field's name as it appears in a message (quoted when it is not a plain word). */
export function textLabel(name: string): string {
  if (/^[\w.-]{1,40}$/.test(name)) return name;
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

export function notText(what: string): never {
  fail('INVALID_PARAMS', `${what}: not valid UTF-8 text`);
}

export function badEscape(what: string, escape: string): never {
  fail('INVALID_PARAMS', `${what}: invalid percent escape ${JSON.stringify(escape)} (a % must be followed by two hex digits)`);
}

export function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/**
 * A form name or value as sent (bytes): '+' is a space, each %XX one byte,
 * and the bytes decoded in the charset. `what` names it in a refusal.
 */
export function decodeFormText(raw: Uint8Array, charset: TextCharset, what: string): string {
  let bytes = raw;
  if (raw.includes(0x25) || raw.includes(0x2b)) {
    const out = new Uint8Array(raw.length);
    let n = 0;
    for (let i = 0; i < raw.length; i++) {
      const c = raw[i]!;
      if (c === 0x2b) out[n++] = 0x20;
      else if (c !== 0x25) out[n++] = c;
      else {
        const hi = i + 1 < raw.length ? hexValue(raw[i + 1]!) : -1;
        const lo = i + 2 < raw.length ? hexValue(raw[i + 2]!) : -1;
        if (hi < 0 || lo < 0) badEscape(what, Buffer.from(raw.subarray(i, i + 3)).toString('latin1'));
        out[n++] = hi * 16 + lo;
        i += 2;
      }
    }
    bytes = out.subarray(0, n);
  }
  if (bytes.includes(0)) notNul(what);
  if (charset === 'windows-1252' || isAscii(bytes)) return decodeCp1252(bytes);
  try {
    return UTF8.decode(bytes);
  } catch {
    notText(what);
  }
}

/**
 * Checks UTF-8 as it arrives in chunks (the WHATWG decoder's rules:
 * no overlong forms, no encoded surrogates, nothing past U+10FFFF).
 */
export class Utf8Check {
  /** Continuation bytes still expected, and the range the next one must fall in. */
  private need = 0;
  private lo = 0x80;
  private hi = 0xbf;

  /** The index of the first byte that breaks the text, or -1. */
  scan(b: Uint8Array): number {
    if (this.need === 0 && isAscii(b)) return -1;
    for (let i = 0; i < b.length; i++) {
      const c = b[i]!;
      if (this.need > 0) {
        if (c < this.lo || c > this.hi) return i;
        this.lo = 0x80;
        this.hi = 0xbf;
        this.need--;
      } else if (c < 0x80) continue;
      else if (c >= 0xc2 && c <= 0xdf) this.need = 1;
      else if (c >= 0xe0 && c <= 0xef) {
        this.need = 2;
        if (c === 0xe0) this.lo = 0xa0;
        if (c === 0xed) this.hi = 0x9f;
      } else if (c >= 0xf0 && c <= 0xf4) {
        this.need = 3;
        if (c === 0xf0) this.lo = 0x90;
        if (c === 0xf4) this.hi = 0x8f;
      } else return i;
    }
    return -1;
  }

  /** The text stopped inside a character. */
  get incomplete(): boolean {
    return this.need > 0;
  }
}

/** U+0000 is no message text, and PostgreSQL's text cannot hold it: refused everywhere alike. */
function notNul(what: string): never {
  fail('INVALID_PARAMS', `${what}: contains a NUL character (U+0000)`);
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Refuses a string (or any string inside a parsed value, keys included) with an unpaired surrogate. */
export function checkWellFormed(value: unknown, what: string): void {
  // A loop, not recursion: a body may nest as deep as JSON.parse allows.
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const v = todo.pop();
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) fail('INVALID_PARAMS', `${what}: not valid Unicode text (an unpaired surrogate, such as \\ud800 alone)`);
      if (v.includes('\0')) notNul(what);
    } else if (Array.isArray(v)) for (const x of v) todo.push(x);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) todo.push(k, x);
    }
  }
}

/** The same over a body's fields, naming each top-level field. */
export function checkFieldsWellFormed(body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return checkWellFormed(body, 'the body');
  for (const [k, v] of Object.entries(body)) {
    checkWellFormed(k, 'a field name');
    checkWellFormed(v, textLabel(k));
  }
}

const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * Text a gateway reports (an incoming message, a sender, an id) with every
 * unpaired surrogate and NUL replaced by U+FFFD. The API refuses such text,
 * because its client can send it again; a third party's message cannot be
 * asked again, so it is kept, replaced the same way on every store, and never
 * stored as invalid UTF-8 (SQLite would keep a lone surrogate as CESU bytes,
 * which a copy to PostgreSQL then alters).
 */
export function replaceIllFormed<T>(value: T): T {
  if (typeof value === 'string')
    return (LONE_SURROGATE.test(value) || value.includes('\0') ? value.replace(LONE_SURROGATES, '\ufffd').replaceAll('\0', '\ufffd') : value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => replaceIllFormed(v)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [replaceIllFormed(k), replaceIllFormed(v)])) as T;
  }
  return value;
}
