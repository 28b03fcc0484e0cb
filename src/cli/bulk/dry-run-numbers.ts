import type { CountryCode } from 'libphonenumber-js/max';
import { API } from '../../core/api/api-routes.js';
import type { CelularView } from '../../core/api/views.js';
import type { Ctx } from '../context.js';
import { CliError } from '../exit-codes.js';
import type { NumeroCheck } from './rows.js';

/** How long the dry run waits for the server's list of lines before it checks without the line's country. */
const LINES_TIMEOUT_MS = 10_000;

/** The sending line's country as the dry run found it, or why it is not known. */
export type LineCountry = { country: CountryCode; numero: string } | { country: undefined; why: string };

/**
 * The country the server reads a bare national recipient in: the sending
 * line's (--celular, a line key's own line, a client key's only line). It
 * asks the server for the line's number (a read; nothing is sent); with no
 * key, no server or no single line, it is not known (D-157).
 */
export async function lineCountry(ctx: Ctx, celular: number | undefined): Promise<LineCountry> {
  let key: string;
  try {
    key = ctx.key();
  } catch (err) {
    if (err instanceof CliError) return { country: undefined, why: 'no API key' };
    throw err;
  }
  let lines: CelularView[];
  try {
    lines = (await ctx.client().call<{ celulares: CelularView[] }>('GET', API.celulares, { key, timeoutMs: LINES_TIMEOUT_MS })).celulares;
  } catch (err) {
    if (err instanceof CliError) return { country: undefined, why: `the lines could not be read: ${err.message}` };
    throw err;
  }
  const line = celular !== undefined ? lines.find((l) => l.id === celular) : lines.length === 1 ? lines[0] : undefined;
  if (!line) {
    const why = celular !== undefined ? `no line ${celular} for this key` : `this key has ${lines.length} lines; --celular ID names the sending one`;
    return { country: undefined, why };
  }
  const { countryOf } = await import('../../core/accounts/phone.js');
  const country = countryOf(line.numero);
  return country ? { country, numero: line.numero } : { country: undefined, why: `the number of line ${line.id} has no known country` };
}

/**
 * The server's rule for a recipient (core/accounts/phone.ts normalizeNumero):
 * a number with its country code, or a national number of the line's country.
 * Without the line's country, only the first: a bare national number is
 * reported refused, saying the country was not known.
 */
export async function numeroCheck(line: LineCountry): Promise<NumeroCheck> {
  const { normalizeNumero } = await import('../../core/accounts/phone.js');
  return (destinatario) => {
    const r = normalizeNumero(destinatario, line.country);
    if (r.ok) return undefined;
    return line.country ? r.reason : `${r.reason}; the line's country is not known here (${line.why}), so a national number cannot be checked`;
  };
}
