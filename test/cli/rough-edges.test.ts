import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duration, longDuration, msRange, TIMER_MAX_MS } from '../../src/cli/duration.js';
import { main } from '../../src/cli/main.js';
import { SERVE_KNOBS } from '../../src/server/config-knobs.js';
import { pgSchema } from '../contract/adapters.js';
import { injectTransport } from '../helpers/inject-http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { describeWith, postgres, schemaUrl } from '../helpers/services.js';
import { linkedLine, startMediaServer, type Line, type MediaServer } from '../server/send-helpers.js';
import { Cli, fakeIO, ndjson } from './helpers.js';

/** Issue 40 item 6: the scripts' rough edges, each through the real CLI (in-process main, fake IO) against a real server. */
let s: TestServer;
let cli: Cli;
let media: MediaServer;
let file = 0;

beforeAll(async () => {
  s = await startTestServer({ allowPrivateUrls: true, queue: { gapMinMs: 0, gapMaxMs: 0 } });
  cli = new Cli(s.url, injectTransport(s.app));
  media = await startMediaServer();
});
afterAll(async () => {
  cli?.cleanup();
  await media?.close();
  await s?.stop();
});

const count = async (l: Line) => (await s.core.store.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1 })).total;

function csvFile(rows: string[]): string {
  file += 1;
  const path = join(cli.home, `edges-${file}.csv`);
  writeFileSync(path, ['destinatario,nombre', ...rows].join('\n') + '\n');
  return path;
}

/** Fresh Mexican mobiles (+52 55 XXXX XXXX as 5215 5XXXXXXXX), unique per call. */
let seqNum = 0;
const mobile = () => `52155${String(70_000_000 + ++seqNum * 7 + Math.floor(Math.random() * 7)).padStart(8, '0')}`;

describe('send bulk --dry-run reads numbers as the server does', () => {
  it("refuses what the server refuses and takes a national number in the line's country; a real run agrees row by row", async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const national = `55${String(20_000_000 + Math.floor(Math.random() * 9_000_000))}`; // Mexico City, no country code
    const csv = csvFile([`${mobile()},Ana`, '52155987651100,Bad', `${national},Nacional`]);
    const env = { PASARELA_KEY: l.celularKey };
    const dry = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--dry-run'], { env });
    expect(dry.exitCode, dry.stderr).toBe(12);
    const dryRows = Object.fromEntries(ndjson(dry.stdout).map((x) => [x.row, x]));
    expect(dryRows[1]).toMatchObject({ ok: true, dry_run: true });
    expect(dryRows[2]).toMatchObject({
      ok: false,
      error: expect.stringContaining('not a valid number, neither with its country code nor as a national number of MX'),
    });
    expect(dryRows[3]).toMatchObject({ ok: true });
    expect(dry.stderr).toContain('2 of 3 rows would be sent');
    expect(dry.stderr).not.toContain('not known');
    expect(await count(l)).toBe(0);

    const real = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}'], { env });
    expect(real.exitCode).toBe(12);
    const realRows = Object.fromEntries(ndjson(real.stdout).map((x) => [x.row, x]));
    expect([1, 2, 3].map((r) => realRows[r]!.ok)).toEqual([1, 2, 3].map((r) => dryRows[r]!.ok));
    expect(realRows[2]).toMatchObject({ http: 400 });
  });

  it("without the line's country (no key: offline) numbers must carry their country code, and it says so", async () => {
    const csv = csvFile([`${mobile()},Ana`, '52155987651100,Bad', '5523456789,Nacional']);
    const r = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}', '--dry-run'], { env: { PASARELA_KEY: undefined } });
    expect(r.exitCode).toBe(12);
    expect(r.stderr).toContain("note: the sending line's country is not known (no API key)");
    const rows = Object.fromEntries(ndjson(r.stdout).map((x) => [x.row, x]));
    expect(rows[1]).toMatchObject({ ok: true });
    expect(rows[2]).toMatchObject({ ok: false, error: expect.stringContaining('is not a valid number with country code') });
    expect(rows[3]).toMatchObject({ ok: false, error: expect.stringContaining('a national number cannot be checked') });
  });

  it('a client key with several lines: the line named by --celular gives the country; without it, not known', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const second = await cli.run(['celular', 'create', `5255${String(30_000_000 + Math.floor(Math.random() * 9_000_000))}`, '--json'], {
      env: { PASARELA_KEY: l.clientKey },
    });
    expect(second.exitCode, second.stderr).toBe(0);
    const csv = csvFile(['5523456789,Nacional']);
    const env = { PASARELA_KEY: l.clientKey };
    const named = await cli.run(['send', 'bulk', csv, '--text', 'x', '--dry-run', '--celular', String(l.celularId)], { env });
    expect(named.exitCode, named.stderr).toBe(0);
    const unnamed = await cli.run(['send', 'bulk', csv, '--text', 'x', '--dry-run'], { env });
    expect(unnamed.exitCode).toBe(12);
    expect(unnamed.stderr).toContain('this key has 2 lines; --celular ID names the sending one');
  });
});

describe('a rerun of send bulk marks the rows the server replayed', () => {
  it('NDJSON rows carry replayed: true, the summary counts them; a first run has no such field', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const csv = csvFile([`${mobile()},Ana`, `${mobile()},Beto`, 'abc,Nadie']);
    const env = { PASARELA_KEY: l.celularKey };
    const first = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}'], { env });
    expect(first.exitCode).toBe(12);
    for (const row of ndjson(first.stdout)) expect(row).not.toHaveProperty('replayed');
    expect(first.stderr).not.toContain('replayed');

    const again = await cli.run(['send', 'bulk', csv, '--text', 'Hola {nombre}'], { env });
    expect(again.exitCode).toBe(12);
    const rows = Object.fromEntries(ndjson(again.stdout).map((x) => [x.row, x]));
    expect(rows[1]).toMatchObject({ ok: true, replayed: true });
    expect(rows[2]).toMatchObject({ ok: true, replayed: true });
    // Refused here before any send: nothing to replay.
    expect(rows[3]).not.toHaveProperty('replayed');
    expect(again.stderr).toMatch(
      /2 of 3 rows accepted, 1 refused, 0 not sent.*; 2 of them replayed: answered as an earlier run of this file was, nothing sent now/,
    );
    expect(await count(l)).toBe(2);
  });

  it('on a terminal the text report lists the replayed rows', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const csv = csvFile([`${mobile()},Ana`, `${mobile()},Beto`]);
    const env = cli.env({ PASARELA_KEY: l.celularKey });
    const args = ['send', 'bulk', csv, '--text', 'Hola {nombre}'];
    const once = fakeIO();
    once.io.stdoutIsTTY = true;
    expect(await main(args, once.io, env, { http: cli.http })).toBe(0);
    expect(once.stdout()).not.toContain('replayed');
    const twice = fakeIO();
    twice.io.stdoutIsTTY = true;
    expect(await main(args, twice.io, env, { http: cli.http })).toBe(0);
    const lines = twice.stdout().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^row 1\t\d+\treplayed: msg_id [0-9a-f-]{36} was sent by an earlier run$/);
    expect(lines[1]).toMatch(/^row 2\t/);
  });
});

describe('a duration longer than a timer holds is a usage error', () => {
  it('the parsers: 24d is the most a wait may be; a retention may be longer', () => {
    expect(duration('24d')).toBe(24 * 86_400_000);
    expect(duration(String(TIMER_MAX_MS))).toBe(TIMER_MAX_MS);
    expect(() => duration(String(TIMER_MAX_MS + 1))).toThrow(/too long/);
    expect(() => duration('25d')).toThrow(/at most 24d/);
    expect(() => duration('99999999d')).toThrow(/too long/);
    expect(() => msRange(`0-${TIMER_MAX_MS + 1}`)).toThrow(/too long/);
    expect(longDuration('400d')).toBe(400 * 86_400_000);
    // The serve settings that are no timer's wait keep their long values (90d by default).
    const long = Object.entries(SERVE_KNOBS)
      .filter(([, k]) => k.kind === 'duration' && 'long' in k && k.long)
      .map(([name]) => name);
    expect(long.sort()).toEqual(['inboxRetentionMs', 'queueTtlMs']);
  });

  it('send --timeout 30d, a bare --timeout of 99999999 seconds and --max-wait 999d: exit 2, nothing sent', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const env = { PASARELA_KEY: l.celularKey };
    const dest = mobile();
    const runs = await Promise.all([
      cli.run(['send', 'text', dest, 'hola', '--wait', '--timeout', '30d'], { env }),
      cli.run(['send', 'text', dest, 'hola', '--wait', '--timeout', '99999999'], { env }),
      cli.run(['send', 'text', dest, 'hola', '--wait-window', '--directo', '--max-wait', '999d'], { env }),
    ]);
    for (const r of runs) {
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toContain('too long: a wait may be at most 24d');
      expect(r.stdout).toBe('');
    }
    expect(await count(l)).toBe(0);
    // The longest a timer holds still waits (and is accepted as a value).
    const ok = await cli.run(['send', 'text', dest, 'hola', '--max-wait', '24d'], { env });
    expect(ok.exitCode, ok.stderr).toBe(0);
  });
});

describe('--json usage errors print JSON', () => {
  it("commander's and the CLI's own usage errors: a JSON error on stdout, the text on stderr, exit 2", async () => {
    const env = { PASARELA_KEY: 'WAC_1_whatever' };
    const csv = csvFile([`${mobile()},Ana`]);
    const runs = await Promise.all([
      cli.run(['send', 'text', '123', 'hi', '--json'], { env }), // a bad argument (commander's parser)
      cli.run(['info', '--bogus', '--json'], { env }), // an unknown option
      cli.run(['send', 'bulk', csv, '--json'], { env }), // our own check: no --text
      cli.run(['send', 'text', mobile(), 'hi', '--timeout', '30d', '--json'], { env }),
    ]);
    for (const r of runs) {
      expect(r.exitCode, r.stderr).toBe(2);
      const body = JSON.parse(r.stdout) as { ok: boolean; error: string; exit_code: number };
      expect(body).toEqual({ ok: false, error: expect.any(String), exit_code: 2 });
      expect(body.error).not.toMatch(/^error:/);
      expect(r.stderr).toContain(body.error.split('\n')[0]!);
    }
    expect(JSON.parse(runs[1].stdout).error).toContain("unknown option '--bogus'");
    expect(JSON.parse(runs[2].stdout).error).toContain('missing the text');
    // Without --json: nothing on stdout, as before.
    const plain = await cli.run(['send', 'text', '123', 'hi'], { env });
    expect(plain).toMatchObject({ exitCode: 2, stdout: '' });
  });
});

describe('a refused key says where it came from', () => {
  it('--key, PASARELA_KEY, or the saved profile (with its file)', async () => {
    const l = await linkedLine(s);
    const bad = `WAC_${l.clienteId}_wrongwrongwrongwrongwrong`;
    const [flag, env] = await Promise.all([cli.run(['info', '--key', bad]), cli.run(['info'], { env: { PASARELA_KEY: bad } })]);
    expect(flag).toMatchObject({ exitCode: 3, stderr: 'error: invalid credential (the key from --key)\n' });
    expect(env).toMatchObject({ exitCode: 3, stderr: 'error: invalid credential (the key from PASARELA_KEY)\n' });
    expect((await cli.run(['config', 'set', 'key', bad, '--profile', 'viejo'])).exitCode).toBe(0);
    const profile = await cli.run(['info', '--profile', 'viejo']);
    expect(profile.exitCode).toBe(3);
    expect(profile.stderr).toContain(`invalid credential (the key saved in profile "viejo" (${cli.configFile})`);
    // --json: the server's body on stdout as before.
    const j = await cli.run(['info', '--key', bad, '--json']);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: false, api_codigo: 200 });
    // A good key is not blamed for another refusal (403 on a client-key action).
    const forbidden = await cli.run(['celular', 'create', mobile(), '--key', l.celularKey]);
    expect(forbidden.exitCode).toBe(3);
    expect(forbidden.stderr).not.toContain('the key from');
  });
});

describe('a media URL that cannot be used names its host', () => {
  it('HTTP 404 and a refused connection: the host (and port) are in the message', async () => {
    const l = await linkedLine(s, { saldo: 100 });
    const env = { PASARELA_KEY: l.celularKey };
    const host = new URL(media.base).host;
    const missing = await cli.run(['send', 'image', mobile(), `${media.base}/no-such.png`], { env });
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain(`media URL at ${host} is not reachable (HTTP 404)`);
    const refused = await cli.run(['send', 'image', mobile(), 'http://127.0.0.1:1/x.png'], { env });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('media URL at 127.0.0.1:1 is not reachable (connection refused)');
  });
});

describeWith(postgres, 'send bulk on PostgreSQL', () => {
  it('the dry run reads the line from the server; a rerun marks every replayed row (PostgreSQL)', async () => {
    const sch = await pgSchema();
    const pg = await startTestServer({ store: new URL(schemaUrl(sch.schema)).toString(), queue: { gapMinMs: 0, gapMaxMs: 0 } });
    const pcli = new Cli(pg.url, injectTransport(pg.app));
    try {
      const l = await linkedLine(pg, { saldo: 100 });
      const env = { PASARELA_KEY: l.celularKey };
      const path = join(pcli.home, 'pg.csv');
      writeFileSync(path, ['destinatario,nombre', `${mobile()},Ana`, '5523456789,Nacional', '52155987651100,Bad'].join('\n') + '\n');
      const dry = await pcli.run(['send', 'bulk', path, '--text', 'Hola {nombre}', '--dry-run'], { env });
      const byRow = (out: string) => ndjson(out).sort((a, b) => Number(a.row) - Number(b.row));
      expect(byRow(dry.stdout).map((x) => x.ok)).toEqual([true, true, false]);
      const first = await pcli.run(['send', 'bulk', path, '--text', 'Hola {nombre}'], { env });
      expect(byRow(first.stdout).map((x) => [x.ok, 'replayed' in x])).toEqual([
        [true, false],
        [true, false],
        [false, false],
      ]);
      const again = await pcli.run(['send', 'bulk', path, '--text', 'Hola {nombre}'], { env });
      const rows = byRow(again.stdout);
      expect(rows.map((x) => [x.ok, x.replayed ?? false])).toEqual([
        [true, true],
        [true, true],
        [false, false],
      ]);
      expect((await pg.core.store.listMensajes({ cliente_id: l.clienteId, page: 1, por_pagina: 1 })).total).toBe(2);
    } finally {
      pcli.cleanup();
      await pg.stop();
      await sch.drop();
    }
  });
});
