import { describe, expect, it } from 'vitest';
import { csvField } from '../../src/core/api/csv.js';

describe('csv fields of `historial --format csv`', () => {
  it('quotes commas, quotes and line breaks (RFC 4180)', () => {
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('di "hola"')).toBe('"di ""hola"""');
    expect(csvField('dos\nlíneas')).toBe('"dos\nlíneas"');
    expect(csvField(null)).toBe('');
    expect(csvField(42)).toBe('42');
    expect(csvField({ url: 'https://x/y' })).toBe('"{""url"":""https://x/y""}"');
  });

  it('defuses texts a spreadsheet would run as formulas', () => {
    expect(csvField('=HYPERLINK("http://evil","clic")')).toBe('"\'=HYPERLINK(""http://evil"",""clic"")"');
    expect(csvField('+52 55 1234')).toBe("'+52 55 1234");
    expect(csvField('-2+3')).toBe("'-2+3");
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField('\tx')).toBe("'\tx");
    expect(csvField('hola = adiós')).toBe('hola = adiós');
  });

  it('also after leading blanks, and in the full-width and small signs (＝ ＋ － ＠)', () => {
    // Spreadsheets skip leading blanks before a formula; some locales read the wide signs as = + - @.
    for (const t of [' =1+1', '   +1', '\u00a0=1+1', '\u200b=1+1', '\ufeff@SUM(A1)', '\u3000-1', ' \t=1', '\r\n=1+1', '\n=1+1']) {
      expect(csvField(t).replace(/^"/, '')).toMatch(/^'/);
    }
    for (const t of ['＝1+1', '＋52', '－2', '＠SUM(A1)', ' ＝1', '﹦1', '﹢1', '﹣1', '﹫x']) expect(csvField(t)).toBe(`'${t}`);
    // Text that only contains a sign later is left alone, and so are numbers.
    for (const t of ['a =1', 'x＝1', 'hola', ' hola', '']) expect(csvField(t)).toBe(t);
    expect(csvField(-5)).toBe('-5');
  });
});
