import { toText } from './to-text.js';

/**
 * CSV as every export writes it (the CLI's listings, the panel's downloads).
 * RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled;
 * records end with CRLF. A text that a spreadsheet would run as a formula
 * (it starts with = + - @, a tab or a CR: message texts come from anyone) gets
 * a leading `'`, the usual guard against CSV formula injection.
 */
export function csvField(v: unknown): string {
  let s = v === null || v === undefined ? '' : toText(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvRecord = (cells: unknown[]) => `${cells.map(csvField).join(',')}\r\n`;
