import { isUtf8 } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/core/api/errors.js';
import { bodyCharset, checkFieldsWellFormed, decodeFormText, replaceIllFormed, Utf8Check } from '../../src/core/sending/exact-text.js';
import { errorOf } from '../helpers/expect.js';

/** The rule of exact text: which charsets a body may declare, and what decodes. */

const form = (s: string, charset: 'utf-8' | 'windows-1252' = 'utf-8') => decodeFormText(Buffer.from(s, 'latin1'), charset, 'f');

describe('bodyCharset', () => {
  it('no charset, or a UTF-8 label: UTF-8, for JSON and forms', () => {
    for (const ct of [
      undefined,
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset="UTF-8"',
      'application/json; foo=1; charset=utf8',
    ]) {
      expect(bodyCharset(ct, 'json')).toBe('utf-8');
      expect(bodyCharset(ct, 'form')).toBe('utf-8');
    }
  });

  it('forms: the labels that mean windows-1252 (latin1, iso-8859-1, us-ascii, cp1252...)', () => {
    for (const label of ['latin1', 'ISO-8859-1', 'iso8859-1', 'l1', 'windows-1252', 'cp1252', 'us-ascii', ' Latin1 ']) {
      expect(bodyCharset(`application/x-www-form-urlencoded; charset=${label}`, 'form'), label).toBe('windows-1252');
    }
  });

  it('anything else: 415 naming the charset; JSON only in UTF-8', () => {
    for (const [ct, kind] of [
      ['x; charset=shift_jis', 'form'],
      ['x; charset=utf-16le', 'form'],
      ['x; charset=iso-8859-2', 'form'],
      ['x; charset=nonsense', 'form'],
      ['x; charset=', 'form'],
      ['x; charset=latin1', 'json'],
      ['x; charset=utf-16', 'json'],
    ] as const) {
      const e = errorOf(() => bodyCharset(ct, kind));
      expect(e.row, ct).toBe(ERRORS.UNSUPPORTED_BODY);
      expect(e.message).toContain(`charset ${JSON.stringify(ct.split('=')[1])}`);
    }
  });
});

describe('decodeFormText', () => {
  it('"+" is a space, %XX a byte, bytes decoded in the charset', () => {
    expect(form('a+b%20c%2B')).toBe('a b c+');
    expect(form('caf%C3%A9 %F0%9F%98%80')).toBe('café 😀');
    expect(form('caf\xc3\xa9')).toBe('café');
    expect(form('caf%E9 %80 %9f %FF', 'windows-1252')).toBe('café € Ÿ ÿ');
    expect(form('%81%8D%8F%90%9D', 'windows-1252')).toBe('\u0081\u008d\u008f\u0090\u009d');
  });

  it('a broken escape: 400 naming the field and showing it', () => {
    for (const [raw, shown] of [
      ['%ZZ', '%ZZ'],
      ['x%E', '%E'],
      ['%', '%'],
      ['%g0', '%g0'],
      ['%0', '%0'],
    ]) {
      const e = errorOf(() => form(raw!));
      expect(e.row).toBe(ERRORS.INVALID_PARAMS);
      expect(e.message).toBe(`f: invalid percent escape ${JSON.stringify(shown)} (a % must be followed by two hex digits)`);
    }
  });

  it('UTF-8 that does not decode (lone, overlong, surrogate, past U+10FFFF, cut): 400', () => {
    for (const raw of ['%E9', '%C0%AF', '%ED%A0%80', '%F4%90%80%80', '%E2%82', '%80', '\xff']) {
      const e = errorOf(() => form(raw));
      expect(e.row, raw).toBe(ERRORS.INVALID_PARAMS);
      expect(e.message).toBe('f: not valid UTF-8 text');
    }
  });
});

describe('Utf8Check', () => {
  it('agrees with Buffer isUtf8 on any cut of many byte strings', () => {
    const samples: number[][] = [
      [0x61],
      [0xc3, 0xa9],
      [0xe2, 0x82, 0xac],
      [0xf0, 0x9f, 0x98, 0x80],
      [0xf4, 0x8f, 0xbf, 0xbf],
      [0xc0, 0x80],
      [0xc1, 0xbf],
      [0xe0, 0x80, 0x80],
      [0xe0, 0x9f, 0xbf],
      [0xed, 0x9f, 0xbf],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x8f, 0xbf, 0xbf],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf5, 0x80, 0x80, 0x80],
      [0x80],
      [0xe2, 0x82],
      [0xe2, 0x28, 0xa1],
    ];
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let i = 0; i < 2000; i++) {
      const len = 1 + Math.floor(rnd() * 6);
      samples.push(Array.from({ length: len }, () => (rnd() < 0.5 ? 0x80 + Math.floor(rnd() * 0x40) : Math.floor(rnd() * 256))));
    }
    for (const s of samples) {
      const b = Buffer.from([0x61, ...s, 0x62]);
      for (let cut = 0; cut <= b.length; cut++) {
        const c = new Utf8Check();
        const ok = c.scan(b.subarray(0, cut)) < 0 && c.scan(b.subarray(cut)) < 0 && !c.incomplete;
        expect(ok, `${b.toString('hex')} cut at ${cut}`).toBe(isUtf8(b));
      }
    }
  });

  it('gives the index of the first bad byte', () => {
    expect(new Utf8Check().scan(Buffer.from([0x61, 0x62, 0xe9, 0x63]))).toBe(3);
    expect(new Utf8Check().scan(Buffer.from([0x61, 0xff]))).toBe(1);
  });
});

describe('checkFieldsWellFormed', () => {
  it('refuses an unpaired surrogate anywhere, naming the top-level field; pairs pass', () => {
    checkFieldsWellFormed({ a: '😀', b: ['\ud83d\ude00'], c: { d: 1 } });
    for (const [body, field] of [
      [{ m: '\ud800' }, 'm'],
      [{ m: 'x\udc00' }, 'm'],
      [{ m: '\ude00\ud83d' }, 'm'],
      [{ n: { x: ['\udfff'] } }, 'n'],
      [{ n: { ['k\ud800']: 1 } }, 'n'],
      [{ ['k\ud800']: 1 }, 'a field name'],
    ] as const) {
      const e = errorOf(() => checkFieldsWellFormed(body));
      expect(e.row).toBe(ERRORS.INVALID_PARAMS);
      expect(e.message).toMatch(new RegExp(`^${field}: not valid Unicode text`));
    }
  });
});

describe('replaceIllFormed: gateway text kept, never ill-formed', () => {
  it('puts U+FFFD for each unpaired surrogate and NUL, keeps pairs and plain text, in strings, arrays and keys', () => {
    expect(replaceIllFormed('a\ud800b\u0000c')).toBe('a\ufffdb\ufffdc');
    expect(replaceIllFormed('\udc00\ud83d\ude00\ud83d')).toBe('\ufffd\ud83d\ude00\ufffd');
    expect(replaceIllFormed('hola 😀')).toBe('hola 😀');
    expect(replaceIllFormed({ texto: ['x\ud800'], 'k\u0000': 1, n: null, at: 5 })).toEqual({ texto: ['x\ufffd'], 'k\ufffd': 1, n: null, at: 5 });
  });
});
