import { describe, expect, it } from 'vitest';
import { cellSafe, displayWidth, escapeControls, guardLine, rowsTaken, truncateWidth, wrapWidth } from '../../src/shared/terminal-text.js';
import { fitColumns } from '../../src/cli/output.js';

/** The pure pieces under the terminal output: widths, cuts, wraps, escapes, column fitting. */

describe('displayWidth', () => {
  it('counts columns by grapheme cluster', () => {
    expect(displayWidth('hola')).toBe(4);
    expect(displayWidth('😀')).toBe(2);
    expect(displayWidth('👨\u200d👩\u200d👧')).toBe(2); // one family, one cluster
    expect(displayWidth('🇲🇽')).toBe(2);
    expect(displayWidth('👍🏽')).toBe(2);
    expect(displayWidth('❤\uFE0F')).toBe(2);
    expect(displayWidth('漢字')).toBe(4);
    expect(displayWidth('ｈｏｌａ')).toBe(8); // fullwidth forms
    expect(displayWidth('cafe\u0301')).toBe(4);
    expect(displayWidth('\u0301')).toBe(0);
    expect(displayWidth('a\u200bb')).toBe(2);
  });
});

describe('truncateWidth', () => {
  it('cuts between clusters and ends in an ellipsis', () => {
    expect(truncateWidth('hola mundo', 20)).toBe('hola mundo');
    expect(truncateWidth('hola mundo', 5)).toBe('hola…');
    expect(truncateWidth('😀😀😀', 4)).toBe('😀…');
    expect(truncateWidth('a😀😀', 4)).toBe('a😀…');
    expect(truncateWidth('ab😀😀', 4)).toBe('ab…'); // the emoji would straddle the edge: left out whole
    expect(truncateWidth('👨\u200d👩\u200d👧👨\u200d👩\u200d👧', 3)).toBe('👨\u200d👩\u200d👧…');
    expect(truncateWidth('cafe\u0301cafe\u0301', 5)).toBe('cafe\u0301…');
    expect(truncateWidth('漢字テスト', 5)).toBe('漢字…');
    expect(truncateWidth('abc', 0)).toBe('');
    for (let w = 1; w < 12; w += 1) expect(displayWidth(truncateWidth('x😀漢e\u0301🇲🇽yz😀😀', w))).toBeLessThanOrEqual(w);
  });
});

describe('wrapWidth and rowsTaken', () => {
  it('wraps at spaces, breaks words longer than a line, never splits a cluster', () => {
    expect(wrapWidth('uno dos tres cuatro', 8)).toEqual(['uno dos', 'tres', 'cuatro']);
    expect(wrapWidth('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(wrapWidth('😀😀😀', 5)).toEqual(['😀😀', '😀']);
    expect(wrapWidth('', 10)).toEqual(['']);
    expect(rowsTaken('', 40)).toBe(1);
    expect(rowsTaken('x'.repeat(80), 40)).toBe(2);
    expect(rowsTaken('x'.repeat(81), 40)).toBe(3);
  });
});

describe('escaping control characters', () => {
  const nasty = 'a\u001b]0;pwned\u0007b\u001b[31mc\u009b2Jd\u202ee\ud83df';
  it('escapes C0, C1, DEL, bidi controls and lone surrogates as JSON-style escapes', () => {
    expect(escapeControls(nasty)).toBe('a\\u001b]0;pwned\\u0007b\\u001b[31mc\\u009b2Jd\\u202ee\\ud83df');
    expect(escapeControls('tab\tand\nnewline kept, \u007f not')).toBe('tab\tand\nnewline kept, \\u007f not');
    expect(escapeControls('😀 stays')).toBe('😀 stays');
  });
  it('a cell is one line', () => {
    expect(cellSafe('uno\ndos\r\ntres\tcuatro\u001b')).toBe('uno dos tres cuatro\\u001b');
  });
  it('the line guard keeps our colour codes only while colour is on', () => {
    const ours = '\u001b[32mok\u001b[39m \u001b[1mbold\u001b[22m';
    expect(guardLine(ours, true)).toBe(ours);
    expect(guardLine(ours, false)).toBe('\\u001b[32mok\\u001b[39m \\u001b[1mbold\\u001b[22m');
    // Not a colour: title, cursor moves, conceal, 256 colours.
    expect(guardLine('\u001b]0;t\u0007 \u001b[2J \u001b[8mx \u001b[38;5;1my', true)).toBe('\\u001b]0;t\\u0007 \\u001b[2J \\u001b[8mx \\u001b[38;5;1my');
    // JSON stays JSON with the same value.
    const json = JSON.stringify({ s: nasty });
    expect(JSON.parse(guardLine(json, false))).toEqual({ s: nasty });
  });
});

describe('fitColumns', () => {
  it('keeps natural widths when they fit, else cuts free text widest first, else gives up', () => {
    expect(fitColumns(['id', 'texto'], [4, 30], 40)).toEqual([4, 30]);
    expect(fitColumns(['id', 'texto', 'error'], [4, 30, 20], 40)).toEqual([4, 18, 18]);
    expect(fitColumns(['id', 'texto', 'error'], [4, 30, 12], 40)).toEqual([4, 24, 12]);
    expect(fitColumns(['id', 'numero', 'texto'], [4, 30, 30], 40)).toBeNull(); // numero is never cut: 4 + 30 + 10 > 40
  });
});
