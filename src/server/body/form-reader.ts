import { StringDecoder } from 'node:string_decoder';
import { badEscape, decodeFormText, hexValue, textLabel, type TextCharset } from '../../core/sending/exact-text.js';
import { FieldBudget, fieldName, type FieldLimits, type FieldSink } from './fields.js';

/**
 * An incremental reader of an application/x-www-form-urlencoded body, fed
 * chunk by chunk. The value the sink asks for (the base64 file) is
 * percent-decoded on the way (an escape may be cut by a chunk's end; '+' is
 * a space) and handed over in pieces; the other fields are collected within
 * the field limits, then decoded in the body's charset (core/sending/exact-text.ts):
 * a broken escape or bytes that are not text are refused, naming the field.
 */

const AMP = 0x26;
const EQ = 0x3d;
const PLUS = 0x2b;
const PCT = 0x25;

const UNLIMITED: FieldLimits = { perField: Infinity, total: Infinity };

/** A whole form body (or query string) as fields: a repeated name gives an array of its values. */
export function parseForm(bytes: Buffer, charset: TextCharset = 'utf-8', prefix = ''): Record<string, string | string[]> {
  const out = Object.create(null) as Record<string, string | string[]>;
  const reader = new FormFieldReader(
    {
      streams: () => false,
      piece: () => {},
      pieceEnd: () => {},
      field: (name, value) => {
        const had = out[name];
        out[name] = had === undefined ? (value as string) : [...(Array.isArray(had) ? had : [had]), value as string];
      },
    },
    UNLIMITED,
    charset,
    prefix,
  );
  reader.write(bytes);
  reader.end();
  return out;
}

export class FormFieldReader {
  private readonly budget: FieldBudget;
  private inValue = false;
  /** Raw (still encoded) text of the name, or of a collected value. */
  private raw = '';
  private streaming = false;
  private readonly utf8 = new StringDecoder('utf8');
  /** A percent-escape cut by the end of a chunk ('%' or '%X'), as raw bytes. */
  private partial: number[] = [];

  /** The decoded name of the current field. */
  private name = '';

  /** @param prefix before a field's name in a refusal (for a query string: "query parameter ") */
  constructor(
    private readonly sink: FieldSink,
    limits: FieldLimits,
    private readonly charset: TextCharset = 'utf-8',
    private readonly prefix = '',
  ) {
    this.budget = new FieldBudget(limits);
    this.budget.start();
  }

  write(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.inValue && this.streaming) {
        const amp = chunk.indexOf(AMP, i);
        const j = amp < 0 ? chunk.length : amp;
        this.streamBytes(chunk.subarray(i, j));
        i = j;
        if (amp >= 0) {
          this.endPair();
          i++;
        }
        continue;
      }
      const stop = this.inValue ? chunk.indexOf(AMP, i) : nextOf(chunk, i, AMP, EQ);
      const j = stop < 0 ? chunk.length : stop;
      this.budget.add(j - i, () => (this.inValue ? `field ${fieldName(this.name)}` : 'a field name'));
      this.raw += chunk.toString('latin1', i, j);
      i = j;
      if (stop < 0) break;
      if (chunk[i] === EQ) {
        this.name = this.decode(this.raw, this.nameWhat());
        this.raw = '';
        this.inValue = true;
        this.streaming = this.sink.streams(this.name);
        this.budget.start();
      } else this.endPair();
      i++;
    }
  }

  end(): void {
    this.endPair();
  }

  private endPair(): void {
    if (this.inValue && this.streaming) {
      if (this.partial.length > 0) badEscape(this.what(), Buffer.from(this.partial).toString('latin1'));
      const rest = this.utf8.end();
      if (rest !== '') this.sink.piece(rest);
      this.sink.pieceEnd();
    } else if (this.inValue || this.raw !== '') {
      if (!this.inValue) {
        this.name = this.decode(this.raw, this.nameWhat());
        this.raw = '';
      }
      const value = this.decode(this.raw, this.what());
      if (this.name !== '' || value !== '') this.sink.field(this.name, value);
    }
    this.inValue = false;
    this.streaming = false;
    this.name = '';
    this.raw = '';
    this.budget.start();
  }

  /** Raw bytes are kept as latin1 characters (one per byte) until the field is whole. */
  private decode(raw: string, what: string): string {
    return decodeFormText(Buffer.from(raw, 'latin1'), this.charset, what);
  }

  private nameWhat(): string {
    return this.prefix ? `a ${this.prefix}name` : 'a field name';
  }

  private what(): string {
    return `${this.prefix}${textLabel(this.name)}`;
  }

  /** Percent-decodes bytes of the streamed value into text pieces. */
  private streamBytes(b: Buffer): void {
    if (b.length === 0) return;
    let src = b;
    if (this.partial.length > 0) {
      src = Buffer.concat([Buffer.from(this.partial), b]);
      this.partial = [];
    }
    if (!src.includes(PCT) && !src.includes(PLUS)) {
      this.sink.piece(this.utf8.write(src));
      return;
    }
    const out = Buffer.allocUnsafe(src.length);
    let n = 0;
    for (let i = 0; i < src.length; i++) {
      const c = src[i]!;
      if (c === PLUS) out[n++] = 0x20;
      else if (c !== PCT) out[n++] = c;
      else if (i + 2 >= src.length) {
        // Possibly an escape cut in two: wait for the next chunk.
        this.partial = [...src.subarray(i)];
        break;
      } else {
        const hi = hexValue(src[i + 1]!);
        const lo = hexValue(src[i + 2]!);
        if (hi < 0 || lo < 0) badEscape(this.what(), src.toString('latin1', i, i + 3));
        out[n++] = hi * 16 + lo;
        i += 2;
      }
    }
    const text = this.utf8.write(out.subarray(0, n));
    if (text !== '') this.sink.piece(text);
  }
}

/** The first index from `i` of either byte, or -1. */
function nextOf(b: Buffer, i: number, x: number, y: number): number {
  const a = b.indexOf(x, i);
  const c = b.indexOf(y, i);
  return a < 0 ? c : c < 0 ? a : Math.min(a, c);
}
