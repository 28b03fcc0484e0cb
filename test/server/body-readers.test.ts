import { parse as parseForm } from 'fast-querystring';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/core/api/errors.js';
import { errorOf } from '../helpers/expect.js';
import type { FieldSink } from '../../src/server/body/fields.js';
import { FormFieldReader } from '../../src/server/body/form-reader.js';
import { JsonFieldReader } from '../../src/server/body/json-reader.js';

/**
 * The incremental body readers, in memory: fed byte by byte or in any cut,
 * they give the fields JSON.parse or the form parser would, and the file
 * field in pieces.
 */

class Collect implements FieldSink {
  fields: Record<string, unknown> = {};
  file = '';
  pieces = 0;
  ended = 0;
  constructor(private readonly streamed = 'file') {}
  streams(name: string): boolean {
    return name === this.streamed;
  }
  piece(text: string): void {
    this.file += text;
    this.pieces++;
  }
  pieceEnd(): void {
    this.ended++;
  }
  field(name: string, value: unknown): void {
    const had = this.fields[name];
    this.fields[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
}

const limits = { perField: 1024, total: 4096 };

function readJson(body: string | Buffer, chunk = 1): Collect {
  const sink = new Collect();
  const r = new JsonFieldReader(sink, limits);
  const b = Buffer.from(body);
  for (let i = 0; i < b.length; i += chunk) r.write(b.subarray(i, i + chunk));
  r.end();
  return sink;
}

function readForm(body: string, chunk = 1): Collect {
  const sink = new Collect();
  const r = new FormFieldReader(sink, limits);
  const b = Buffer.from(body);
  for (let i = 0; i < b.length; i += chunk) r.write(b.subarray(i, i + chunk));
  r.end();
  return sink;
}

describe('JsonFieldReader', () => {
  const obj = {
    a: 'plain',
    esc: 'q"b\\s/n\nt\tu\u00e9 \ud83d\ude00 \u0001',
    n: -12.5e3,
    t: true,
    f: false,
    z: null,
    nested: { x: [1, { y: 'z' }], s: 'with } and ] inside' },
    file: 'QUJD/+==',
    after: 'the file is not last',
  };
  const text = JSON.stringify(obj, null, 1).replace(/\//g, '\\/').replace('é', '\\u00e9').replace('😀', '\\ud83d\\ude00');

  it.each([1, 2, 3, 7, 1000])('chunks of %i byte(s): the fields of JSON.parse, the file in pieces', (chunk) => {
    const s = readJson(text, chunk);
    const { file, ...rest } = JSON.parse(text) as Record<string, unknown>;
    expect(s.fields).toEqual(rest);
    expect(s.file).toBe(file);
    expect(s.ended).toBe(1);
  });

  it('repeated fields reach the sink each time (JSON.parse keeps the last)', () => {
    expect(readJson('{"a":"1","a":"2"}').fields).toEqual({ a: ['1', '2'] });
  });

  it('malformed bodies: 400 MALFORMED_BODY, never anything else', () => {
    for (const bad of [
      '[1]',
      '{"a" 1}',
      '{"a":1,}',
      '{"a":tru}',
      '{"a":"x',
      '{"a":"\\x"}',
      '{"a":"\\u12g4"}',
      '{"a":"b"} x',
      '{"a":"\u0001"}',
      '{"__proto__":{"x":1}}',
      '{"a":{"__proto__":1}}',
      '{"constructor":{"prototype":{}}}',
      '{"a":01}',
      '{"a":{"b":}}',
      '',
    ]) {
      const e = errorOf(() => readJson(bad, 2));
      expect(e.row, bad).toBe(ERRORS.MALFORMED_BODY);
    }
  });

  it('bytes that are not UTF-8: 400 naming the field they are in, in any cut', () => {
    const cases: Array<[Buffer, string]> = [
      [Buffer.concat([Buffer.from('{"a":"x","mensaje":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]), 'mensaje'],
      [Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), 'a'],
      [Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xf4, 0x90, 0x80, 0x80]), Buffer.from('"}')]), 'a'],
      [Buffer.concat([Buffer.from('{"n":["'), Buffer.from([0xc0, 0xaf]), Buffer.from('"]}')]), 'n'],
      [Buffer.concat([Buffer.from('{"k'), Buffer.from([0xff]), Buffer.from('":1}')]), 'a field name'],
      [Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xe2, 0x82])]), 'a'],
    ];
    for (const [body, field] of cases) {
      for (const chunk of [1, 2, 1000]) {
        const e = errorOf(() => readJson(body, chunk));
        expect(e.row, `${body.toString('hex')} /${chunk}`).toBe(ERRORS.INVALID_PARAMS);
        expect(e.message).toBe(`${field}: not valid UTF-8 text`);
      }
    }
    // Outside any key or value the body is simply not JSON.
    expect(errorOf(() => readJson(Buffer.from([0x7b, 0xff, 0x7d]), 1)).row).toBe(ERRORS.MALFORMED_BODY);
    // Raw multi-byte characters cut anywhere are whole.
    expect(readJson('{"m":"añejo 😀 €"}', 1).fields).toEqual({ m: 'añejo 😀 €' });
  });

  it('an unpaired surrogate in a key or a collected value: 400 naming the field; a pair is joined', () => {
    for (const [body, field] of [
      ['{"m":"\\ud800"}', 'm'],
      ['{"m":"x\\udc00y"}', 'm'],
      ['{"m":"\\ud83d"}', 'm'],
      ['{"n":{"x":["\\udfff"]}}', 'n'],
      ['{"k\\ud800":1}', 'a field name'],
    ] as const) {
      const e = errorOf(() => readJson(body, 3));
      expect(e.row, body).toBe(ERRORS.INVALID_PARAMS);
      expect(e.message, body).toMatch(new RegExp(`^${field}: not valid Unicode text`));
    }
    expect(readJson('{"m":"\\ud83d\\ude00"}', 1).fields).toEqual({ m: '😀' });
  });

  it('fields over their bound: 413, naming the field', () => {
    const e = errorOf(() => readJson(`{"big":"${'x'.repeat(1100)}"}`, 100));
    expect(e.row).toBe(ERRORS.BODY_TOO_LARGE);
    expect(e.message).toMatch(/"big"/);
    const many = `{${Array.from({ length: 10 }, (_, i) => `"f${i}":"${'x'.repeat(500)}"`).join(',')}}`;
    expect(errorOf(() => readJson(many, 100)).message).toMatch(/in all/);
    expect(errorOf(() => readJson(`{"n":[${'1,'.repeat(600)}1]}`, 100)).row).toBe(ERRORS.BODY_TOO_LARGE);
    // The streamed field has no such bound.
    expect(readJson(`{"file":"${'A'.repeat(5000)}"}`, 100).file).toHaveLength(5000);
  });
});

describe('FormFieldReader', () => {
  const body = 'a=1&b=x+y%20z&c=%E2%82%AC&hex=%4a%4A&file=QU%2BJ%2FD%3D+A&a=2&flag&&empty=&t=%C3%B1&e=%F0%9F%98%80';
  it.each([1, 2, 3, 5, 1000])('chunks of %i byte(s): the fields of the form parser (valid text), the file percent-decoded', (chunk) => {
    const s = readForm(body, chunk);
    const { file, ...rest } = parseForm(body) as Record<string, unknown>;
    expect(s.fields).toEqual(rest);
    expect(s.file).toBe(file);
  });

  it('an escape cut by a chunk end joins; one cut by the end of the value, or bad, is refused naming the field', () => {
    expect(readForm('file=%E2%82%AC&x=1', 4).file).toBe('€');
    expect(readForm('file=A%41B', 1).file).toBe('AAB');
    for (const [bad, chunk] of [
      ['file=%4', 1],
      ['file=A%4', 2],
      ['file=%41%', 1],
      ['file=%zz', 1],
      ['file=%4&x=1', 3],
      ['a=%4', 1],
      ['a=%g1', 2],
      ['a=x%', 5],
    ] as const) {
      const e = errorOf(() => readForm(bad, chunk));
      expect(e.row, bad).toBe(ERRORS.INVALID_PARAMS);
      expect(e.message, bad).toMatch(new RegExp(`^${bad.slice(0, bad.indexOf('='))}: invalid percent escape`));
    }
  });

  it('collected values are UTF-8 by default, windows-1252 when declared; bytes that are not UTF-8 are refused naming the field', () => {
    const cp1252 = (body: string | Buffer) => {
      const sink = new Collect();
      const r = new FormFieldReader(sink, limits, 'windows-1252');
      r.write(Buffer.from(body));
      r.end();
      return sink.fields;
    };
    expect(cp1252('m=caf%E9+%80%9F&n=%81')).toEqual({ m: 'café €Ÿ', n: '\u0081' });
    expect(cp1252(Buffer.from([0x6d, 0x3d, 0xe9]))).toEqual({ m: 'é' });
    for (const [body, field] of [
      ['mensaje=caf%E9', 'mensaje'],
      ['x=%C3', 'x'],
      ['x=%ED%A0%80', 'x'],
      ['na%FFme=1', 'a field name'],
    ] as const) {
      const e = errorOf(() => readForm(body, 3));
      expect(e.row).toBe(ERRORS.INVALID_PARAMS);
      expect(e.message).toBe(`${field}: not valid UTF-8 text`);
    }
    // A character cut by a chunk end is whole once the field is.
    expect(readForm('m=%C3%A9%F0%9F%98%80', 1).fields).toEqual({ m: 'é😀' });
    expect(readForm('m=añejo😀', 1).fields).toEqual({ m: 'añejo😀' });
  });

  it('fields over their bound: 413', () => {
    expect(errorOf(() => readForm(`a=${'x'.repeat(1100)}`, 64)).row).toBe(ERRORS.BODY_TOO_LARGE);
    expect(errorOf(() => readForm(`${'k'.repeat(1100)}=1`, 64)).row).toBe(ERRORS.BODY_TOO_LARGE);
  });
});
