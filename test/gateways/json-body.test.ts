import { randomBytes } from 'node:crypto';
import { appendFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Base64File, BASE64_PIECE, FileBodyError, jsonBody } from '../../src/gateways/json-body.js';
import { tempDir } from '../helpers/server.js';

/**
 * A JSON body with a file's base64 streamed from disk (src/gateways/json-body.ts)
 * is the very text JSON.stringify would make with the base64 inline, of the
 * length announced, piece by piece, and each body() reads the file again.
 */

const dir = tempDir('pasarela-jsonbody-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function fileOf(bytes: Buffer): Base64File {
  const path = join(dir, `f${n++}`);
  writeFileSync(path, bytes);
  return new Base64File(path, bytes.length);
}

async function read(body: NodeJS.ReadableStream): Promise<{ text: string; pieces: number }> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return { text: Buffer.concat(chunks).toString('utf8'), pieces: chunks.length };
}

describe('jsonBody', () => {
  it('without a file: the JSON text', () => {
    expect(jsonBody({ a: 'ñ', b: [1, 2] })).toEqual({ kind: 'text', text: '{"a":"ñ","b":[1,2]}' });
  });

  it.each([1, 2, 3, 4, BASE64_PIECE - 1, BASE64_PIECE, BASE64_PIECE + 1, 3 * BASE64_PIECE + 2])(
    'a file of %d bytes: the text JSON.stringify makes with its base64, of the announced length, in pieces',
    async (size) => {
      const bytes = randomBytes(size);
      const value = { number: '5215512345678', caption: 'café "x"\n', media: fileOf(bytes), fileName: 'a.pdf' };
      const b = jsonBody(value);
      if (b.kind !== 'file') throw new Error('expected a streamed body');
      const { text, pieces } = await read(b.body());
      expect(text).toBe(JSON.stringify({ ...value, media: bytes.toString('base64') }));
      expect(b.length).toBe(Buffer.byteLength(text));
      // The JSON before, each piece of the file, the JSON after.
      expect(pieces).toBe(2 + Math.ceil(size / BASE64_PIECE));
    },
  );

  it('a file nested in the body (WAHA: file.data)', async () => {
    const bytes = randomBytes(1000);
    const b = jsonBody({ session: 's', file: { mimetype: 'application/pdf', data: fileOf(bytes) } });
    if (b.kind !== 'file') throw new Error('expected a streamed body');
    expect(JSON.parse((await read(b.body())).text)).toEqual({ session: 's', file: { mimetype: 'application/pdf', data: bytes.toString('base64') } });
  });

  it('each body() reads the file again, whole (a retried call)', async () => {
    const bytes = randomBytes(2 * BASE64_PIECE + 5);
    const b = jsonBody({ media: fileOf(bytes) });
    if (b.kind !== 'file') throw new Error('expected a streamed body');
    const first = await read(b.body());
    const second = await read(b.body());
    expect(second.text).toBe(first.text);
    expect(JSON.parse(second.text)).toEqual({ media: bytes.toString('base64') });
  });

  it('a file that is gone, shrank or grew fails the stream with a FileBodyError (never a wrong body)', async () => {
    const gone = new Base64File(join(dir, 'missing'), 10);
    const b1 = jsonBody({ media: gone });
    if (b1.kind !== 'file') throw new Error('expected a streamed body');
    await expect(read(b1.body())).rejects.toMatchObject({ name: 'FileBodyError', kind: 'permanent', message: expect.stringMatching(/ENOENT/) });

    const shrank = fileOf(randomBytes(BASE64_PIECE * 2));
    truncateSync(shrank.path, BASE64_PIECE + 1);
    const b2 = jsonBody({ media: shrank });
    if (b2.kind !== 'file') throw new Error('expected a streamed body');
    await expect(read(b2.body())).rejects.toThrow(FileBodyError);

    const grew = fileOf(randomBytes(100));
    appendFileSync(grew.path, 'x');
    const b3 = jsonBody({ media: grew });
    if (b3.kind !== 'file') throw new Error('expected a streamed body');
    await expect(read(b3.body())).rejects.toThrow(/grew/);
  });

  it('more than one file in a body is a programming error', () => {
    expect(() => jsonBody({ a: new Base64File('/x', 1), b: new Base64File('/y', 1) })).toThrow(/more than one file/);
  });
});
