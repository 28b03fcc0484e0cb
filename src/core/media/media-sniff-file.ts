import { isUtf8 } from 'node:buffer';
import { open, type FileHandle } from 'node:fs/promises';
import { sniffer, type SniffAnswer, type SniffHints, type SniffQuestion } from './media-sniff.js';

/**
 * `sniffMime` for a file on disk, with the same answers: the sniffer's
 * questions are answered from a small read window, and the whole-content
 * ones (OLE2 stream names, plain text) by reading the file in chunks.
 * Memory stays at a few chunks whatever the file's size.
 */

const CHUNK = 1024 * 1024;
/** Ranges are read through a window this large, so walking a zip directory costs few reads. */
const WINDOW = 256 * 1024;

export async function sniffFile(path: string, hints: SniffHints = {}): Promise<string | null> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const file = new WindowedFile(fh, size);
    const it = sniffer(size, hints);
    let step = it.next();
    while (!step.done) step = it.next(await answer(file, step.value));
    return step.value;
  } finally {
    await fh.close();
  }
}

async function answer(file: WindowedFile, q: SniffQuestion): Promise<SniffAnswer> {
  if (q.kind === 'read') return file.read(q.offset, q.length);
  if (q.kind === 'contains') return containsAll(file, q.needles);
  return isTextFile(file);
}

class WindowedFile {
  private start = 0;
  private window = Buffer.alloc(0);

  constructor(
    private readonly fh: FileHandle,
    readonly size: number,
  ) {}

  /** Bytes [offset, offset + length), fewer at the end of the file. */
  async read(offset: number, length: number): Promise<Buffer> {
    const want = Math.max(0, Math.min(length, this.size - offset));
    if (offset >= this.start && offset + want <= this.start + this.window.length) {
      return this.window.subarray(offset - this.start, offset - this.start + want);
    }
    const buf = Buffer.alloc(Math.max(want, Math.min(WINDOW, this.size - offset)));
    const { bytesRead } = await this.fh.read(buf, 0, buf.length, offset);
    this.start = offset;
    this.window = buf.subarray(0, bytesRead);
    return this.window.subarray(0, Math.min(want, bytesRead));
  }

  /** The file in chunks, each handed over before the next is read. */
  async *chunks(): AsyncGenerator<Buffer> {
    const buf = Buffer.alloc(Math.min(CHUNK, Math.max(1, this.size)));
    for (let pos = 0; pos < this.size;) {
      const { bytesRead } = await this.fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) return;
      yield buf.subarray(0, bytesRead);
      pos += bytesRead;
    }
  }
}

/** Whether each needle occurs in the file; chunks overlap so a needle cut in two is still found. */
async function containsAll(file: WindowedFile, needles: Buffer[]): Promise<boolean[]> {
  const found = needles.map(() => false);
  const overlap = Math.max(0, ...needles.map((n) => n.length - 1));
  let prev = Buffer.alloc(0);
  for await (const chunk of file.chunks()) {
    const view = Buffer.concat([prev, chunk]);
    needles.forEach((n, i) => {
      if (!found[i] && view.includes(n)) found[i] = true;
    });
    prev = Buffer.from(view.subarray(Math.max(0, view.length - overlap)));
  }
  return found;
}

/** No NUL byte and valid UTF-8, checked chunk by chunk; a character cut by a chunk's end waits for the next. */
async function isTextFile(file: WindowedFile): Promise<boolean> {
  let carry = Buffer.alloc(0);
  for await (const chunk of file.chunks()) {
    if (chunk.includes(0)) return false;
    const view = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    const cut = completeLength(view);
    if (!isUtf8(view.subarray(0, cut))) return false;
    carry = Buffer.from(view.subarray(cut));
  }
  return carry.length === 0;
}

/** The length of `b` without an incomplete UTF-8 sequence at its end (the whole length when none). */
function completeLength(b: Buffer): number {
  for (let i = b.length - 1; i >= Math.max(0, b.length - 4); i--) {
    const c = b[i]!;
    if ((c & 0xc0) === 0x80) continue;
    const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return i + need > b.length ? i : b.length;
  }
  return b.length;
}
