import { StringDecoder } from 'node:string_decoder';
import { FieldBudget, fieldName, type FieldLimits, type FieldSink } from './fields.js';

/**
 * An incremental reader of an application/x-www-form-urlencoded body, fed
 * chunk by chunk. The value the sink asks for is percent-decoded on the way
 * (an escape may be cut by a chunk's end; '+' is a space; the bytes are
 * UTF-8) and handed over in pieces; the other fields are collected within
 * the field limits and decoded the way the form parser of the other routes
 * does (fast-querystring: '+' is a space, and a value whose escapes do not
 * decode is kept as sent).
 */

const AMP = 0x26;
const EQ = 0x3d;
const PLUS = 0x2b;
const PCT = 0x25;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** A name or value of a collected field. */
export function decodeFormComponent(raw: string): string {
  const spaced = raw.includes('+') ? raw.replace(/\+/g, ' ') : raw;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

export class FormFieldReader {
  private readonly budget: FieldBudget;
  private inValue = false;
  private key = '';
  /** Raw (still encoded) text of the name, or of a collected value. */
  private raw = '';
  private streaming = false;
  private readonly utf8 = new StringDecoder('utf8');
  /** A percent-escape cut by the end of a chunk ('%' or '%X'), as raw bytes. */
  private partial: number[] = [];

  constructor(
    private readonly sink: FieldSink,
    limits: FieldLimits,
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
      this.budget.add(j - i, () => (this.inValue ? `field ${fieldName(decodeFormComponent(this.key))}` : 'a field name'));
      this.raw += chunk.toString('latin1', i, j);
      i = j;
      if (stop < 0) break;
      if (chunk[i] === EQ) {
        this.key = this.raw;
        this.raw = '';
        this.inValue = true;
        this.streaming = this.sink.streams(decodeFormComponent(this.key));
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
      if (this.partial.length > 0) this.sink.piece(this.utf8.write(Buffer.from(this.partial)));
      this.partial = [];
      const rest = this.utf8.end();
      if (rest !== '') this.sink.piece(rest);
      this.sink.pieceEnd();
    } else if (this.inValue || this.raw !== '') {
      // Raw bytes were kept as latin1 characters; the decoding works on the UTF-8 they spell.
      const key = decodeFormComponent(Buffer.from(this.inValue ? this.key : this.raw, 'latin1').toString('utf8'));
      const value = this.inValue ? decodeFormComponent(Buffer.from(this.raw, 'latin1').toString('utf8')) : '';
      if (key !== '' || value !== '') this.sink.field(key, value);
    }
    this.inValue = false;
    this.streaming = false;
    this.key = '';
    this.raw = '';
    this.budget.start();
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
        if (hi < 0 || lo < 0) out[n++] = c;
        else {
          out[n++] = hi * 16 + lo;
          i += 2;
        }
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
