import { createHash } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppError, ERRORS, type ErrorRow } from '../../src/core/api/errors.js';
import { errorOf, rejectionOf } from '../helpers/expect.js';
import { zip } from '../helpers/zip.js';
import { MEDIA_RULES, TempFiles, checkMediaUrl, decodeBase64Media } from '../../src/core/media/media.js';
import { OOXML_DOCX, OOXML_PPTX, OOXML_XLSX } from '../../src/core/media/media-sniff.js';
import { isBlockedAddress, probeUrl } from '../../src/core/media/media-url.js';

// Every request undici makes is recorded through its diagnostics channel
// (it works however the module was loaded, unlike a module mock when test
// files share a worker); anything but 127.0.0.1 fails the test in afterAll.
const traffic = { urls: [] as string[], away: [] as string[] };
const onRequest = (msg: unknown): void => {
  const { request } = msg as { request: { origin: string; path: string } };
  const url = new URL(request.path, request.origin);
  traffic.urls.push(url.href);
  if (url.hostname !== '127.0.0.1') traffic.away.push(url.href);
};
subscribe('undici:request:create', onRequest);
afterAll(() => {
  unsubscribe('undici:request:create', onRequest);
  expect(traffic.away).toEqual([]);
});

const MB = 1024 * 1024;

function expectError(err: AppError, row: ErrorRow, message?: RegExp): void {
  expect(err.row).toBe(row);
  if (message) expect(err.message).toMatch(message);
}

// ---- tiny but valid file headers ----
const pad = (head: Buffer | number[], len = 64): Buffer => {
  const h = Buffer.isBuffer(head) ? head : Buffer.from(head);
  return Buffer.concat([h, Buffer.alloc(Math.max(0, len - h.length), 0x11)]);
};
const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
const riff = (form: string): Buffer => pad(Buffer.concat([latin1('RIFF'), Buffer.from([56, 0, 0, 0]), latin1(form), latin1('VP8 ')]));
const ftyp = (brand: string): Buffer =>
  pad(Buffer.concat([Buffer.from([0, 0, 0, 0x18]), latin1('ftyp'), latin1(brand), Buffer.from([0, 0, 0, 0]), latin1('isommp41')]));

const JPEG = pad([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]);
const PNG = pad([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
const GIF = pad(latin1('GIF89a\x01\x00\x01\x00'));
const GIF87 = pad(latin1('GIF87a\x01\x00\x01\x00'));
const WEBP = riff('WEBP');
const WAV = riff('WAVE');
const PDF = latin1('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n%%EOF\n');
const MP3_ID3 = pad(latin1('ID3\x03\x00\x00\x00\x00\x00\x0a'));
const MP3_FRAME = pad([0xff, 0xfb, 0x90, 0x64]);
const AAC = pad([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]);
const AAC_MPEG2 = pad([0xff, 0xf9, 0x50, 0x80, 0x02, 0x1f, 0xfc]);
const OGG_VORBIS = pad(Buffer.concat([latin1('OggS\x00\x02'), Buffer.alloc(22), latin1('\x01vorbis')]));
const OGG_OPUS = pad(Buffer.concat([latin1('OggS\x00\x02'), Buffer.alloc(22), latin1('OpusHead\x01\x02')]));
const WEBM = pad([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01]);
const EXE = pad(latin1('MZ\x90\x00\x03\x00\x00\x00'));
const OLE_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const ole = (stream?: string): Buffer => pad(Buffer.concat([OLE_MAGIC, Buffer.alloc(504), stream ? Buffer.from(stream, 'utf16le') : Buffer.alloc(0)]), 1024);

const b64 = (b: Buffer): string => b.toString('base64');
const dataUri = (mime: string, b: Buffer): string => `data:${mime};base64,${b64(b)}`;

describe('MEDIA_RULES', () => {
  it('has the limits in binary megabytes', () => {
    expect(MEDIA_RULES.imagen).toMatchObject({ urlMaxBytes: 5 * MB, base64MaxBytes: 16 * MB });
    expect(MEDIA_RULES.documento).toMatchObject({ urlMaxBytes: 100 * MB, base64MaxBytes: 50 * MB });
    expect(MEDIA_RULES.audio).toMatchObject({ urlMaxBytes: 16 * MB, base64MaxBytes: 16 * MB });
    expect(MEDIA_RULES.video).toMatchObject({ urlMaxBytes: 50 * MB, base64MaxBytes: 50 * MB });
    expect(MEDIA_RULES.sticker).toMatchObject({ urlMaxBytes: 1 * MB, base64MaxBytes: 1 * MB, mimes: ['image/webp', 'image/png'] });
    expect(MEDIA_RULES.documento.mimes).toHaveLength(10);
  });
});

describe('decodeBase64Media: sniffing', () => {
  const cases: Array<[string, Parameters<typeof decodeBase64Media>[0], Buffer, string, string?]> = [
    ['JPEG', 'imagen', JPEG, 'image/jpeg'],
    ['PNG', 'imagen', PNG, 'image/png'],
    ['GIF89a', 'imagen', GIF, 'image/gif'],
    ['GIF87a', 'imagen', GIF87, 'image/gif'],
    ['WEBP', 'imagen', WEBP, 'image/webp'],
    ['WEBP sticker', 'sticker', WEBP, 'image/webp'],
    ['PNG sticker', 'sticker', PNG, 'image/png'],
    ['PDF', 'documento', PDF, 'application/pdf'],
    ['plain zip', 'documento', zip(['a.txt', 'b.txt']), 'application/zip'],
    ['docx by its parts', 'documento', zip(['[Content_Types].xml', '_rels/.rels', 'word/document.xml']), OOXML_DOCX],
    ['xlsx by its parts', 'documento', zip(['[Content_Types].xml', 'xl/workbook.xml']), OOXML_XLSX],
    ['pptx by its parts, declared docx', 'documento', zip(['[Content_Types].xml', 'ppt/presentation.xml']), OOXML_PPTX, OOXML_DOCX],
    ['zip declared as OOXML', 'documento', zip(['a.txt']), OOXML_XLSX, OOXML_XLSX],
    ['zip declared as pdf', 'documento', zip(['a.txt']), 'application/zip', 'application/pdf'],
    ['OLE2 with WordDocument', 'documento', ole('WordDocument'), 'application/msword', 'application/vnd.ms-excel'],
    ['OLE2 with Workbook', 'documento', ole('Workbook'), 'application/vnd.ms-excel'],
    ['OLE2 with PowerPoint Document', 'documento', ole('PowerPoint Document'), 'application/vnd.ms-powerpoint'],
    ['OLE2 unnamed, declared ppt', 'documento', ole(), 'application/vnd.ms-powerpoint', 'application/vnd.ms-powerpoint'],
    ['OLE2 unnamed, undeclared', 'documento', ole(), 'application/msword'],
    ['text', 'documento', Buffer.from('hola, señor\nlinea 2\n'), 'text/plain'],
    ['text that starts like an EXE', 'documento', Buffer.from('MZN,Metical\nUSD,Dollar\n'), 'text/plain'],
    ['text declared csv', 'documento', Buffer.from('a,b\n1,2\n'), 'text/csv', 'text/csv'],
    ['Latin-1 csv (not UTF-8) declared csv', 'documento', latin1('nombre;ciudad\nJos\xe9;M\xe9rida\n'), 'text/csv', 'text/csv'],
    ['MP3 with ID3', 'audio', MP3_ID3, 'audio/mpeg'],
    ['MP3 frame sync', 'audio', MP3_FRAME, 'audio/mpeg'],
    ['AAC ADTS FF F1', 'audio', AAC, 'audio/aac'],
    ['AAC ADTS FF F9', 'audio', AAC_MPEG2, 'audio/aac'],
    ['Ogg Vorbis', 'audio', OGG_VORBIS, 'audio/ogg'],
    ['Ogg Opus', 'audio', OGG_OPUS, 'audio/opus'],
    ['WAV', 'audio', WAV, 'audio/wav'],
    ['M4A', 'audio', ftyp('M4A '), 'audio/mp4'],
    ['isom as audio', 'audio', ftyp('isom'), 'audio/mp4'],
    ['isom as video', 'video', ftyp('isom'), 'video/mp4'],
    ['mp42', 'video', ftyp('mp42'), 'video/mp4'],
    ['QuickTime', 'video', ftyp('qt  '), 'video/quicktime'],
    ['3GP', 'video', ftyp('3gp4'), 'video/3gpp'],
    ['WebM', 'video', WEBM, 'video/webm'],
  ];
  it.each(cases)('%s', (_name, tipo, bytes, mime, declared) => {
    const out = decodeBase64Media(tipo, b64(bytes), declared);
    expect(out.mime).toBe(mime);
    expect(out.bytes.equals(bytes)).toBe(true);
    expect(out.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('trusts the bytes over the declared MIME', () => {
    expect(decodeBase64Media('imagen', b64(PNG), 'image/jpeg').mime).toBe('image/png');
    expect(decodeBase64Media('imagen', dataUri('image/jpeg', PNG)).mime).toBe('image/png');
    expectError(
      errorOf(() => decodeBase64Media('imagen', b64(EXE), 'image/png')),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /application\/x-msdownload.*declared image\/png.*allowed: image\/jpeg, image\/png, image\/webp, image\/gif/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', b64(EXE), 'text/plain')),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /x-msdownload/,
    );
  });

  it('refuses a sniffed type outside the list, naming it and the allowed ones', () => {
    expectError(
      errorOf(() => decodeBase64Media('sticker', b64(JPEG))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /image\/jpeg.*sticker.*image\/webp, image\/png/,
    );
    expectError(
      errorOf(() => decodeBase64Media('imagen', b64(ftyp('heic')))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /image\/heic/,
    );
    expectError(
      errorOf(() => decodeBase64Media('video', b64(ftyp('heic')))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /image\/heic/,
    );
    expectError(
      errorOf(() => decodeBase64Media('imagen', b64(Buffer.from('just text')))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /text\/plain/,
    );
    expectError(
      errorOf(() => decodeBase64Media('audio', b64(WEBM))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /video\/webm/,
    );
  });

  it('refuses unrecognised bytes, falling back to the declaration only for text', () => {
    const binary = Buffer.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0x00]);
    expectError(
      errorOf(() => decodeBase64Media('documento', b64(binary), 'application/pdf')),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /could not be recognised \(declared application\/pdf\)/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', b64(latin1('Jos\xe9')))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /could not be recognised/,
    );
    expect(decodeBase64Media('documento', b64(latin1('Jos\xe9')), 'text/plain').mime).toBe('text/plain');
  });

  it('refuses a declared MIME outside the list (docs/design.md §5), but not application/octet-stream', () => {
    expectError(
      errorOf(() => decodeBase64Media('imagen', b64(PNG), 'image/tiff')),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /image\/tiff \(declared\)/,
    );
    expectError(
      errorOf(() => decodeBase64Media('imagen', dataUri('image/svg+xml', PNG))),
      ERRORS.MEDIA_TYPE_NOT_ALLOWED,
      /image\/svg\+xml \(in the data URI\)/,
    );
    expect(decodeBase64Media('imagen', dataUri('application/octet-stream', PNG)).mime).toBe('image/png');
    expect(decodeBase64Media('imagen', b64(PNG), 'IMAGE/PNG; charset=binary').mime).toBe('image/png');
  });
});

describe('decodeBase64Media: base64 form', () => {
  it('accepts data URIs, taking the declared type from them', () => {
    expect(decodeBase64Media('imagen', dataUri('image/png', PNG)).mime).toBe('image/png');
    expect(decodeBase64Media('documento', dataUri('text/csv', Buffer.from('a,b\n'))).mime).toBe('text/csv');
    expect(decodeBase64Media('documento', `DATA:${OOXML_XLSX};name=x.xlsx;BASE64,${b64(zip(['a']))}`).mime).toBe(OOXML_XLSX);
    expect(decodeBase64Media('documento', dataUri('text/plain', Buffer.from('a,b\n')), 'text/csv').mime).toBe('text/csv');
  });

  it('ignores whitespace and newlines inside the data', () => {
    const wrapped = b64(PDF)
      .replace(/.{10}/g, '$&\r\n')
      .replace(/(.{3})\r/g, '$1 \t\r');
    expect(wrapped).toMatch(/\s/);
    expect(decodeBase64Media('documento', `\n  ${wrapped}  \n`).bytes.equals(PDF)).toBe(true);
    expect(decodeBase64Media('documento', `data:application/pdf;base64,\n${wrapped}`).bytes.equals(PDF)).toBe(true);
    const oneByte = Buffer.from('Q');
    expect(decodeBase64Media('documento', 'UQ=\n=', 'text/plain').bytes.equals(oneByte)).toBe(true);
  });

  it('refuses other alphabets, naming the character', () => {
    const std = b64(Buffer.from([0xfb, 0xff, 0xfe, 0x00, 0x11, 0x22]));
    expect(std).toMatch(/[+/]/);
    const url = std.replace(/\+/g, '-').replace(/\//g, '_');
    expectError(
      errorOf(() => decodeBase64Media('documento', url)),
      ERRORS.BASE64_INVALID,
      /character '[-_]' at offset \d+ is not in the standard alphabet \(base64url is not accepted/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QUJD*A==')),
      ERRORS.BASE64_INVALID,
      /'\*' at offset 4/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QUJDñA==')),
      ERRORS.BASE64_INVALID,
      /U\+00F1/,
    );
  });

  it('refuses bad padding and lengths', () => {
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QQ==QUJD')),
      ERRORS.BASE64_INVALID,
      /padding may only stand at the end/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QQ=A')),
      ERRORS.BASE64_INVALID,
      /padding may only stand at the end/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'Q===')),
      ERRORS.BASE64_INVALID,
      /more than two '='/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QUJDRA')),
      ERRORS.BASE64_INVALID,
      /length 6 is not a multiple of 4/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QUJDRA=')),
      ERRORS.BASE64_INVALID,
      /length 7 is not a multiple of 4/,
    );
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QUJ')),
      ERRORS.BASE64_INVALID,
      /multiple of 4/,
    );
    // An unencoded '+' in a form body turns into a space; the message says so.
    expectError(
      errorOf(() => decodeBase64Media('documento', 'QUJD+0FC'.replace('+', ' '))),
      ERRORS.BASE64_INVALID,
      /becomes a space/,
    );
  });

  it('refuses empty content and malformed data URIs', () => {
    for (const input of ['', '   \n', 'data:image/png;base64,', 'data:image/png;base64, \n ']) {
      expectError(
        errorOf(() => decodeBase64Media('imagen', input)),
        ERRORS.BASE64_INVALID,
        /empty/,
      );
    }
    expectError(
      errorOf(() => decodeBase64Media('imagen', `data:image/png,${b64(PNG)}`)),
      ERRORS.BASE64_INVALID,
      /only base64 data URIs/,
    );
    expectError(
      errorOf(() => decodeBase64Media('imagen', 'data:image/png;base64')),
      ERRORS.BASE64_INVALID,
      /data URI/,
    );
  });
});

describe('decodeBase64Media: size', () => {
  const pngOf = (size: number): Buffer => {
    const b = Buffer.alloc(size, 0x41);
    PNG.copy(b, 0, 0, 16);
    return b;
  };

  it('accepts exactly the limit and refuses one byte over, stating the maximum', () => {
    const max = MEDIA_RULES.sticker.base64MaxBytes;
    const ok = decodeBase64Media('sticker', b64(pngOf(max)));
    expect(ok.bytes.length).toBe(max);
    expect(ok.mime).toBe('image/png');
    const err = errorOf(() => decodeBase64Media('sticker', b64(pngOf(max + 1))));
    expectError(err, ERRORS.MEDIA_TOO_LARGE, /^file too large: 1048577 bytes; the maximum for sticker is 1 MB \(1048576 bytes\)$/);
    expect(err.status).toBe(413);
    // Whitespace does not count towards the size.
    expect(decodeBase64Media('sticker', b64(pngOf(max)).replace(/.{76}/g, '$&\r\n')).bytes.length).toBe(max);
    expectError(
      errorOf(() => decodeBase64Media('sticker', b64(pngOf(max + 200 * 1024)))),
      ERRORS.MEDIA_TOO_LARGE,
      /file too large: 1\.2 MB; the maximum for sticker is 1 MB$/,
    );
  });

  it('refuses a huge input from its length, before decoding anything', () => {
    const huge = 'A'.repeat(80 * MB); // decodes to 60 MB, over documento's 50 MB
    const from = vi.spyOn(Buffer, 'from');
    try {
      const err = errorOf(() => decodeBase64Media('documento', huge, 'application/pdf'));
      expectError(err, ERRORS.MEDIA_TOO_LARGE, /file too large: 60\.0 MB; the maximum for documento is 50 MB/);
      expect(from).not.toHaveBeenCalled();
    } finally {
      from.mockRestore();
    }
  });
});

// ---- URLs: a local media server on 127.0.0.1 ----
let server: Server;
let base: string;
const seen: Array<{ method: string; url: string; range: string | undefined }> = [];

function route(req: IncomingMessage, res: ServerResponse): void {
  const u = new URL(req.url ?? '/', 'http://x');
  seen.push({ method: req.method ?? '', url: u.pathname, range: req.headers.range });
  const p = u.pathname;
  if (p === '/ok' || p === '/ok.png') {
    res.writeHead(200, { 'content-type': 'image/png; charset=binary', 'content-length': '1234' });
    res.end();
  } else if (p === '/nolen') {
    res.writeHead(200, { 'content-type': 'video/mp4', 'transfer-encoding': 'chunked' });
    if (req.method !== 'HEAD') res.write('x');
    res.end();
  } else if (p === '/ranged') {
    if (req.method === 'HEAD') {
      res.writeHead(405, { allow: 'GET' });
      res.end();
    } else if (req.headers.range === 'bytes=0-0') {
      res.writeHead(206, { 'content-type': 'audio/mpeg', 'content-range': 'bytes 0-0/4242', 'content-length': '1' });
      res.end('x');
    } else {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': '4242' });
      res.end(Buffer.alloc(4242));
    }
  } else if (p === '/ranged-big') {
    if (req.method === 'HEAD') {
      res.writeHead(501);
      res.end();
    } else {
      res.writeHead(206, { 'content-type': 'image/jpeg', 'content-range': `bytes 0-0/${5 * MB + 1}`, 'content-length': '1' });
      res.end('x');
    }
  } else if (p === '/size') {
    const n = u.searchParams.get('n') ?? '0';
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': n });
    res.end();
  } else if (p.startsWith('/hop/')) {
    const n = Number(p.slice(5));
    res.writeHead(n > 0 ? 302 : 200, n > 0 ? { location: `/hop/${n - 1}` } : { 'content-length': '10', 'content-type': 'application/pdf' });
    res.end();
  } else if (p === '/to') {
    res.writeHead(307, { location: u.searchParams.get('u') ?? '/' });
    res.end();
  } else if (p === '/hang') {
    // Never answers.
  } else {
    res.writeHead(404);
    res.end();
  }
}

beforeAll(async () => {
  server = createServer(route);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  traffic.urls.length = 0;
});

const allow = { allowPrivate: true };
const deny = { allowPrivate: false };

describe('checkMediaUrl', () => {
  it('reports size and MIME from HEAD', async () => {
    expect(await checkMediaUrl('imagen', `${base}/ok`, allow)).toEqual({ url: `${base}/ok`, bytes: 1234, mime: 'image/png' });
    expect(seen.map((s) => s.method)).toEqual(['HEAD']);
  });

  it('accepts an unknown size, after trying a ranged GET', async () => {
    expect(await checkMediaUrl('video', `${base}/nolen`, allow)).toEqual({ url: `${base}/nolen`, bytes: null, mime: 'video/mp4' });
    expect(seen).toEqual([
      { method: 'HEAD', url: '/nolen', range: undefined },
      { method: 'GET', url: '/nolen', range: 'bytes=0-0' },
    ]);
  });

  it('falls back to a ranged GET on 405 and reads the total from Content-Range', async () => {
    expect(await checkMediaUrl('audio', `${base}/ranged`, allow)).toEqual({ url: `${base}/ranged`, bytes: 4242, mime: 'audio/mpeg' });
    expect(seen.map((s) => `${s.method} ${s.range ?? ''}`)).toEqual(['HEAD ', 'GET bytes=0-0']);
    expectError(await rejectionOf(checkMediaUrl('imagen', `${base}/ranged-big`, allow)), ERRORS.MEDIA_TOO_LARGE, /5\.0 MB|5242881 bytes/);
  });

  it('refuses a declared size over the limit, stating the maximum', async () => {
    expect((await checkMediaUrl('imagen', `${base}/size?n=${5 * MB}`, allow)).bytes).toBe(5 * MB);
    const err = await rejectionOf(checkMediaUrl('imagen', `${base}/size?n=${6 * MB}`, allow));
    expectError(err, ERRORS.MEDIA_TOO_LARGE, /media URL file too large: 6\.0 MB; the maximum for imagen is 5 MB/);
    expect((await checkMediaUrl('documento', `${base}/size?n=${60 * MB}`, allow)).bytes).toBe(60 * MB);
  });

  it('refuses a missing resource', async () => {
    const err = await rejectionOf(checkMediaUrl('imagen', `${base}/missing`, allow));
    expectError(err, ERRORS.MEDIA_URL_INVALID, /not reachable \(HTTP 404\)/);
    expect(err.status).toBe(400);
  });

  it('follows up to 3 redirects itself', async () => {
    expect(await checkMediaUrl('documento', `${base}/hop/2`, allow)).toEqual({ url: `${base}/hop/0`, bytes: 10, mime: 'application/pdf' });
    expect(seen.map((s) => s.url)).toEqual(['/hop/2', '/hop/1', '/hop/0']);
    expect((await checkMediaUrl('documento', `${base}/hop/3`, allow)).bytes).toBe(10);
    expectError(await rejectionOf(checkMediaUrl('documento', `${base}/hop/4`, allow)), ERRORS.MEDIA_URL_INVALID, /more than 3 redirects/);
  });

  it('re-checks the scheme of every hop', async () => {
    const to = `${base}/to?u=${encodeURIComponent('ftp://127.0.0.1/x')}`;
    expectError(await rejectionOf(checkMediaUrl('imagen', to, allow)), ERRORS.MEDIA_URL_INVALID, /must be http or https, not ftp/);
  });

  it('re-checks the address of every hop', async () => {
    // Allowed: the redirect to loopback is followed.
    const toLoopback = `${base}/to?u=${encodeURIComponent(`${base}/ok`)}`;
    expect((await checkMediaUrl('imagen', toLoopback, allow)).url).toBe(`${base}/ok`);
    // Not allowed: the first hop must look public for the redirect to matter, so
    // this calls the probe with 127.0.0.1 (only) counted as public.
    const opts = { allowPrivate: false, isBlocked: (a: string) => a !== '127.0.0.1' && isBlockedAddress(a), label: 'media URL' };
    expect((await probeUrl(`${base}/ok`, opts)).bytes).toBe(1234);
    for (const target of ['http://10.0.0.1/x', 'http://169.254.169.254/latest/meta-data', 'http://[::ffff:127.0.0.1]/x', 'http://[::1]/x']) {
      traffic.urls.length = 0;
      const err = await rejectionOf(probeUrl(`${base}/to?u=${encodeURIComponent(target)}`, opts));
      expectError(err, ERRORS.MEDIA_URL_INVALID, /after 1 redirect\) points at a private address/);
      expect(traffic.urls).toHaveLength(1); // only the first hop went out
    }
  });

  it('refuses private addresses before any traffic unless allowed', async () => {
    for (const url of [
      'http://127.0.0.1/x',
      'http://10.0.0.1/x',
      'http://0x7f.1/x',
      'http://[::1]/x',
      'http://[fd00::1]/x',
      'http://[::ffff:10.0.0.1]/x',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://224.0.0.1/',
    ]) {
      expectError(await rejectionOf(checkMediaUrl('imagen', url, deny)), ERRORS.MEDIA_URL_INVALID, /points at a private address/);
    }
    // A name that resolves (via /etc/hosts) to loopback is refused after the lookup, before connecting.
    expectError(await rejectionOf(checkMediaUrl('imagen', 'http://localhost/x', deny)), ERRORS.MEDIA_URL_INVALID, /points at a private address/);
    expectError(await rejectionOf(checkMediaUrl('imagen', `${base}/ok`, deny)), ERRORS.MEDIA_URL_INVALID, /private address \(127\.0\.0\.1\)/);
    expect(traffic.urls).toEqual([]);
    expect(seen).toEqual([]);
  });

  it('refuses other schemes and malformed URLs', async () => {
    for (const [url, re] of [
      ['ftp://example.com/a.png', /not ftp$/],
      ['file:///etc/passwd', /not file$/],
      ['javascript:alert(1)', /not javascript$/],
      ['data:image/png;base64,AAAA', /not data$/],
      ['not a url', /not a valid URL/],
      ['/relative.png', /not a valid URL/],
      [`https://example.com/${'a'.repeat(2048)}`, /longer than 2048/],
    ] as const) {
      expectError(await rejectionOf(checkMediaUrl('imagen', url, allow)), ERRORS.MEDIA_URL_INVALID, re);
    }
    expect(traffic.urls).toEqual([]);
  });

  it('times out on a server that does not answer', async () => {
    const err = await rejectionOf(checkMediaUrl('imagen', `${base}/hang`, { allowPrivate: true, timeoutMs: 300 }));
    expectError(err, ERRORS.MEDIA_URL_INVALID, /not reachable \(timeout after 0\.3 s\)/);
  });

  it('reports a refused connection', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expectError(
      await rejectionOf(checkMediaUrl('imagen', `http://127.0.0.1:${port}/x`, allow)),
      ERRORS.MEDIA_URL_INVALID,
      /not reachable \(connection refused\)/,
    );
  });
});

describe('isBlockedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '224.0.0.251',
    '255.255.255.255',
    '::',
    '::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a00:1',
    '2002:c0a8:101::1',
    'not-an-ip',
  ])('blocks %s', (a) => expect(isBlockedAddress(a)).toBe(true));
  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'allows %s',
    (a) => expect(isBlockedAddress(a)).toBe(false),
  );
});

describe('TempFiles', () => {
  let root: string;
  let dir: string;
  const ID1 = '0f8fad5b-d9cb-469f-a165-70867728950e';
  const ID2 = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
  const ID3 = '3b241101-e2bb-4255-8caf-4136c566a962';

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'pasarela-media-'));
    dir = join(root, 'tmp');
    return () => rmSync(root, { recursive: true, force: true });
  });

  it('creates its directory 0700 and writes files 0600 named by msg_id', async () => {
    const t = new TempFiles(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const path = await t.write(ID1, Buffer.from('bytes'));
    expect(path).toBe(join(dir, `${ID1}.bin`));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('bytes');
    // Rewriting keeps 0600 even if the file had looser bits.
    writeFileSync(path, 'x', { mode: 0o644 });
    await t.write(ID1, Buffer.from('again'));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('again');
  });

  it('refuses names that are not msg_ids', async () => {
    const t = new TempFiles(dir);
    for (const bad of ['../../etc/passwd', 'foto.jpg', ID1.toUpperCase(), `${ID1}x`, '', `${ID1.slice(0, 35)}/`]) {
      await expect(t.write(bad, Buffer.from('x'))).rejects.toThrow(/not a msg_id/);
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('removes its own files, ignoring missing ones, and nothing outside', async () => {
    const t = new TempFiles(dir);
    const path = await t.write(ID1, Buffer.from('x'));
    await t.remove(path);
    expect(existsSync(path)).toBe(false);
    await t.remove(path);
    const outside = join(root, 'keep.txt');
    writeFileSync(outside, 'x');
    await expect(t.remove(outside)).rejects.toThrow(/outside/);
    await expect(t.remove(join(dir, '..', 'keep.txt'))).rejects.toThrow(/outside/);
    expect(existsSync(outside)).toBe(true);
  });

  it('sweeps everything not kept', async () => {
    const t = new TempFiles(dir);
    const p1 = await t.write(ID1, Buffer.from('1'));
    const p2 = await t.write(ID2, Buffer.from('2'));
    const p3 = await t.write(ID3, Buffer.from('3'));
    writeFileSync(join(dir, 'stray.tmp'), 'x');
    mkdirSync(join(dir, 'sub'));
    expect(await t.sweep([p1, `${ID3}.bin`])).toBe(2);
    expect(readdirSync(dir).sort()).toEqual([`${ID1}.bin`, `${ID3}.bin`, 'sub'].sort());
    expect(existsSync(p2)).toBe(false);
    expect(existsSync(p3)).toBe(true);
    expect(await t.sweep([])).toBe(2);
    expect(readdirSync(dir)).toEqual(['sub']);
  });
});
