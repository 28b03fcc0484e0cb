/**
 * A small, strict RFC 4180 reader for the CLI's csv output: quoted fields may
 * hold commas, doubled quotes and line breaks; every record ends with CRLF; a
 * bare quote, a bare CR or LF, or an unterminated last record throws.
 */
export function parseCsv(text: string): string[][] {
  const out: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length;) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
      } else if (ch === '"') {
        quoted = false;
        i += 1;
      } else {
        field += ch;
        i += 1;
      }
    } else if (ch === '"' && field === '') {
      quoted = true;
      i += 1;
    } else if (ch === ',') {
      record.push(field);
      field = '';
      i += 1;
    } else if (ch === '\r' && text[i + 1] === '\n') {
      record.push(field);
      out.push(record);
      record = [];
      field = '';
      i += 2;
    } else {
      if (ch === '"' || ch === '\n' || ch === '\r') throw new Error(`bare ${JSON.stringify(ch)} at ${i}`);
      field += ch;
      i += 1;
    }
  }
  if (quoted) throw new Error('a quoted field is not closed');
  if (field !== '' || record.length > 0) throw new Error('the last record does not end with CRLF');
  return out;
}
