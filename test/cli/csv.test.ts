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
});
