import { toText } from './to-text.js';

/**
 * A text a spreadsheet may run as a formula: it starts with a tab or a CR, or
 * with = + - @ (their full-width ＝ ＋ － ＠ and small ﹦ ﹢ ﹣ ﹫ forms too, which
 * some locales read as the sign) after any blanks (spaces, tabs, line breaks,
 * no-break and zero-width spaces, a BOM): spreadsheets skip those (D-156).
 */
const FORMULA = /^(?:[\t\r]|[\s\u200b-\u200d\u2060\ufeff]*[=+\-@\uff1d\uff0b\uff0d\uff20\ufe66\ufe62\ufe63\ufe6b])/u;

/**
 * CSV as every export writes it (the CLI's listings, the panel's downloads).
 * RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled;
 * records end with CRLF. A text that a spreadsheet would run as a formula
 * (FORMULA: message texts come from anyone) gets a leading `'`, the usual
 * guard against CSV formula injection.
 */
export function csvField(v: unknown): string {
  let s = v === null || v === undefined ? '' : toText(v);
  if (typeof v === 'string' && FORMULA.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvRecord = (cells: unknown[]) => `${cells.map(csvField).join(',')}\r\n`;
