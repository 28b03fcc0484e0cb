import { randomUUID } from 'node:crypto';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';

/**
 * A JSON request body that may carry one file as a base64 string, streamed
 * from disk instead of built in memory: the JSON text before the string and
 * after it is made once, and the file is read and encoded piece by piece
 * while the request is sent. A send holds a piece (BASE64_PIECE bytes) and
 * the small JSON around it, whatever the file's size. Each body() opens the
 * file again, so a retried call sends it whole.
 */

/** A file's bytes as a raw base64 JSON string (no `data:` prefix), read only when the body is sent. */
export class Base64File {
  constructor(
    readonly path: string,
    /** Size in bytes when the message was built: the body's length is computed from it. */
    readonly size: number,
  ) {}
}

/**
 * A multiple of 3, so each piece but the last encodes to base64 without
 * padding; small enough that its base64 text (64 KiB) is a young object V8
 * frees at once, not a large one kept until a full collection.
 */
export const BASE64_PIECE = 3 * 16 * 1024;

/** The file could not be read, or changed size, while the body was being sent. */
export class FileBodyError extends Error {
  constructor(
    message: string,
    /** Permanent when the file is gone or changed: the same send would fail again. */
    readonly kind: 'permanent' | 'transient' = 'permanent',
  ) {
    super(message);
    this.name = 'FileBodyError';
  }
}

/** Base64 length of `size` bytes. */
const encodedLength = (size: number): number => 4 * Math.ceil(size / 3);

async function* base64Pieces(file: Base64File): AsyncGenerator<Buffer> {
  const fh = await open(file.path, 'r').catch((err: NodeJS.ErrnoException) => {
    // Out of descriptors or memory may pass; a file that is gone stays gone.
    throw new FileBodyError(`media file unreadable (${err.code ?? err.message})`, err.code === 'ENOENT' ? 'permanent' : 'transient');
  });
  try {
    // One buffer for the file's pieces: each is encoded to a new one before the next read.
    const buf = Buffer.allocUnsafe(Math.min(BASE64_PIECE, file.size));
    let at = 0;
    while (at < file.size) {
      const piece = buf.subarray(0, Math.min(BASE64_PIECE, file.size - at));
      // Fill the piece whole: a short read would put padding in the middle of the string.
      let filled = 0;
      while (filled < piece.length) {
        const { bytesRead } = await fh.read(piece, filled, piece.length - filled, at + filled);
        if (bytesRead === 0) throw new FileBodyError(`media file shrank while being sent (${at + filled} of ${file.size} bytes)`);
        filled += bytesRead;
      }
      at += filled;
      yield Buffer.from(piece.toString('base64'), 'latin1');
    }
    const { bytesRead } = await fh.read(Buffer.alloc(1), 0, 1, at);
    if (bytesRead !== 0) throw new FileBodyError(`media file grew while being sent (more than ${file.size} bytes)`);
  } finally {
    await fh.close();
  }
}

export type JsonBody =
  | { kind: 'text'; text: string }
  | {
      kind: 'file';
      /** Exact byte length of the body (Content-Length). */
      length: number;
      /** A fresh stream of the whole body; the file is opened when it is first read. */
      body(): Readable;
    };

/** `value` as a request body: plain JSON text, or a stream when it holds a Base64File (at most one). */
export function jsonBody(value: unknown): JsonBody {
  let file: Base64File | undefined;
  // Never in other JSON text: a fresh random name in a string JSON.stringify does not escape.
  const mark = `"pasarela-file-${randomUUID()}"`;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (!(v instanceof Base64File)) return v;
    if (file) throw new Error('jsonBody: more than one file in a body');
    file = v;
    return mark.slice(1, -1);
  });
  if (!file) return { kind: 'text', text };
  const f: Base64File = file;
  const at = text.indexOf(mark);
  // The quotes of the string stay in the text around it; only the base64 between them is streamed.
  const before = Buffer.from(text.slice(0, at + 1));
  const after = Buffer.from(text.slice(at + mark.length - 1));
  return {
    kind: 'file',
    length: before.length + encodedLength(f.size) + after.length,
    body: () =>
      Readable.from(
        (async function* () {
          yield before;
          yield* base64Pieces(f);
          yield after;
        })(),
        { objectMode: false },
      ),
  };
}
