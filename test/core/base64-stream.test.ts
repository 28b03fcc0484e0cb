import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Base64Decoder } from '../../src/core/media/base64-stream.js';
import { ERRORS } from '../../src/core/api/errors.js';
import { errorOf } from '../helpers/expect.js';
import { zip } from '../helpers/zip.js';
import { decodeBase64Media } from '../../src/core/media/media.js';
import { sniffMime } from '../../src/core/media/media-sniff.js';
import { sniffFile } from '../../src/core/media/media-sniff-file.js';

/**
 * The piecewise base64 decoder gives what the whole-text one gives, however
 * the text is cut; the file sniffer gives what the buffer sniffer gives.
 */

function decodePieces(text: string, cut: number[], max = 1024 * 1024): { bytes: Buffer; sha256: string; uriMime: string | undefined } {
  const d = new Base64Decoder('documento', max);
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...cut, text.length]) {
    out.push(d.write(text.slice(at, c)));
    at = c;
  }
  const r = d.end();
  out.push(r.tail);
  return { bytes: Buffer.concat(out), sha256: r.sha256, uriMime: r.uriMime };
}

/** Every way to cut `text` into two or three pieces (sampled for long texts). */
function cuts(text: string): number[][] {
  const out: number[][] = [[]];
  const step = Math.max(1, Math.floor(text.length / 40));
  for (let i = 0; i <= text.length; i += step) {
    out.push([i]);
    for (let j = i; j <= text.length; j += step * 3) out.push([i, j]);
  }
  return out;
}

const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) % 256));

describe('Base64Decoder', () => {
  const inputs = [
    bytes.toString('base64'),
    `  \n${bytes.toString('base64').replace(/.{76}/g, '$&\r\n')}\n `,
    `data:application/pdf;base64,${bytes.toString('base64')}`,
    `DATA:text/csv;name=a.csv;BASE64,\n${bytes.subarray(0, 7).toString('base64')}`,
    'UQ=\n=',
  ];
  it.each(inputs.map((t, i) => [i, t]))('input %i: any cut gives the same bytes, hash and data-URI type', (_i, text) => {
    const whole = decodePieces(text, []);
    for (const cut of cuts(text)) {
      const r = decodePieces(text, cut);
      expect(r.bytes.equals(whole.bytes)).toBe(true);
      expect(r.sha256).toBe(whole.sha256);
      expect(r.uriMime).toBe(whole.uriMime);
    }
    expect(whole.sha256).toBe(createHash('sha256').update(whole.bytes).digest('hex'));
  });

  it('the same errors and offsets as the whole text, however it is cut', () => {
    const bad = [
      'QUJD*A==',
      'QQ==QUJD',
      'Q===',
      'QUJDRA',
      'QUJD QUJDR',
      '  QUJD\u00a0QUJD',
      'data:image/png,QUJD',
      'data:image/png;base64',
      '',
      '  \n',
      `data:x;base64,${'A'.repeat(3)}-`,
    ];
    for (const text of bad) {
      const whole = errorOf(() => decodeBase64Media('documento', text, 'text/plain'));
      for (const cut of cuts(text)) {
        const e = errorOf(() => decodePieces(text, cut));
        expect([e.row, e.message], `${JSON.stringify(text)} cut at ${cut.join(',')}`).toEqual([whole.row, whole.message]);
      }
    }
  });

  it('trailing non-ASCII whitespace is trimmed, as by String.trim; inside the data it is refused', () => {
    expect(decodePieces('QUJD\u00a0\u3000 \n', [5]).bytes.toString()).toBe('ABC');
    expect(errorOf(() => decodePieces('QUJD\u00a0 QUJD', [5])).message).toMatch(/U\+00A0 at offset 4/);
  });

  it('refuses as soon as the decoded size passes the limit, without the rest of the text', () => {
    const d = new Base64Decoder('sticker', 1000);
    d.write('A'.repeat(1332));
    const e = errorOf(() => d.write('AAAAAAAA'));
    expect(e.row).toBe(ERRORS.MEDIA_TOO_LARGE);
    expect(e.message).toMatch(/maximum for sticker/);
  });

  it('a data URI header longer than 512 characters is refused once 513 have come', () => {
    const d = new Base64Decoder('documento', 1000);
    d.write(`data:${'x'.repeat(300)}`);
    expect(errorOf(() => d.write('y'.repeat(300))).message).toMatch(/invalid data URI/);
  });

  it('tells the data URI type as soon as its header is read', () => {
    const seen: Array<string | undefined> = [];
    const d = new Base64Decoder('imagen', 1000, (m) => seen.push(m));
    d.write('data:IMAGE/PNG;base');
    expect(seen).toEqual([]);
    d.write('64,QUJD');
    expect(seen).toEqual(['image/png']);
  });
});

describe('sniffFile answers as sniffMime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pasarela-sniff-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const MB = 1024 * 1024;

  const ole = (stream: string, at: number): Buffer => {
    const b = Buffer.alloc(at + 64, 0x11);
    Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(b, 0);
    Buffer.from(stream, 'utf16le').copy(b, at);
    return b;
  };
  // A text whose 3-byte characters straddle the 1 MiB chunk boundaries.
  const text = Buffer.from('a€'.repeat(Math.ceil((2.5 * MB) / 4)));
  const latin1Tail = Buffer.concat([text, Buffer.from([0xe9])]);
  const nulLate = Buffer.concat([text, Buffer.from([0])]);
  const cases: Array<[string, Buffer, string?]> = [
    ['docx, big (directory at the end, past the first MiB)', zip(['[Content_Types].xml', 'word/document.xml'], MB + 3)],
    ['xlsx with many parts', zip(['[Content_Types].xml', ...Array.from({ length: 3000 }, (_, i) => `xl/part${i}.xml`)])],
    ['plain zip', zip(['a.txt'], 10)],
    ['OLE2 stream name across a chunk boundary', ole('Workbook', MB - 5)],
    ['OLE2 with no stream name, declared ppt', ole('Nothing', 2000), 'application/vnd.ms-powerpoint'],
    ['UTF-8 text over chunk boundaries', text],
    ['text with a Latin-1 byte at the end', latin1Tail, 'text/csv'],
    ['text with a NUL at the end', nulLate],
    ['empty', Buffer.alloc(0)],
  ];
  it.each(cases)('%s', async (name, b, declared) => {
    const path = join(dir, name.replace(/\W+/g, '_'));
    writeFileSync(path, b);
    expect(await sniffFile(path, { tipo: 'documento', declared })).toBe(sniffMime(b, { tipo: 'documento', declared }));
  });
});
