import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/core/clock.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { link, linkedLine, numeroNuevo, type Line } from '../server/send-helpers.js';
import { Cli, cliCommandLine, ESC, HAS_SCRIPT, tempDir } from './helpers.js';

/**
 * `pasarela recibidos` through the built CLI against a real server whose lines
 * received messages through the simulator: every format, --all across pages,
 * filters passed through, csv quoting, hostile texts on a terminal, exit codes.
 */

const H = 3_600_000;
const S1 = '525512345678';
const S2 = '14155552671';
const TRICKY = 'Hola, "amigo"\nsegunda línea, con coma';
/** What anyone may write to a line: a colour code, a window-title sequence, a C1 control, a right-to-left override. */
const HOSTILE = `pago \u001b[31mrojo\u001b]0;titulo\u0007 \u009b2J \u202etxt.exe`;
const FORMULA = '=HYPERLINK("http://evil","clic")';

interface Seed {
  gid: string;
  seq: number;
  celular_id: number;
  de: string;
  at: number;
}

let s: TestServer;
let cli: Cli;
let A: Line;
let a2: Line;
const seeds: Seed[] = [];

async function receive(line: Line, de: string, at: number, texto: string): Promise<void> {
  (s.clock as ManualClock).set(at);
  const r = await api(s.url, 'POST', '/admin/sim/receive', { key: s.adminToken, json: { celular_id: line.celularId, de, texto } });
  expect(r.status, r.text).toBe(200);
  seeds.push({ gid: r.body.gateway_msg_id, seq: seeds.length, celular_id: line.celularId, de: r.body.de, at });
}

/** Newest first, like the server. */
function expected(f: (x: Seed) => boolean = () => true): string[] {
  return seeds
    .filter(f)
    .sort((x, y) => y.at - x.at || y.seq - x.seq)
    .map((x) => x.gid);
}

const ndjson = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const gids = (records: Array<Record<string, unknown>>) => records.map((m) => m.gateway_msg_id as string);

beforeAll(async () => {
  s = await startTestServer({ tz: 'UTC', inboxPurgeIntervalMs: 0, healthIntervalMs: 0 });
  cli = new Cli(s.url);
  A = await linkedLine(s);
  const r = await api(s.url, 'POST', '/api/celular_crear.php', { key: A.clientKey, json: { numero: numeroNuevo() } });
  expect(r.status, r.text).toBe(201);
  a2 = { ...A, celularId: r.body.celular_id, celularKey: r.body.api_key };
  await link(s, a2);
  // 120 messages, one every 17 hours back from 2026-03-10, to both lines from two senders; then three odd texts.
  const end = Date.UTC(2026, 2, 10);
  for (let i = 0; i < 120; i += 1) await receive(i % 3 === 0 ? a2 : A, i % 4 === 0 ? S2 : S1, end - (120 - i) * 17 * H, `mensaje ${i}`);
  await receive(A, S1, end + H, FORMULA);
  await receive(A, S2, end + 2 * H, HOSTILE);
  await receive(A, S1, end + 3 * H, TRICKY);
});
afterAll(async () => {
  cli?.cleanup();
  await s?.stop();
});

describe('pasarela recibidos on a terminal', () => {
  it.skipIf(!HAS_SCRIPT)(
    "the table has a header and the page line; a sender's control characters and bidi override are shown escaped, never obeyed",
    async () => {
      const r = await cli.spawnTty(cliCommandLine(['recibidos', '--por-pagina', '3']), { env: { PASARELA_KEY: A.clientKey, NO_COLOR: '1' } });
      expect(r.exitCode).toBe(0);
      const out = String(r.stdout);
      expect(out).toMatch(/RECIBIDO.*ID.*CELULAR.*DE.*TIPO.*TEXTO/);
      expect(out).toMatch(/page 1\/41, 123 total/);
      expect(out).toContain('pago \\u001b[31mrojo');
      expect(out).not.toContain(ESC);
      expect(out).not.toContain('\u202e');
      expect(out).not.toContain('\u009b');
    },
  );

  it.skipIf(!HAS_SCRIPT)('ndjson and csv to a terminal escape them too; to a file the ndjson values are exact', async () => {
    for (const format of ['ndjson', 'csv']) {
      const r = await cli.spawnTty(cliCommandLine(['recibidos', '--por-pagina', '3', '--format', format]), { env: { PASARELA_KEY: A.clientKey } });
      expect(r.exitCode).toBe(0);
      const out = String(r.stdout);
      expect(out, format).toContain('\\u202etxt.exe');
      expect(out, format).not.toContain('\u202e');
      expect(out, format).not.toContain('\u009b');
      expect(out.replace(/\u001b\[[0-9;]*m/g, ''), format).not.toContain(ESC);
    }
    const dir = tempDir();
    const file = join(dir, 'out.ndjson');
    const r = await cli.spawnTty(`${cliCommandLine(['recibidos', '--all', '--por-pagina', '50', '--format', 'ndjson'])} > '${file}'`, {
      env: { PASARELA_KEY: A.clientKey },
    });
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout)).toMatch(/page 3\/3/);
    const recs = ndjson(readFileSync(file, 'utf8'));
    expect(gids(recs)).toEqual(expected());
    expect(recs[1]!.texto).toBe(HOSTILE);
  });
});
