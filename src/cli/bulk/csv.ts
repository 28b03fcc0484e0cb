import { parse } from 'csv-parse';

/**
 * The campaign file, streamed: csv-parse reads it in chunks and hands over one
 * record at a time, and the pipe's backpressure keeps only a few chunks in
 * memory whatever the file's size. The first record is the header; every
 * later one must have as many fields (else the file is refused before any
 * send). `row` numbers the records after the header from 1.
 */

export interface CsvRow {
  row: number;
  record: Record<string, string>;
}

/** The file cannot be read as a campaign (exit 2, before any send). */
export class CsvFileError extends Error {}

/** The separators a campaign file may use: a spreadsheet saves `;` where the comma is the decimal mark. */
export const DELIMITERS = [',', ';', '\t'] as const;
export type Delimiter = (typeof DELIMITERS)[number];

/** A record longer than this is a broken quote, not a message (the longest text is a few KB). */
const MAX_RECORD_CHARS = 1_000_000;

/** The header's problems: empty, blank or repeated column names. */
export function headerProblem(header: readonly string[]): string | undefined {
  if (header.length === 0 || header.every((h) => h.trim() === '')) return 'the file has no header row (the first line names the columns)';
  const blank = header.findIndex((h) => h.trim() === '');
  if (blank !== -1) return `column ${blank + 1} of the header has no name`;
  const seen = new Set<string>();
  for (const h of header) {
    if (seen.has(h)) return `the header names the column "${h}" twice`;
    seen.add(h);
  }
  return undefined;
}

/**
 * The rows of `source` (bytes of a CSV file with a header), one at a time.
 * `onHeader` sees the header before the first row (and for a file with only
 * a header). Throws CsvFileError for a file that is not CSV as we take it.
 */
export async function* csvRows(source: NodeJS.ReadableStream, onHeader?: (header: string[]) => void, delimiter: Delimiter = ','): AsyncGenerator<CsvRow> {
  const parser = parse({ bom: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS, delimiter });
  // A read error of the file ends the parser with it, so the loop below throws it.
  source.on('error', (err: Error) => parser.destroy(err));
  source.pipe(parser);
  let header: string[] | undefined;
  let row = 0;
  try {
    for await (const fields of parser as AsyncIterable<string[]>) {
      if (header === undefined) {
        header = fields.map((h) => h.trim());
        const other = DELIMITERS.find((d) => d !== delimiter && header!.length === 1 && header![0]!.includes(d));
        if (other)
          throw new CsvFileError(
            `the header is one column, "${header[0]}": is the file separated by "${other === '\t' ? '\\t' : other}"? say so with --delimiter`,
          );
        const problem = headerProblem(header);
        if (problem) throw new CsvFileError(problem);
        onHeader?.(header);
        continue;
      }
      row += 1;
      const record: Record<string, string> = {};
      header.forEach((h, i) => (record[h] = fields[i] ?? ''));
      yield { row, record };
    }
  } catch (err) {
    if (err instanceof CsvFileError) throw err;
    const e = err as NodeJS.ErrnoException;
    if (e.code && e.code.startsWith('CSV_')) throw new CsvFileError(`the file is not valid CSV: ${e.message}`);
    throw err;
  } finally {
    // Stops reading the file when the caller stops early (a stop, an error).
    (source as { unpipe?: (d: NodeJS.WritableStream) => void }).unpipe?.(parser);
    (source as { destroy?: () => void }).destroy?.();
  }
  if (header === undefined) throw new CsvFileError('the file is empty (expected a header row and one row per message)');
}
