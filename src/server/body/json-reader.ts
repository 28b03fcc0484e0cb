import { StringDecoder } from 'node:string_decoder';
import { fail } from '../../core/api/errors.js';
import { checkWellFormed, notText, textLabel, Utf8Check } from '../../core/sending/exact-text.js';
import { FieldBudget, fieldName, type FieldLimits, type FieldSink } from './fields.js';

/**
 * An incremental reader of a JSON body that is one flat object, fed chunk
 * by chunk. String values the sink asks for are handed over in pieces,
 * unescaped (every JSON escape, \uXXXX and surrogate pairs included), and
 * never held whole; every other value (strings, numbers, literals, and
 * nested objects or arrays) is collected within the field limits and parsed
 * with JSON.parse. Keys named __proto__ (or a constructor with a prototype)
 * are refused, as Fastify's JSON parser does. Text must be exact
 * (core/sending/exact-text.ts): bytes that are not UTF-8, and an unpaired surrogate
 * in a key or a collected value, are refused naming the field.
 */

type State = 'start' | 'firstKey' | 'key' | 'inKey' | 'colon' | 'value' | 'inString' | 'scalar' | 'nested' | 'afterValue' | 'done';

// eslint-disable-next-line no-control-regex -- JSON escapes these control characters in strings
const STRING_SPECIAL = /["\\\u0000-\u001f]/g;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const isWs = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function malformed(detail: string): never {
  fail('MALFORMED_BODY', `the body is not valid JSON: ${detail}`);
}

/** JSON.parse, refusing prototype poisoning like secure-json-parse ('error' for both actions). */
export function parseJsonValue(text: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(text, (k, val: unknown) => {
      if (k === '__proto__' || (k === 'constructor' && val !== null && typeof val === 'object' && 'prototype' in val)) {
        malformed('forbidden prototype property');
      }
      return val;
    });
  } catch (err) {
    if (err instanceof SyntaxError) malformed(err.message);
    throw err;
  }
  return v;
}

export class JsonFieldReader {
  private readonly text = new StringDecoder('utf8');
  private readonly utf8 = new Utf8Check();
  private readonly budget: FieldBudget;
  private state: State = 'start';
  private key = '';
  /** The value being collected (raw text for scalars and nested values, unescaped for strings). */
  private buf = '';
  /** The current string value goes to the sink in pieces. */
  private streaming = false;
  /** Inside a string after a backslash: '' right after it, 'u' plus the hex digits read so far. */
  private escape: string | null = null;
  private depth = 0;
  private nestedString = false;
  private nestedEscape = false;
  /** Characters read, for messages. */
  private pos = 0;

  constructor(
    private readonly sink: FieldSink,
    limits: FieldLimits,
  ) {
    this.budget = new FieldBudget(limits);
  }

  write(chunk: Buffer): void {
    const bad = this.utf8.scan(chunk);
    if (bad >= 0) {
      // Read up to the bad byte first, so the refusal names the field it is in.
      this.feed(this.text.write(chunk.subarray(0, bad)));
      this.notUtf8();
    }
    this.feed(this.text.write(chunk));
  }

  /** Bad bytes in a key or value name that field; elsewhere the body is not JSON at all. */
  private notUtf8(): never {
    if (this.state === 'inKey') notText('a field name');
    if (this.state === 'inString' || this.state === 'scalar' || this.state === 'nested') notText(textLabel(this.key));
    malformed(`bytes that are not UTF-8 text near character ${this.pos}`);
  }

  /** Nothing but whitespace so far. */
  get empty(): boolean {
    return this.state === 'start';
  }

  end(): void {
    if (this.utf8.incomplete) this.notUtf8();
    this.feed(this.text.end());
    if (this.state === 'start') malformed('the body is empty');
    if (this.state !== 'done') malformed('it ends before the object is closed');
  }

  private feed(s: string): void {
    let i = 0;
    while (i < s.length) {
      switch (this.state) {
        case 'inKey':
        case 'inString':
          i = this.stringPart(s, i);
          break;
        case 'scalar':
          i = this.scalarPart(s, i);
          break;
        case 'nested':
          i = this.nestedPart(s, i);
          break;
        default:
          this.structural(s[i]!);
          i++;
      }
    }
    this.pos += s.length;
  }

  private unexpected(c: string): never {
    malformed(`unexpected ${JSON.stringify(c)} near character ${this.pos}`);
  }

  /** One character outside strings and values. */
  private structural(c: string): void {
    if (isWs(c)) return;
    switch (this.state) {
      case 'start':
        if (c !== '{') malformed('the body must be one JSON object');
        this.state = 'firstKey';
        return;
      case 'firstKey':
      case 'key':
        if (c === '}' && this.state === 'firstKey') {
          this.state = 'done';
          return;
        }
        if (c !== '"') this.unexpected(c);
        this.state = 'inKey';
        this.key = '';
        this.budget.start();
        return;
      case 'colon':
        if (c !== ':') this.unexpected(c);
        this.state = 'value';
        return;
      case 'value':
        this.buf = '';
        if (c === '"') {
          this.streaming = this.sink.streams(this.key);
          if (!this.streaming) this.budget.start();
          this.state = 'inString';
        } else if (c === '{' || c === '[') {
          this.budget.start();
          this.count(1);
          this.buf = c;
          this.depth = 1;
          this.state = 'nested';
        } else if (c === '-' || (c >= '0' && c <= '9') || c === 't' || c === 'f' || c === 'n') {
          this.budget.start();
          this.count(1);
          this.buf = c;
          this.state = 'scalar';
        } else {
          this.unexpected(c);
        }
        return;
      case 'afterValue':
        if (c === ',') this.state = 'key';
        else if (c === '}') this.state = 'done';
        else this.unexpected(c);
        return;
      case 'done':
        malformed('there is more after the object');
    }
  }

  private count(n: number): void {
    this.budget.add(n, () => `field ${fieldName(this.key)}`);
  }

  /** Characters of a key or string value, up to and including its closing quote. */
  private stringPart(s: string, from: number): number {
    let out = '';
    let i = from;
    while (i < s.length) {
      if (this.escape !== null) {
        const c = s[i++]!;
        if (this.escape === '') {
          if (c === 'u') this.escape = 'u';
          else if (c in ESCAPES) {
            out += ESCAPES[c];
            this.escape = null;
          } else malformed(`bad escape \\${c} near character ${this.pos + i}`);
        } else {
          if (!/[0-9a-fA-F]/.test(c)) malformed(`bad \\u escape near character ${this.pos + i}`);
          this.escape += c;
          if (this.escape.length === 5) {
            // One UTF-16 unit each: a surrogate pair is two escapes that join in the string, as with JSON.parse.
            out += String.fromCharCode(parseInt(this.escape.slice(1), 16));
            this.escape = null;
          }
        }
        continue;
      }
      STRING_SPECIAL.lastIndex = i;
      const m = STRING_SPECIAL.exec(s);
      const j = m ? m.index : s.length;
      out += s.slice(i, j);
      i = j;
      if (!m) break;
      const c = s[i++]!;
      if (c === '\\') this.escape = '';
      else if (c === '"') {
        this.emit(out, i - from);
        this.closeString();
        return i;
      } else malformed(`a control character inside a string near character ${this.pos + i}`);
    }
    this.emit(out, i - from);
    return i;
  }

  /** Hands the unescaped text of this pass on; the `raw` characters read count against the limits. */
  private emit(out: string, raw: number): void {
    if (this.state === 'inKey') {
      this.count(raw);
      this.key += out;
    } else if (this.streaming) {
      if (out !== '') this.sink.piece(out);
    } else {
      this.count(raw);
      this.buf += out;
    }
  }

  private closeString(): void {
    if (this.state === 'inKey') {
      if (this.key === '__proto__') malformed('forbidden prototype property');
      checkWellFormed(this.key, 'a field name');
      this.state = 'colon';
      return;
    }
    // The streamed value is the base64 file: its decoder refuses anything but base64 text.
    if (this.streaming) this.sink.pieceEnd();
    else {
      checkWellFormed(this.buf, textLabel(this.key));
      this.sink.field(this.key, this.buf);
    }
    this.buf = '';
    this.state = 'afterValue';
  }

  /** A number or literal runs to the next delimiter. */
  private scalarPart(s: string, from: number): number {
    let i = from;
    while (i < s.length && !isWs(s[i]!) && s[i] !== ',' && s[i] !== '}') i++;
    this.count(i - from);
    this.buf += s.slice(from, i);
    if (i < s.length) {
      const v = parseJsonValue(this.buf);
      if (v !== null && typeof v === 'object') malformed(`bad value near character ${this.pos + i}`);
      this.sink.field(this.key, v);
      this.buf = '';
      this.state = 'afterValue';
    }
    return i;
  }

  /** A nested object or array, collected up to its matching bracket and parsed whole. */
  private nestedPart(s: string, from: number): number {
    let i = from;
    while (i < s.length && this.depth > 0) {
      const c = s[i++]!;
      if (this.nestedString) {
        if (this.nestedEscape) this.nestedEscape = false;
        else if (c === '\\') this.nestedEscape = true;
        else if (c === '"') this.nestedString = false;
      } else if (c === '"') this.nestedString = true;
      else if (c === '{' || c === '[') this.depth++;
      else if (c === '}' || c === ']') this.depth--;
    }
    this.count(i - from);
    this.buf += s.slice(from, i);
    if (this.depth === 0) {
      if (this.key === 'constructor') parseJsonValue(`{"constructor":${this.buf}}`);
      const v = parseJsonValue(this.buf);
      checkWellFormed(v, textLabel(this.key));
      this.sink.field(this.key, v);
      this.buf = '';
      this.state = 'afterValue';
    }
    return i;
  }
}

/**
 * Refuses a JSON body that is not UTF-8, naming the field the first bad byte
 * is in (for a body that is one object) by reading it that far.
 */
export function refuseNotUtf8(body: Buffer): never {
  const ignore: FieldSink = { streams: () => false, piece: () => {}, pieceEnd: () => {}, field: () => {} };
  const reader = new JsonFieldReader(ignore, { perField: Infinity, total: Infinity });
  reader.write(body);
  reader.end();
  malformed('bytes that are not UTF-8 text');
}
