/**
 * Text as a terminal shows it: how many columns a string takes, cutting it
 * to a width without splitting a character.
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

/** `s` without SGR sequences: what is left takes columns. */
export function stripSgr(s: string): string {
  return s.replace(/\x1b\[[0-9;]*m/g, '');
}
