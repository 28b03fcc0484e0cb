import { Readable } from 'node:stream';
import { csvRecord } from '../core/api/csv.js';

/**
 * An export's body (the movements' API route and panel download): the CSV
 * header, then every page the generator yields, each record a CSV row of
 * `fields` or an NDJSON line, read from the store only as the client reads.
 * `first` was taken before answering, so a refused filter is still an error
 * and not a broken download.
 */
export function exportBody<R extends Record<string, unknown>>(
  format: 'csv' | 'ndjson',
  fields: ReadonlyArray<keyof R & string>,
  first: IteratorResult<R[]>,
  pages: AsyncGenerator<R[]>,
): Readable {
  async function* lines(): AsyncGenerator<string> {
    if (format === 'csv') yield csvRecord([...fields]);
    for (let r = first; !r.done; r = await pages.next()) {
      yield r.value.map((m) => (format === 'csv' ? csvRecord(fields.map((k) => m[k])) : `${JSON.stringify(m)}\n`)).join('');
    }
  }
  return Readable.from(lines(), { objectMode: false });
}

export const EXPORT_TYPE = { csv: 'text/csv; charset=utf-8', ndjson: 'application/x-ndjson; charset=utf-8' } as const;
