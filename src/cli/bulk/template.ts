/**
 * `send bulk --text TEMPLATE`: `{columna}` is replaced by the row's value of
 * that column; `{{` and `}}` are a literal brace. Parsed once, checked against
 * the file's header before the first send, rendered per row.
 */

export type Piece = { text: string } | { column: string };

export class TemplateError extends Error {}

/** The template as literal text and column references; a lone `{` or `}` is an error. */
export function parseTemplate(template: string): Piece[] {
  const pieces: Piece[] = [];
  let text = '';
  for (let i = 0; i < template.length; i++) {
    const ch = template[i]!;
    if ((ch === '{' || ch === '}') && template[i + 1] === ch) {
      text += ch;
      i += 1;
    } else if (ch === '{') {
      const end = template.indexOf('}', i + 1);
      const name = end === -1 ? '' : template.slice(i + 1, end).trim();
      if (end === -1 || name === '' || name.includes('{')) {
        throw new TemplateError(`the template has a "{" at character ${i + 1} that opens no {columna}; write "{{" for a literal brace`);
      }
      if (text !== '') pieces.push({ text });
      text = '';
      pieces.push({ column: name });
      i = end;
    } else if (ch === '}') {
      throw new TemplateError(`the template has a "}" at character ${i + 1} that closes nothing; write "}}" for a literal brace`);
    } else {
      text += ch;
    }
  }
  if (text !== '') pieces.push({ text });
  return pieces;
}

/** The columns a template names, once each, in order. */
export function templateColumns(pieces: Piece[]): string[] {
  return [...new Set(pieces.flatMap((p) => ('column' in p ? [p.column] : [])))];
}

/** The named columns that the header lacks (checked before any send). */
export function missingColumns(pieces: Piece[], header: readonly string[]): string[] {
  const have = new Set(header);
  return templateColumns(pieces).filter((c) => !have.has(c));
}

/** The text of one row: every `{columna}` replaced by the row's value (the header was checked, so each exists). */
export function render(pieces: Piece[], record: Readonly<Record<string, string>>): string {
  let out = '';
  for (const p of pieces) out += 'text' in p ? p.text : (record[p.column] ?? '');
  return out;
}
