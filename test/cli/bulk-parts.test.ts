import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { csvRows, CsvFileError } from '../../src/cli/bulk/csv.js';
import { rowKey } from '../../src/cli/bulk/keys.js';
import { mediaKindOf, prepareRow, specMissing, type BulkSpec } from '../../src/cli/bulk/rows.js';
import { missingColumns, parseTemplate, render, TemplateError } from '../../src/cli/bulk/template.js';

/** `send bulk`'s pure parts: templates, keys, row checks, and the CSV reader's streaming. */

describe('send bulk templates', () => {
  it('replaces {columna} with the row value; {{ and }} are literal braces', () => {
    const t = parseTemplate('Hola {nombre}, tu cita es el {fecha} {{ok}}');
    expect(render(t, { nombre: 'Ana', fecha: '3 dic' })).toBe('Hola Ana, tu cita es el 3 dic {ok}');
    expect(render(parseTemplate('sin columnas'), {})).toBe('sin columnas');
    expect(render(parseTemplate('{a}{a}{ b }'), { a: 'x', b: 'y' })).toBe('xxy');
  });

  it('names the columns the header lacks, before any send', () => {
    const t = parseTemplate('Hola {nombre} {apellido}, {nombre}');
    expect(missingColumns(t, ['destinatario', 'nombre'])).toEqual(['apellido']);
    expect(missingColumns(t, ['nombre', 'apellido'])).toEqual([]);
    const spec: BulkSpec = { template: t, toColumn: 'telefono', mediaColumn: 'foto' };
    expect(specMissing(spec, ['nombre'])).toEqual(['telefono', 'foto', 'apellido']);
  });

  it('a lone brace is an error that says where', () => {
    expect(() => parseTemplate('Hola {nombre')).toThrow(TemplateError);
    expect(() => parseTemplate('Hola }')).toThrow(/character 6/);
    expect(() => parseTemplate('Hola {}')).toThrow(TemplateError);
  });
});

describe('send bulk row keys', () => {
  it('the same file and row give the same key; another row or file another key', () => {
    const sha = 'a'.repeat(64);
    expect(rowKey(sha, 7)).toBe(rowKey(sha, 7));
    expect(rowKey(sha, 7)).not.toBe(rowKey(sha, 8));
    expect(rowKey('b'.repeat(64), 7)).not.toBe(rowKey(sha, 7));
    // The server's Idempotency-Key: printable ASCII, at most 255.
    expect(rowKey(sha, 100_000)).toMatch(/^[\x21-\x7e]{1,255}$/);
  });
});

describe('send bulk rows', () => {
  const spec: BulkSpec = { template: parseTemplate('Hola {nombre}'), toColumn: 'destinatario' };
  it('a good row is its recipient and text; a bad one says why, without stopping the others', () => {
    expect(prepareRow(spec, 1, { destinatario: '5215512345678', nombre: 'Ana' })).toEqual({
      ok: true,
      row: 1,
      destinatario: '5215512345678',
      texto: 'Hola Ana',
    });
    expect(prepareRow(spec, 2, { destinatario: '', nombre: 'Ana' })).toMatchObject({ ok: false, error: expect.stringContaining('no recipient') });
    expect(prepareRow(spec, 3, { destinatario: 'abc', nombre: 'Ana' })).toMatchObject({ ok: false, error: expect.stringContaining('recipient "abc"') });
    const long = prepareRow({ textColumn: 't', toColumn: 'destinatario' }, 4, { destinatario: '5215512345678', t: 'x'.repeat(4097) });
    expect(long).toMatchObject({ ok: false, error: expect.stringContaining('4097 characters') });
  });

  it('media: by extension, the text as caption; audio takes no caption', () => {
    expect(mediaKindOf('https://x.test/a/foto.JPG?v=1')).toBe('image');
    expect(mediaKindOf('/tmp/nota.ogg')).toBe('audio');
    expect(mediaKindOf('factura.pdf')).toBe('document');
    const m: BulkSpec = { template: parseTemplate('para {nombre}'), toColumn: 'destinatario', mediaColumn: 'archivo' };
    expect(prepareRow(m, 1, { destinatario: '5215512345678', nombre: 'Ana', archivo: 'https://x.test/f.png' })).toMatchObject({
      ok: true,
      texto: 'para Ana',
      media: { source: 'https://x.test/f.png', kind: 'image' },
    });
    expect(prepareRow(m, 2, { destinatario: '5215512345678', nombre: 'Ana', archivo: 'nota.mp3' })).toMatchObject({ ok: false });
  });
});

/** A CSV of `n` rows made one line at a time, counting the lines handed to the parser so far. */
function generated(n: number): { stream: Readable; made: () => number } {
  let made = 0;
  function* lines() {
    yield 'destinatario,nombre,nota\n';
    for (let i = 1; i <= n; i++) {
      made = i;
      yield `52155${String(i).padStart(8, '0')},Cliente ${i},"una nota, con coma"\n`;
    }
  }
  return { stream: Readable.from(lines(), { objectMode: false, highWaterMark: 16 * 1024 }), made: () => made };
}

describe('send bulk CSV reader', () => {
  it('streams a 100,000-row file: rows in flight stay bounded whatever the size', async () => {
    const { stream, made } = generated(100_000);
    let seen = 0;
    let maxAhead = 0;
    let header: string[] = [];
    for await (const { row, record } of csvRows(stream, (h) => (header = h))) {
      seen += 1;
      expect(row).toBe(seen);
      maxAhead = Math.max(maxAhead, made() - row);
      if (row === 50_000) expect(record).toEqual({ destinatario: '5215500050000', nombre: 'Cliente 50000', nota: 'una nota, con coma' });
    }
    expect(header).toEqual(['destinatario', 'nombre', 'nota']);
    expect(seen).toBe(100_000);
    // Only the pipe's buffers are ahead of the consumer (a few chunks of ~45-byte lines), never the file.
    expect(maxAhead).toBeLessThan(5_000);
  });

  it('a bad file is a CsvFileError: empty, a repeated column, a row with another field count, a broken quote', async () => {
    const read = async (text: string) => {
      const out = [];
      for await (const r of csvRows(Readable.from([text]))) out.push(r);
      return out;
    };
    await expect(read('')).rejects.toThrow(CsvFileError);
    await expect(read('a,a\n1,2\n')).rejects.toThrow(/twice/);
    await expect(read('a,b\n1,2\n3\n')).rejects.toThrow(CsvFileError);
    await expect(read('a,b\n"1,2\n')).rejects.toThrow(CsvFileError);
    // A byte-order mark and CRLF line ends are fine; blank lines are skipped.
    expect(await read('\ufeffa,b\r\n1,2\r\n\r\n3,4\r\n')).toEqual([
      { row: 1, record: { a: '1', b: '2' } },
      { row: 2, record: { a: '3', b: '4' } },
    ]);
  });
});
