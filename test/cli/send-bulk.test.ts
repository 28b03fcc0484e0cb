import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSendBulkCommand } from '../../src/cli/commands/send-bulk.js';
import { Ctx } from '../../src/cli/context.js';
import { makeTerm } from '../../src/cli/io.js';
import { ManualClock } from '../../src/core/time/clock.js';
import { injectTransport } from '../helpers/inject-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { admin, editCelular, linkedLine, PNG, startMediaServer, type Line } from '../server/send-helpers.js';
import { Cli, fakeIO, ndjson } from './helpers.js';

/** `pasarela send bulk FILE.csv` in-process against a real server: NDJSON per row, exit codes, reruns, 402, 429. */
let s: TestServer;
let cli: Cli;
let file = 0;

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  cli = new Cli(s.url, injectTransport(s.app));
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

/** A CSV file in the CLI user's home: destinatario,nombre for `n` distinct recipients. */
function campaign(n: number, extra: string[] = []): string {
  file += 1;
  const path = join(cli.home, `campania-${file}.csv`);
  const lines = ['destinatario,nombre'];
  for (let i = 1; i <= n; i++) lines.push(`52155${String(file * 10_000 + i).padStart(8, '0')},Cliente ${i}`);
  writeFileSync(path, [...lines, ...extra].join('\n') + '\n');
  return path;
}

const count = async (l: Line) => (await s.core.store.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1 })).total;

describe('send bulk', () => {
  it('one NDJSON line per row off a TTY, exit 0; the same command again sends nothing twice', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const csv = campaign(5);
    const env = { PASARELA_KEY: l.celularKey };
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}, tu pedido salió'], { env });
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = ndjson(r.stdout);
    expect(lines).toHaveLength(5);
    for (const line of lines) {
      expect(Object.keys(line).sort()).toEqual(['api_codigo', 'destinatario', 'error', 'http', 'modo', 'msg_id', 'ok', 'row'].sort());
      expect(line).toMatchObject({ ok: true, modo: 'cola', http: 200, api_codigo: null, error: null });
    }
    expect(lines.map((x) => x.row).sort()).toEqual([1, 2, 3, 4, 5]);
    const third = lines.find((x) => x.row === 3)!;
    expect((await s.core.store.getMensaje(third.msg_id as string))?.texto).toBe('Hola Cliente 3, tu pedido salió');
    expect(r.stderr).toMatch(/5 of 5 rows accepted, 0 refused, 0 not sent/);
    expect(await count(l)).toBe(5);

    const again = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}, tu pedido salió'], { env });
    expect(again.exitCode, again.stderr).toBe(0);
    const byRow = (xs: Array<Record<string, unknown>>) => Object.fromEntries(xs.map((x) => [x.row, x.msg_id]));
    expect(byRow(ndjson(again.stdout))).toEqual(byRow(lines));
    expect(await count(l)).toBe(5);
  });

  it('a template naming a missing column, or a bad file: exit 2 and nothing sent', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const env = { PASARELA_KEY: l.celularKey };
    const csv = campaign(3);
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre} {apellido}'], { env });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('no column "apellido"');
    expect(r.stdout).toBe('');
    expect((await cli.run(['send', 'bulk', csv, '--text', 'x', '--to-column', 'telefono'], { env })).exitCode).toBe(2);
    expect((await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre'], { env })).exitCode).toBe(2);
    expect((await cli.run(['send', 'bulk', join(cli.home, 'no-such.csv'), '--text', 'x'], { env })).exitCode).toBe(2);
    // A row with another number of fields at the end: the whole file is refused before the first send.
    const ragged = campaign(3, ['5215500000001,uno,dos']);
    const bad = await cli.run(['send', 'bulk', ragged, '--text', 'Hola {nombre}'], { env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/not valid CSV/);
    expect(await count(l)).toBe(0);
  });

  it('a file separated by ";" needs --delimiter (the error says so); one not in UTF-8 is refused before any send', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const env = { PASARELA_KEY: l.celularKey };
    const semi = join(cli.home, 'punto-y-coma.csv');
    writeFileSync(semi, 'destinatario;nombre\n5215511112001;Ana\n5215511112002;José\n');
    const hint = await cli.run(['send', 'bulk', semi, '--text', 'Hola {nombre}'], { env });
    expect(hint.exitCode).toBe(2);
    expect(hint.stderr).toContain('--delimiter');
    const ok = await cli.run(['send', 'bulk', semi, '--text', 'Hola {nombre}', '--delimiter', ';'], { env });
    expect(ok.exitCode, ok.stderr).toBe(0);
    const jose = ndjson(ok.stdout).find((x) => x.row === 2)!;
    expect((await s.core.store.getMensaje(jose.msg_id as string))?.texto).toBe('Hola José');
    const latin1 = join(cli.home, 'latin1.csv');
    writeFileSync(latin1, Buffer.from('destinatario,nombre\n5215511112003,José\n', 'latin1'));
    const bad = await cli.run(['send', 'bulk', latin1, '--text', 'Hola {nombre}'], { env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('not UTF-8');
    expect(await count(l)).toBe(2);
  });

  it('--dry-run checks every row and sends nothing', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const csv = campaign(3);
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--dry-run'], { env: { PASARELA_KEY: l.celularKey } });
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = ndjson(r.stdout);
    expect(lines.map((x) => [x.row, x.ok, x.texto, x.msg_id])).toEqual([
      [1, true, 'Hola Cliente 1', null],
      [2, true, 'Hola Cliente 2', null],
      [3, true, 'Hola Cliente 3', null],
    ]);
    expect(r.stderr).toContain('nothing was sent');
    expect(await count(l)).toBe(0);
  });

  it('refused rows are reported with the server status and api_codigo; the others go; exit 12', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    // Row 3: not a phone number (refused here); row 4: shaped like one, refused by the server (400).
    const csv = campaign(2, ['abc,Nadie', '1234567,Nadie']);
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--concurrency', '2'], { env: { PASARELA_KEY: l.celularKey } });
    expect(r.exitCode).toBe(12);
    const byRow = Object.fromEntries(ndjson(r.stdout).map((x) => [x.row, x]));
    expect(byRow[1]).toMatchObject({ ok: true });
    expect(byRow[2]).toMatchObject({ ok: true });
    expect(byRow[3]).toMatchObject({ ok: false, http: null, msg_id: null, error: expect.stringContaining('recipient "abc"') });
    expect(byRow[4]).toMatchObject({ ok: false, http: 400, api_codigo: expect.any(Number) });
    expect(await count(l)).toBe(2);
  });

  it('402 stops the run: the rows not sent are reported, exit 12; after a top-up the same command sends the rest', async () => {
    const l = await linkedLine(s, { saldo: 3 });
    const csv = campaign(6);
    const env = { PASARELA_KEY: l.celularKey };
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--concurrency', '1'], { env });
    expect(r.exitCode).toBe(12);
    const byRow = Object.fromEntries(ndjson(r.stdout).map((x) => [x.row, x]));
    expect(Object.keys(byRow)).toHaveLength(6);
    for (const row of [1, 2, 3]) expect(byRow[row]).toMatchObject({ ok: true });
    expect(byRow[4]).toMatchObject({ ok: false, http: 402, api_codigo: 300 });
    for (const row of [5, 6]) expect(byRow[row]).toMatchObject({ ok: false, http: null, error: expect.stringContaining('not sent') });
    expect(r.stderr).toMatch(/stopped at row 4: the balance ran out/);
    expect(await count(l)).toBe(3);

    const topUp = await admin(s, 'POST', '/admin/saldo', { cliente_id: l.clienteId, monto: 10 });
    expect(topUp.status, topUp.text).toBe(200);
    const rest = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--concurrency', '1'], { env });
    expect(rest.exitCode, rest.stderr).toBe(0);
    expect(await count(l)).toBe(6);
  });

  it('a refused key stops the run at once with exit 3; the rows after it are reported as not sent', async () => {
    const csv = campaign(5);
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--concurrency', '1'], { env: { PASARELA_KEY: 'WA_1_badbadbadbadbadbadbad' } });
    expect(r.exitCode).toBe(3);
    const lines = ndjson(r.stdout);
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatchObject({ row: 1, ok: false, http: 401 });
    expect(lines.slice(1).every((x) => x.ok === false && x.http === null && String(x.error).startsWith('not sent'))).toBe(true);
  });

  it('429 retry_after is honoured: direct sends over a per-minute cap wait as told, on a driven clock, and all go', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    await editCelular(s, l, { max_envios_por_minuto: 2 });
    const csv = campaign(5);
    const io = fakeIO();
    const ctx = new Ctx(makeTerm(io.io, {}), { PASARELA_KEY: l.celularKey }, { url: s.url }, injectTransport(s.app));
    const waits: number[] = [];
    const clock = s.clock as ManualClock;
    await runSendBulkCommand({ file: csv, text: 'Hola {nombre}', toColumn: 'destinatario', directo: true, concurrency: 2, retry: 0 }, ctx, {
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
    });
    const lines = ndjson(io.stdout());
    expect(lines.every((x) => x.ok === true && x.modo === 'directo')).toBe(true);
    expect(lines).toHaveLength(5);
    // 5 sends at 2 a minute: two waits for the minute to free a slot, each the server's retry_after (at most 60 s).
    expect(waits.length).toBeGreaterThanOrEqual(2);
    for (const w of waits) expect(w).toBeGreaterThan(0);
    for (const w of waits) expect(w).toBeLessThanOrEqual(60_000);
    expect(io.stderr()).toMatch(/waiting [0-9]+ s \(retry_after\)/);
    expect(await count(l)).toBe(5);
  });

  it('--media-column: a local file goes as base64 and a URL by URL, the text as caption; a missing file is that row refused', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const media = await startMediaServer();
    try {
      const png = join(cli.home, 'foto.png');
      writeFileSync(png, PNG);
      file += 1;
      const csv = join(cli.home, `media-${file}.csv`);
      writeFileSync(
        csv,
        [
          'destinatario,nombre,archivo',
          `5215511110001,Ana,${png}`,
          `5215511110002,Luis,${media.base}/img.png`,
          `5215511110003,Eva,${join(cli.home, 'no.png')}`,
        ].join('\n'),
      );
      const r = await cli.run(['send', 'bulk', csv, '--text', 'Para {nombre}', '--media-column', 'archivo'], { env: { PASARELA_KEY: l.celularKey } });
      expect(r.exitCode, r.stderr).toBe(12);
      const byRow = Object.fromEntries(ndjson(r.stdout).map((x) => [x.row, x]));
      const local = await s.core.store.getMensaje(byRow[1]!.msg_id as string);
      expect(local).toMatchObject({ tipo: 'imagen' });
      expect(JSON.parse(local!.media!)).toMatchObject({ filename: 'foto.png', mime: 'image/png' });
      const byUrl = await s.core.store.getMensaje(byRow[2]!.msg_id as string);
      expect(JSON.parse(byUrl!.media!)).toEqual({ url: `${media.base}/img.png` });
      expect(byUrl?.texto).toBe('Para Luis');
      expect(byRow[3]).toMatchObject({ ok: false, http: null, error: expect.stringContaining('no such file') });
    } finally {
      await media.close();
    }
  });
});
