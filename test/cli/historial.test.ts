import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Seeded, type TestServer } from '../helpers/server.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, expectJsonOnly, expectCleanExit, ids, ndjson, rows } from './helpers.js';
import { parseCsv } from '../helpers/csv.js';
import { D1, D2, seedHistory, TRICKY, type History } from './historial-fixture.js';

/**
 * `pasarela historial` through the built CLI against a real server: every
 * format, --all across pages, filters passed through, csv quoting, exit codes.
 */

const CSV_COLUMNS = [
  'msg_id',
  'celular_id',
  'destinatario',
  'tipo',
  'modo',
  'estado',
  'texto',
  'media',
  'gateway_msg_id',
  'error',
  'created_at',
  'enviado_at',
  'entregado_at',
  'leido_at',
  'error_clase',
  'reintento_de',
  'vigencia_hasta',
  'enviar_en',
];

let s: TestServer;
let cli: Cli;
let A: Seeded;
let a2: number;
let seeds: History['seeds'];
let expected: History['expected'];

const key = () => ({ env: { PASARELA_KEY: A.clientKey } });

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC' });
  cli = new Cli(s.url, injectTransport(s.app));
  ({ A, a2, seeds, expected } = await seedHistory(s));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela historial: formats of one page', () => {
  it('table off a TTY: tab-separated rows, no header, newest first, 50 a page', async () => {
    const out = expectCleanExit(await cli.run(['historial'], key()));
    const r = rows(out);
    expect(r).toHaveLength(50);
    expect(r.map((x) => x[1])).toEqual(expected().slice(0, 50));
    // fecha, msg_id, celular, destinatario, tipo, modo, estado, texto, error: the text's line break becomes a space.
    expect(r[0]).toEqual([
      '2026-03-10T01:00:00.000Z',
      seeds[120]!.msg_id,
      String(A.celularId),
      D1,
      'texto',
      'directo',
      'enviado',
      TRICKY.replace('\n', ' '),
      '',
    ]);
  });

  it("--json and --format json: the server's page as one document", async () => {
    const [j1, j2] = await Promise.all([cli.run(['historial', '--json'], key()), cli.run(['historial', '--format', 'json'], key())]);
    const b = expectJsonOnly(j1);
    expect(b).toMatchObject({ ok: true, page: 1, por_pagina: 50, total: 121, total_paginas: 3 });
    expect(ids(b.mensajes)).toEqual(expected().slice(0, 50));
    expect(expectJsonOnly(j2)).toEqual(b);
  });

  it('--format ndjson: one record per line, every field', async () => {
    const out = expectCleanExit(await cli.run(['historial', '--format', 'ndjson', '--por-pagina', '20'], key()));
    expect(out.endsWith('\n')).toBe(true);
    const recs = ndjson(out);
    expect(recs).toHaveLength(20);
    expect(ids(recs)).toEqual(expected().slice(0, 20));
    for (const m of recs) expect(Object.keys(m).sort()).toEqual([...CSV_COLUMNS].sort());
    expect(recs[0]!.texto).toBe(TRICKY);
  });

  it('--format csv: RFC 4180 with a header; a text with a comma, quotes and a line break survives', async () => {
    const out = expectCleanExit(await cli.run(['historial', '--format', 'csv', '--por-pagina', '200'], key()));
    expect(out).toContain('"Hola, ""amigo""\nsegunda línea, con coma"');
    const table = parseCsv(out);
    expect(table[0]).toEqual(CSV_COLUMNS);
    expect(table).toHaveLength(122);
    for (const rec of table) expect(rec).toHaveLength(CSV_COLUMNS.length);
    const col = (name: string) => CSV_COLUMNS.indexOf(name);
    expect(table.slice(1).map((r) => r[col('msg_id')])).toEqual(expected());
    expect(table[1]![col('texto')]).toBe(TRICKY);
    const errRow = table.find((r) => r[col('estado')] === 'error')!;
    expect(errRow[col('error')]).toBe('rechazado, "sin" WhatsApp');
    const img = table.find((r) => r[col('tipo')] === 'imagen')!;
    expect(JSON.parse(img[col('media')]!)).toEqual({ url: 'https://example.com/x.png', mime: 'image/png' });
    // Empty for null.
    expect(table[1]![col('leido_at')]).toBe('');
  });
});

describe('pasarela historial --all', () => {
  const all = ['historial', '--all', '--por-pagina', '50'];

  it('ndjson: every record of the 3 pages once, newest first; no progress when stderr is not a TTY', async () => {
    const r = await cli.run([...all, '--format', 'ndjson'], key());
    const recs = ndjson(expectCleanExit(r));
    expect(r.stderr).toBe('');
    expect(recs).toHaveLength(121);
    expect(ids(recs)).toEqual(expected());
  });

  it('csv: one header, then every record', async () => {
    const table = parseCsv(expectCleanExit(await cli.run([...all, '--format', 'csv'], key())));
    expect(table).toHaveLength(122);
    expect(table.filter((r) => r[0] === 'msg_id')).toHaveLength(1);
    expect(table.slice(1).map((r) => r[0])).toEqual(expected());
  });

  it('json: {ok, total, mensajes} with every record', async () => {
    const b = expectJsonOnly(await cli.run([...all, '--json'], key()));
    expect(Object.keys(b).sort()).toEqual(['mensajes', 'ok', 'total']);
    expect(b).toMatchObject({ ok: true, total: 121 });
    expect(ids(b.mensajes)).toEqual(expected());
  });

  it('table off a TTY: every row, no header', async () => {
    const r = rows(expectCleanExit(await cli.run(all, key())));
    expect(r.map((x) => x[1])).toEqual(expected());
  });

  it('with filters, from --page on', async () => {
    const r = ndjson(
      expectCleanExit(
        await cli.run(['historial', '--all', '--por-pagina', '7', '--estado', 'leido', '--celular', String(A.celularId), '--format', 'ndjson'], key()),
      ),
    );
    expect(ids(r)).toEqual(expected((x) => x.estado === 'leido' && x.celular_id === A.celularId));
    const fromPage2 = ndjson(expectCleanExit(await cli.run(['historial', '--all', '--page', '2', '--por-pagina', '50', '--format', 'ndjson'], key())));
    expect(ids(fromPage2)).toEqual(expected().slice(50));
  });
});

describe('pasarela historial: filters reach the server', () => {
  const run = async (args: string[], k = A.clientKey) =>
    ids(ndjson(expectCleanExit(await cli.run(['historial', '--format', 'ndjson', '--por-pagina', '500', ...args], { env: { PASARELA_KEY: k } }))));

  it('--estado, --celular, --desde/--hasta, --destinatario, --page', async () => {
    expect(await run(['--estado', 'error'])).toEqual(expected((x) => x.estado === 'error'));
    expect(await run(['--celular', String(a2)])).toEqual(expected((x) => x.celular_id === a2));
    const from = Date.UTC(2026, 1, 20);
    const to = Date.UTC(2026, 1, 25);
    expect(await run(['--desde', '2026-02-20', '--hasta', '2026-02-24'])).toEqual(expected((x) => x.created_at >= from && x.created_at < to));
    // Instants, as a cron job passes its last run and now: desde included, hasta excluded; a day and an instant mix.
    const at = Date.UTC(2026, 1, 22, 6);
    expect(await run(['--desde', '2026-02-20T00:00:00Z', '--hasta', '2026-02-22T01:00:00-05:00'])).toEqual(
      expected((x) => x.created_at >= from && x.created_at < at),
    );
    expect(await run(['--desde', '2026-02-22T06:00:00Z', '--hasta', '2026-02-24'])).toEqual(expected((x) => x.created_at >= at && x.created_at < to));
    expect(await run(['--destinatario', '+1 415 555 2671'])).toEqual(expected((x) => x.destinatario === D2));
    expect(await run(['--destinatario', D1, '--estado', 'pendiente', '--celular', String(A.celularId)])).toEqual(
      expected((x) => x.destinatario === D1 && x.estado === 'pendiente' && x.celular_id === A.celularId),
    );
    const p2 = ndjson(expectCleanExit(await cli.run(['historial', '--format', 'ndjson', '--page', '2', '--por-pagina', '10'], key())));
    expect(ids(p2)).toEqual(expected().slice(10, 20));
    // A celular key: its own line.
    expect(await run([], A.celularKey)).toEqual(expected((x) => x.celular_id === A.celularId));
  });
});

describe('pasarela historial: exit codes', () => {
  it('2 for a bad --format, a --format that disagrees with --json, or a bad option value; no request is made', async () => {
    for (const args of [
      ['--format', 'xml'],
      ['--json', '--format', 'csv'],
      ['--desde', '2026-02-30'],
      ['--hasta', '2026-2-1'],
      ['--desde', '2026-02-20T10:00:00'],
      ['--hasta', '2026-02-20 25:00:00Z'],
      ['--por-pagina', '0'],
      ['--por-pagina', '501'],
      ['--page', '0'],
      ['--estado', 'enviada'],
      ['--celular', 'uno'],
    ]) {
      const r = await cli.run(['historial', ...args], key());
      expect(r.exitCode, args.join(' ')).toBe(2);
      // Under --json a usage error is JSON on stdout (D-156); otherwise stdout stays empty.
      if (args.includes('--json')) expect(JSON.parse(r.stdout), args.join(' ')).toEqual({ ok: false, error: expect.any(String), exit_code: 2 });
      else expect(r.stdout, args.join(' ')).toBe('');
    }
  });

  it('3 for a refused key or a sibling line, 4 for an unknown line, 2 for a backwards date range', async () => {
    expect((await cli.run(['historial'], { env: { PASARELA_KEY: 'WAC_1_not-a-real-key' } })).exitCode).toBe(3);
    expect((await cli.run(['historial', '--celular', String(a2)], { env: { PASARELA_KEY: A.celularKey } })).exitCode).toBe(3);
    const missing = await cli.run(['historial', '--celular', '999999', '--json'], key());
    expect(missing.exitCode).toBe(4);
    expect(JSON.parse(missing.stdout)).toMatchObject({ ok: false, api_codigo: 600 });
    // desde after hasta is refused before any request (usage, exit 2), naming both flags.
    const backwards = await cli.run(['historial', '--desde', '2026-03-02', '--hasta', '2026-03-01'], key());
    expect(backwards.exitCode).toBe(2);
    expect(backwards.stderr).toMatch(/^error: --desde 2026-03-02 is after --hasta 2026-03-01/);
  });
});
