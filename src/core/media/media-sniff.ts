import { isUtf8 } from 'node:buffer';

/**
 * MIME from magic numbers. The bytes are the truth ("do not trust the name");
 * the declared MIME only picks between types the bytes cannot tell apart (an
 * OOXML file is a zip, .doc/.xls/.ppt share one container, CSV is plain text).
 */

export const OOXML_DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
export const OOXML_XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const OOXML_PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';
const OOXML = new Set([OOXML_DOCX, OOXML_XLSX, OOXML_PPTX]);
const OLE_TYPES = new Set(['application/msword', 'application/vnd.ms-excel', 'application/vnd.ms-powerpoint']);

export interface SniffHints {
  /** The message type: an ISO BMFF file without an audio brand is audio/mp4 for `audio`, video/mp4 otherwise. */
  tipo?: string;
  /** Normalised declared MIME (lower case, no parameters). */
  declared?: string;
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const OLE2 = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const EBML = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);
const ELF = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

function at(b: Buffer, offset: number, sig: Buffer | string): boolean {
  const s = typeof sig === 'string' ? Buffer.from(sig, 'latin1') : sig;
  return b.length >= offset + s.length && b.compare(s, 0, s.length, offset, offset + s.length) === 0;
}

const ascii = (b: Buffer, offset: number, len: number): string => b.toString('latin1', offset, Math.min(b.length, offset + len));

/**
 * What the sniffer asks of the bytes. It never needs them whole at once: a
 * head, a few ranges (a zip's directory at the end), and two whole-content
 * questions, so a file can answer from disk in chunks (media-sniff-file.ts)
 * and a buffer at once (`sniffMime`), with one set of rules.
 */
export type SniffQuestion = { kind: 'read'; offset: number; length: number } | { kind: 'contains'; needles: Buffer[] } | { kind: 'text' };
/** `read`: the bytes (fewer at the end); `contains`: one boolean per needle; `text`: no NUL and valid UTF-8. */
export type SniffAnswer = Buffer | boolean[] | boolean;
export type Sniffer = Generator<SniffQuestion, string | null, SniffAnswer>;

function* read(offset: number, length: number): Generator<SniffQuestion, Buffer, SniffAnswer> {
  return (yield { kind: 'read', offset, length }) as Buffer;
}
function* contains(needles: Buffer[]): Generator<SniffQuestion, boolean[], SniffAnswer> {
  return (yield { kind: 'contains', needles }) as boolean[];
}
function* isText(): Generator<SniffQuestion, boolean, SniffAnswer> {
  return (yield { kind: 'text' }) as boolean;
}

/** Every signature lies within this many leading bytes. */
const HEAD = 512;

/** The rules, over content of `size` bytes that they query through questions. */
export function* sniffer(size: number, hints: SniffHints = {}): Sniffer {
  const declared = hints.declared;
  const b = yield* read(0, HEAD);
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (at(b, 0, PNG)) return 'image/png';
  if (at(b, 0, 'GIF87a') || at(b, 0, 'GIF89a')) return 'image/gif';
  if (at(b, 0, 'RIFF') && b.length >= 12) {
    const form = ascii(b, 8, 4);
    if (form === 'WEBP') return 'image/webp';
    if (form === 'WAVE') return 'audio/wav';
    if (form === 'AVI ') return 'video/x-msvideo';
  }
  if (at(b, 0, '%PDF-')) return 'application/pdf';
  if (at(b, 0, 'PK\x03\x04') || at(b, 0, 'PK\x05\x06') || at(b, 0, 'PK\x07\x08')) {
    return (yield* ooxmlKind(size)) ?? (declared !== undefined && OOXML.has(declared) ? declared : 'application/zip');
  }
  if (at(b, 0, OLE2)) return yield* oleKind(declared);
  // Named so that the 415 says what was sent instead of "unknown". A DOS header
  // always holds zero bytes, which keeps a text file that starts with "MZ" text.
  if (at(b, 0, 'MZ') && b.subarray(0, 64).includes(0)) return 'application/x-msdownload';
  if (at(b, 0, ELF)) return 'application/x-executable';
  if (at(b, 0, EBML)) return 'video/webm';
  if (at(b, 4, 'ftyp') && b.length >= 12) return isoBmffKind(ascii(b, 8, 4), hints.tipo);
  if (at(b, 0, 'OggS')) return b.subarray(0, 512).includes('OpusHead') ? 'audio/opus' : 'audio/ogg';
  if (at(b, 0, 'ID3')) return 'audio/mpeg';
  if (b.length >= 2 && b[0] === 0xff) {
    const b1 = b[1]!;
    // ADTS: sync + layer 00 (FF F1 / FF F9); checked before MPEG audio, whose sync it shares.
    if ((b1 & 0xf6) === 0xf0) return 'audio/aac';
    if (b.length >= 3 && isMpegAudioFrame(b1, b[2]!)) return 'audio/mpeg';
  }
  if (yield* isText()) return declared === 'text/csv' ? 'text/csv' : 'text/plain';
  return null;
}

/** The recognised MIME of bytes in memory, or null when no signature matches and they are not UTF-8 text. */
export function sniffMime(b: Buffer, hints: SniffHints = {}): string | null {
  const it = sniffer(b.length, hints);
  let step = it.next();
  while (!step.done) {
    const q = step.value;
    if (q.kind === 'read') step = it.next(b.subarray(q.offset, q.offset + q.length));
    else if (q.kind === 'contains') step = it.next(q.needles.map((n) => b.includes(n)));
    else step = it.next(!b.includes(0) && isUtf8(b));
  }
  return step.value;
}

/** An 11-bit frame sync alone is weak evidence; also require a valid version, layer, bitrate and sample rate. */
function isMpegAudioFrame(b1: number, b2: number): boolean {
  if ((b1 & 0xe0) !== 0xe0) return false;
  const version = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  const bitrate = b2 >> 4;
  const rate = (b2 >> 2) & 3;
  return version !== 1 && layer !== 0 && bitrate !== 0xf && rate !== 3;
}

function isoBmffKind(brand: string, tipo: string | undefined): string {
  if (brand === 'qt  ') return 'video/quicktime';
  if (brand.startsWith('3gp') || brand.startsWith('3g2')) return 'video/3gpp';
  if (brand === 'M4A ' || brand === 'M4B ' || brand === 'M4P ') return 'audio/mp4';
  // HEIF/AVIF stills share the container; naming them keeps a photo from passing as video/mp4.
  if (['heic', 'heix', 'hevc', 'hevx', 'mif1', 'msf1'].includes(brand)) return 'image/heic';
  if (brand === 'avif' || brand === 'avis') return 'image/avif';
  return tipo === 'audio' ? 'audio/mp4' : 'video/mp4';
}

/**
 * Reads the zip's central directory (at the end) for an OOXML package:
 * `[Content_Types].xml` plus a `word/`, `xl/` or `ppt/` part. Null when it is
 * not one or the directory cannot be read (zip64, truncated).
 */
function* ooxmlKind(size: number): Generator<SniffQuestion, string | null, SniffAnswer> {
  if (size < 22) return null;
  // The end-of-directory record sits in the last 22 + 65535 bytes (its comment is at most 65535).
  const tailStart = Math.max(0, size - 22 - 0xffff);
  const tail = yield* read(tailStart, size - tailStart);
  const found = tail.lastIndexOf('PK\x05\x06', tail.length - 22, 'latin1');
  if (found < 0) return null;
  const eocd = tailStart + found;
  const cdSize = tail.readUInt32LE(found + 12);
  const cdOffset = tail.readUInt32LE(found + 16);
  const end = cdOffset + cdSize;
  if (end > eocd) return null;
  let hasContentTypes = false;
  let kind: string | null = null;
  let p = cdOffset;
  for (let i = 0; i < 100_000 && p + 46 <= end; i++) {
    const h = yield* read(p, 46);
    if (h.readUInt32LE(0) !== 0x02014b50) break;
    const nameLen = h.readUInt16LE(28);
    const extraLen = h.readUInt16LE(30);
    const commentLen = h.readUInt16LE(32);
    const name = (yield* read(p + 46, Math.min(end, p + 46 + nameLen) - (p + 46))).toString('latin1');
    if (name === '[Content_Types].xml') hasContentTypes = true;
    else if (kind === null) {
      if (name.startsWith('word/')) kind = OOXML_DOCX;
      else if (name.startsWith('xl/')) kind = OOXML_XLSX;
      else if (name.startsWith('ppt/')) kind = OOXML_PPTX;
    }
    p += 46 + nameLen + extraLen + commentLen;
  }
  return hasContentTypes ? kind : null;
}

const OLE_STREAMS: Array<[Buffer, string]> = [
  [Buffer.from('WordDocument', 'utf16le'), 'application/msword'],
  [Buffer.from('Workbook', 'utf16le'), 'application/vnd.ms-excel'],
  [Buffer.from('PowerPoint Document', 'utf16le'), 'application/vnd.ms-powerpoint'],
];

/**
 * .doc, .xls and .ppt share the OLE2 container. The main stream's name (UTF-16
 * in the directory) tells them apart when exactly one is present; otherwise the
 * declared Office type, else application/msword.
 */
function* oleKind(declared: string | undefined): Generator<SniffQuestion, string, SniffAnswer> {
  const present = yield* contains(OLE_STREAMS.map(([name]) => name));
  const found = OLE_STREAMS.filter((_, i) => present[i]);
  if (found.length === 1) return found[0]![1];
  if (declared !== undefined && OLE_TYPES.has(declared)) return declared;
  return 'application/msword';
}
