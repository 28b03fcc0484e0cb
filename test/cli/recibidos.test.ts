import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { FORMULA, HOSTILE, S1, S2, seedInbox, TRICKY, type Inbox } from './recibidos-fixture.js';
import type { Line } from '../server/send-helpers.js';
import { injectTransport } from '../helpers/inject-http.js';
import { Cli, ids, ndjson, rows, type RunResult, expectCleanExit, expectJsonOnly } from './helpers.js';
import { parseCsv } from '../helpers/csv.js';

/**
 * `pasarela recibidos` through the built CLI against a real server whose lines
 * received messages through the simulator: every format, --all across pages,
 * filters passed through, csv quoting, hostile texts on a terminal, exit codes.
 */

const CSV_COLUMNS = ['id', 'celular_id', 'de', 'tipo', 'texto', 'media', 'gateway_msg_id', 'fecha', 'created_at'];
/** HOSTILE as the table, TSV and CSV show it: controls as visible escapes (the exact text: --json, ndjson). */
const HOSTILE_SHOWN = 'pago \\u001b[31mrojo\\u001b]0;titulo\\u0007 \\u009b2J \\u202etxt.exe';

let s: TestServer;
let cli: Cli;
let A: Line;
let a2: Line;
let expected: Inbox['expected'];

const key = (k = A.clientKey) => ({ env: { PASARELA_KEY: k } });
/** Exit 0, nothing on stderr; stdout as the data goes to a pipe or a file: the texts exact, a sender's escape codes included. */
function data(r: RunResult): string {
  expect(r.exitCode, r.stderr).toBe(0);
  expect(r.stderr).toBe('');
  return r.stdout;
}
const gids = (records: Array<Record<string, unknown>>) => ids(records, 'gateway_msg_id');

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', inboxPurgeIntervalMs: 0, healthIntervalMs: 0 });
  cli = new Cli(s.url, injectTransport(s.app));
  ({ A, a2, expected } = await seedInbox(s));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela recibidos: formats of one page', () => {
  it('table off a TTY: tab-separated rows, no header, newest first, 50 a page', async () => {
    const r = rows(data(await cli.run(['recibidos'], key())));
    expect(r).toHaveLength(50);
    // recibido, id, celular, de, tipo, texto: the text's line break becomes a space.
    expect(r[0]).toEqual(['2026-03-10T03:00:00.000Z', expect.stringMatching(/^\d+$/), String(A.celularId), S1, 'texto', TRICKY.replace('\n', ' ')]);
    // Off a terminal a cell is one line (tabs and line breaks become spaces), its controls escaped visibly (a pipe may end on a terminal).
    expect(r[1]![5]).toBe(HOSTILE_SHOWN);
  });

  it("--json and --format json: the server's page as one document", async () => {
    const [j1, j2] = await Promise.all([cli.run(['recibidos', '--json'], key()), cli.run(['recibidos', '--format', 'json'], key())]);
    const b = expectJsonOnly(j1);
    expect(b).toMatchObject({ ok: true, page: 1, por_pagina: 50, total: 123, total_paginas: 3 });
    expect(gids(b.recibidos)).toEqual(expected().slice(0, 50));
    expect(b.recibidos[1].texto).toBe(HOSTILE);
    expect(expectJsonOnly(j2)).toEqual(b);
  });

  it('--format ndjson: one record per line, every field, the texts exact off a terminal', async () => {
    const out = data(await cli.run(['recibidos', '--format', 'ndjson', '--por-pagina', '20'], key()));
    const recs = ndjson(out);
    expect(gids(recs)).toEqual(expected().slice(0, 20));
    for (const m of recs) expect(Object.keys(m).sort()).toEqual([...CSV_COLUMNS].sort());
    expect(recs.slice(0, 3).map((m) => m.texto)).toEqual([TRICKY, HOSTILE, FORMULA]);
  });

  it('--format csv: RFC 4180 with a header; commas, quotes and line breaks survive; a formula is defused', async () => {
    const out = data(await cli.run(['recibidos', '--format', 'csv', '--por-pagina', '200'], key()));
    const table = parseCsv(out);
    expect(table[0]).toEqual(CSV_COLUMNS);
    expect(table).toHaveLength(124);
    const col = (name: string) => CSV_COLUMNS.indexOf(name);
    expect(table.slice(1).map((r) => r[col('gateway_msg_id')])).toEqual(expected());
    expect(table[1]![col('texto')]).toBe(TRICKY);
    expect(table[2]![col('texto')]).toBe(HOSTILE_SHOWN);
    expect(table[3]![col('texto')]).toBe(`'${FORMULA}`);
    expect(table[1]![col('media')]).toBe('');
  });
});

describe('pasarela recibidos --all', () => {
  const all = ['recibidos', '--all', '--por-pagina', '50'];

  it('ndjson, csv, json and plain table: every record of the 3 pages once, newest first', async () => {
    const r = await cli.run([...all, '--format', 'ndjson'], key());
    expect(r.stderr).toBe('');
    expect(gids(ndjson(data(r)))).toEqual(expected());
    const table = parseCsv(data(await cli.run([...all, '--format', 'csv'], key())));
    expect(table.filter((x) => x[0] === 'id')).toHaveLength(1);
    expect(table.slice(1).map((x) => x[CSV_COLUMNS.indexOf('gateway_msg_id')])).toEqual(expected());
    const b = expectJsonOnly(await cli.run([...all, '--json'], key()));
    expect(Object.keys(b).sort()).toEqual(['ok', 'recibidos', 'total']);
    expect(b.total).toBe(123);
    expect(gids(b.recibidos)).toEqual(expected());
    expect(rows(data(await cli.run(all, key()))).map((x) => x[1])).toEqual(b.recibidos.map((m: { id: number }) => String(m.id)));
  });

  it('with filters, from --page on', async () => {
    const r = ndjson(
      expectCleanExit(
        await cli.run(['recibidos', '--all', '--por-pagina', '7', '--remitente', S2, '--celular', String(a2.celularId), '--format', 'ndjson'], key()),
      ),
    );
    expect(gids(r)).toEqual(expected((x) => x.de === S2 && x.celular_id === a2.celularId));
    const fromPage2 = ndjson(data(await cli.run(['recibidos', '--all', '--page', '2', '--por-pagina', '50', '--format', 'ndjson'], key())));
    expect(gids(fromPage2)).toEqual(expected().slice(50));
  });
});

describe('pasarela recibidos: filters reach the server', () => {
  const run = async (args: string[], k = A.clientKey) =>
    gids(ndjson(expectCleanExit(await cli.run(['recibidos', '--format', 'ndjson', '--por-pagina', '500', ...args], key(k)))));

  it('--celular, --remitente, --desde/--hasta, a celular key', async () => {
    expect(await run(['--celular', String(a2.celularId)])).toEqual(expected((x) => x.celular_id === a2.celularId));
    expect(await run(['--remitente', '+1 415 555 2671'])).toEqual(expected((x) => x.de === S2));
    expect(await run(['--remitente', '+52 1 55 1234 5678', '--celular', String(A.celularId)])).toEqual(
      expected((x) => x.de === S1 && x.celular_id === A.celularId),
    );
    const from = Date.UTC(2026, 1, 20);
    const to = Date.UTC(2026, 1, 25);
    expect(await run(['--desde', '2026-02-20', '--hasta', '2026-02-24'])).toEqual(expected((x) => x.at >= from && x.at < to));
    expect(await run([], A.celularKey)).toEqual(expected((x) => x.celular_id === A.celularId));
    // A hidden-number contact id goes to the server as is (no one here wrote from one).
    expect(await run(['--remitente', '123456789012345@lid'])).toEqual([]);
  });
});

describe('pasarela recibidos: exit codes', () => {
  it('2 for a bad --format, a --format that disagrees with --json, a bad option value or a backwards range; no request is made', async () => {
    for (const args of [
      ['--format', 'xml'],
      ['--json', '--format', 'csv'],
      ['--desde', '2026-02-30'],
      ['--hasta', '2026-2-1'],
      ['--por-pagina', '0'],
      ['--por-pagina', '501'],
      ['--page', '0'],
      ['--celular', 'uno'],
      ['--remitente', 'nadie'],
      ['--remitente', 'a b@lid'],
      ['--remitente', `${'1'.repeat(30)}@lid`],
      ['--desde', '2026-03-02', '--hasta', '2026-03-01'],
    ]) {
      const r = await cli.run(['recibidos', ...args], key());
      expect(r.exitCode, args.join(' ')).toBe(2);
      // Under --json a usage error is JSON on stdout (D-156); otherwise stdout stays empty.
      if (args.includes('--json')) expect(JSON.parse(r.stdout), args.join(' ')).toEqual({ ok: false, error: expect.any(String), exit_code: 2 });
      else expect(r.stdout, args.join(' ')).toBe('');
    }
  });

  it('3 for a refused key or a sibling line, 4 for an unknown line, 1 for a national number the server cannot read (naming the flag)', async () => {
    expect((await cli.run(['recibidos'], key('WAC_1_not-a-real-key'))).exitCode).toBe(3);
    expect((await cli.run(['recibidos', '--celular', String(a2.celularId)], key(A.celularKey))).exitCode).toBe(3);
    const missing = await cli.run(['recibidos', '--celular', '999999', '--json'], key());
    expect(missing.exitCode).toBe(4);
    expect(JSON.parse(missing.stdout)).toMatchObject({ ok: false, api_codigo: 600 });
    const national = await cli.run(['recibidos', '--remitente', '5512345678'], key());
    expect(national.exitCode).toBe(1);
    expect(national.stderr).toMatch(/--remitente/);
  });
});
