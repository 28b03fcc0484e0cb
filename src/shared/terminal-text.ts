/* eslint-disable no-control-regex -- this file finds and escapes terminal control characters: its patterns match them on purpose */
/**
 * Text as a terminal shows it: how many columns a string takes, cutting it
 * to a width without splitting a character, and making control characters
 * from server data visible instead of letting the terminal obey them.
 * Hand-written on Intl.Segmenter (grapheme clusters) and Unicode property
 * escapes, so no dependency decides how wide a cell is.
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The user-perceived characters of `s` (an emoji with its modifiers, a letter with its accents: one each). */
export function graphemes(s: string): string[] {
  return Array.from(segmenter.segment(s), (x) => x.segment);
}

/**
 * East Asian Wide and Fullwidth code points outside the emoji (which the
 * emoji test below covers): CJK, kana, Hangul, fullwidth forms.
 */
const WIDE: Array<[number, number]> = [
  [0x1100, 0x115f],
  [0x2329, 0x232a],
  [0x2e80, 0x303e],
  [0x3041, 0x3247],
  [0x3250, 0x4dbf],
  [0x4e00, 0xa4c6],
  [0xa960, 0xa97c],
  [0xac00, 0xd7a3],
  [0xf900, 0xfaff],
  [0xfe10, 0xfe19],
  [0xfe30, 0xfe6b],
  [0xff01, 0xff60],
  [0xffe0, 0xffe6],
  [0x16fe0, 0x16fe4],
  [0x17000, 0x18cd5],
  [0x1b000, 0x1b2fb],
  [0x1f200, 0x1f251],
  [0x20000, 0x3fffd],
];

function isWide(cp: number): boolean {
  if (cp < 0x1100) return false;
  for (const [lo, hi] of WIDE) {
    if (cp < lo) return false;
    if (cp <= hi) return true;
  }
  return false;
}

const EMOJI_PRESENTATION = /\p{Emoji_Presentation}/u;
const EMOJI = /^\p{Emoji}/u;
const REGIONAL_INDICATOR = /^\p{Regional_Indicator}/u;
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}\p{Cc}]/u;

/** Columns one grapheme cluster takes: 2 for emoji and East Asian wide, 0 for a lone mark or format character, else 1. */
export function clusterWidth(g: string): number {
  const cp = g.codePointAt(0) ?? 0;
  if (cp >= 0x20 && cp < 0x7f) return 1; // ASCII, the common case
  if (EMOJI_PRESENTATION.test(g) || (g.includes('\uFE0F') && EMOJI.test(g)) || REGIONAL_INDICATOR.test(g)) return 2;
  if (isWide(cp)) return 2;
  if (ZERO_WIDTH.test(g)) return 0;
  return 1;
}

/** Columns `s` takes on a terminal (no escape sequences expected: strip them first). */
export function displayWidth(s: string): number {
  if (/^[\x20-\x7e]*$/.test(s)) return s.length;
  let w = 0;
  for (const g of graphemes(s)) w += clusterWidth(g);
  return w;
}

/**
 * `s` cut to at most `width` columns, ending in `…` when cut. Cuts between
 * grapheme clusters only, so an emoji, a flag or a letter with its accents
 * is kept whole or left out whole (a wide character that would straddle the
 * edge is left out: the line is then one column shorter).
 */
export function truncateWidth(s: string, width: number): string {
  if (displayWidth(s) <= width) return s;
  if (width <= 0) return '';
  const room = width - 1; // for the ellipsis
  let out = '';
  let w = 0;
  for (const g of graphemes(s)) {
    const gw = clusterWidth(g);
    if (w + gw > room) break;
    out += g;
    w += gw;
  }
  return `${out}…`;
}

/** `s` padded with spaces to `width` columns. */
export function padWidth(s: string, width: number): string {
  const w = displayWidth(s);
  return w >= width ? s : s + ' '.repeat(width - w);
}

/**
 * `text` broken into lines of at most `width` columns, at spaces where it can
 * and inside a word only when the word alone is wider than a line.
 */
export function wrapWidth(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(' ')) {
      const candidate = line === '' ? word : `${line} ${word}`;
      if (displayWidth(candidate) <= width) {
        line = candidate;
        continue;
      }
      if (line !== '') lines.push(line);
      line = '';
      let rest = word;
      while (displayWidth(rest) > width) {
        let head = '';
        let w = 0;
        const gs = graphemes(rest);
        let i = 0;
        for (; i < gs.length; i += 1) {
          const gw = clusterWidth(gs[i]!);
          if (w + gw > width) break;
          head += gs[i];
          w += gw;
        }
        if (i === 0) {
          // A character wider than the whole line: it goes alone.
          head = gs[0]!;
          i = 1;
        }
        lines.push(head);
        rest = gs.slice(i).join('');
      }
      line = rest;
    }
    lines.push(line);
  }
  return lines;
}

/** Terminal rows `line` takes once the terminal wraps it at `columns` (an empty line takes one). */
export function rowsTaken(line: string, columns: number): number {
  return Math.max(1, Math.ceil(displayWidth(line) / columns));
}

/*
 * Control characters. A terminal obeys ESC (colours, cursor moves, window
 * title, clipboard, hyperlinks), the other C0 and C1 controls, and the
 * bidirectional overrides reorder what follows them. Text from the server
 * (a line's name, a message, an error reason) must not reach the terminal
 * with them raw, so they are written as JSON-style escapes: `\u001b`,
 * `\u0007`, `\u202e`. The same spelling JSON uses, so JSON printed to a
 * terminal stays valid JSON with the same value.
 */

/** C0 (but tab and newline), DEL, C1, bidi marks/overrides/isolates, line/paragraph separators, lone surrogates. */
const CONTROL =
  /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** The same plus tab and newline: one table cell is one line. */
const CELL_CONTROL =
  /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** One SGR sequence (colour, bold, dim...): the only escape sequence our renderers put in lines. */
const SGR = /\x1b\[([0-9;]*)m/y;
/**
 * The SGR parameters chalk writes at 16 colours: reset, bold, dim, italic,
 * underline, inverse, strikethrough and their ends, the 16 colours. Not
 * conceal (8), blink, or 256/true colour, which we never write.
 */
const OUR_SGR = new Set([0, 1, 2, 3, 4, 7, 9, 22, 23, 24, 27, 29, 39, 49]);
const ourSgr = (params: string) =>
  params.split(';').every((p) => {
    const n = p === '' ? 0 : Number(p);
    return OUR_SGR.has(n) || (n >= 30 && n <= 37) || (n >= 40 && n <= 47) || (n >= 90 && n <= 97) || (n >= 100 && n <= 107);
  });

const escapeOne = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Every control character of `s` escaped visibly; tabs and newlines kept. For messages that quote server data. */
export function escapeControls(s: string): string {
  return s.replace(CONTROL, escapeOne);
}

/**
 * One table cell or field value: tabs and line breaks become spaces (a cell
 * is one line), every other control character is escaped visibly.
 */
export function cellSafe(s: string): string {
  return s.replace(/\r\n|[\t\n\r]/g, ' ').replace(CELL_CONTROL, escapeOne);
}

/**
 * The last guard before a line reaches a terminal: every control character
 * is escaped, except, when `colour` is on, the plain colour and style codes
 * our renderers write. Text quoting server data is escaped fully where it is
 * rendered (tables, fields, error reasons); this catches the rest, so with
 * colour off no raw ESC reaches the terminal at all, and with it on a server
 * string could at worst colour some text, never move the cursor, retitle the
 * window, write the clipboard or hide what is printed.
 */
export function guardLine(s: string, colour: boolean): string {
  if (!/[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]/.test(s)) return s;
  if (!colour) return escapeControls(s);
  let out = '';
  let i = 0;
  while (i < s.length) {
    if (s.charCodeAt(i) === 0x1b) {
      SGR.lastIndex = i;
      const m = SGR.exec(s);
      if (m && ourSgr(m[1]!)) {
        out += m[0];
        i += m[0].length;
        continue;
      }
    }
    const next = s.indexOf('\x1b', i + 1);
    const end = next === -1 ? s.length : next;
    out += escapeControls(s.slice(i, end));
    i = end;
  }
  return out;
}
