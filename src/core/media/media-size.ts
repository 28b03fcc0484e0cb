import { fail } from '../api/errors.js';
import type { MediaTipo } from './media.js';

/** The 413 of a file over its type's limit, stating the maximum. */

const MB = 1024 * 1024;

const mbText = (max: number): string => (max % MB === 0 ? `${max / MB} MB` : `${(max / MB).toFixed(1)} MB`);

/** "17.2 MB"; whole megabytes without decimals; bytes when one decimal would hide the excess (1 MB + 1 byte). */
function sizeText(bytes: number, max: number): { size: string; max: string } {
  const maxText = mbText(max);
  const rounded = (bytes / MB).toFixed(1);
  if (Number(rounded) * MB <= max) return { size: `${bytes} bytes`, max: `${maxText} (${max} bytes)` };
  return { size: `${rounded} MB`, max: maxText };
}

/** `over`: only known to pass the limit (a body cut off as it did), said as "over <max>". */
export function tooLargeText(tipo: MediaTipo, bytes: number, max: number, what: string, over = false): string {
  if (over) return `${what} too large: over ${mbText(max)}; the maximum for ${tipo} is ${mbText(max)}`;
  const t = sizeText(bytes, max);
  return `${what} too large: ${t.size}; the maximum for ${tipo} is ${t.max}`;
}

export function tooLarge(tipo: MediaTipo, bytes: number, max: number, what: string): never {
  fail('MEDIA_TOO_LARGE', tooLargeText(tipo, bytes, max, what));
}
