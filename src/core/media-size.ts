import { fail } from './errors.js';
import type { MediaTipo } from './media.js';

/** The 413 of a file over its type's limit, stating the maximum. */

const MB = 1024 * 1024;

/** "17.2 MB"; whole megabytes without decimals; bytes when one decimal would hide the excess (1 MB + 1 byte). */
function sizeText(bytes: number, max: number): { size: string; max: string } {
  const maxText = max % MB === 0 ? `${max / MB} MB` : `${(max / MB).toFixed(1)} MB`;
  const rounded = (bytes / MB).toFixed(1);
  if (Number(rounded) * MB <= max) return { size: `${bytes} bytes`, max: `${maxText} (${max} bytes)` };
  return { size: `${rounded} MB`, max: maxText };
}

/** `over`: the size is a lower bound (a body cut off past the limit), said as "over ...". */
export function tooLargeText(tipo: MediaTipo, bytes: number, max: number, what: string, over = false): string {
  const t = sizeText(bytes, max);
  return `${what} too large: ${over ? `over ${t.max}` : t.size}; the maximum for ${tipo} is ${t.max}`;
}

export function tooLarge(tipo: MediaTipo, bytes: number, max: number, what: string): never {
  fail('MEDIA_TOO_LARGE', tooLargeText(tipo, bytes, max, what));
}
